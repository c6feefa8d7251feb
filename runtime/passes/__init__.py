"""Graph passes run on a copy of a Program before it is compiled.

The pipeline is an ordered list of named passes; `passes=` on the Executor
(or `to_static`) picks them: None = the default pipeline, [] = none. Each pass
takes a Program and returns an equivalent one. Results stay bit for bit the same,
except that `strength_reduce` (x**3 as x*x*x) and `hoist_gather_matmul` may differ
by an ulp (tests/unit/test_passes.py, EXACT); no pass reorders a float sum.

The passes, one module each (their docstrings give the rules):
  strength_reduce      ops with a cheaper equivalent (x**2, sigmoid, ...)     strength.py
  fold                 ops on constants evaluated at compile time             fold.py
  licm                 loop-invariant ops moved before their while op         licm.py
  hoist_gather_matmul  matmul(x[i], u) in a loop -> matmul(x, u)[i], hoisted  licm.py
  fold_gather_addend   p[i] + c in a loop -> (p + c)[i], hoisted               licm.py
  cse                  one op per distinct (type, inputs, attrs)              cse.py
  dce                  unused pure ops, cond/while outputs, loop state        dce.py
  fuse_elementwise     elementwise trees -> one fused_elementwise op          fusion.py
  inplace              elementwise results written into dying input buffers   inplace.py
"""
from . import strength, fold, licm, cse, dce, fusion, inplace  # noqa: F401  (each registers its pass)
from .pipeline import DEFAULT_PIPELINE, PASSES, pipeline_key, register_pass, resolve, run_passes  # noqa: F401
