"""Program → the source of one Python function (a plan), and what running it needs.

  generic.py      Codegen: every block inlined, kernels called (shared with runtime.export)
  fast.py         PlanCodegen: the executor's NumPy-fast forms (ops' `emit`, operators, bound globals)
  chains.py       a fused op on NumPy: ufunc calls into scratch buffers reused as values die
  cupy_fusion.py  a fused op on other backends: one `backend.fuse` kernel
  liveness.py     where a big value dies (the plan `del`s it there)
  feeds.py        fed values checked against the Program's inputs
  plan.py         Plan: compile, run, and errors located at the op and the user's line
"""
