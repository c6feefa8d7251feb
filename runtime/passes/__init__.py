"""Graph passes run on a copy of a Program before it is compiled.

The pipeline is an ordered list of named passes; `passes=` on the Executor
(or `to_static`) picks them: None = the default pipeline, [] = none. Each pass
takes a Program and returns an equivalent one; none may change a result.

The passes, one module each (their docstrings give the rules):
  strength_reduce      ops with a cheaper equivalent (x**2, x**3, x**4)      strength.py
  fold                 ops on constants evaluated at compile time             fold.py
  licm                 loop-invariant ops moved before their while op         licm.py
  hoist_gather_matmul  matmul(x[i], u) in a loop -> matmul(x, u)[i], hoisted  licm.py
  cse                  one op per distinct (type, inputs, attrs)              cse.py
  dce                  unused pure ops, cond/while outputs, loop state        dce.py
  fuse_elementwise     elementwise trees -> one fused_elementwise op          fusion.py
  inplace              elementwise results written into dying input buffers   inplace.py
"""
PASSES = {}            # name -> function(program) -> program
DEFAULT_PIPELINE = ["strength_reduce", "fold", "licm", "hoist_gather_matmul", "cse", "dce", "fuse_elementwise", "inplace"]


def register_pass(name):
    def wrap(fn):
        PASSES[name] = fn
        return fn
    return wrap


def resolve(passes):
    names = DEFAULT_PIPELINE if passes is None else list(passes)
    unknown = [n for n in names if n not in PASSES]
    if unknown:
        raise ValueError(f"unknown pass(es) {unknown}; available: {sorted(PASSES)}")
    return names


def pipeline_key(passes):
    return tuple(resolve(passes))


def run_passes(program, passes=None):
    names = resolve(passes)
    if not names:
        return program
    from ..serialization import clone_program
    program = clone_program(program)
    for name in names:
        program = PASSES[name](program)
    return program


from . import strength, fold, licm, cse, dce, fusion, inplace  # noqa: E402,F401  (register the passes)
