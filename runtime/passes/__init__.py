"""Graph passes run on a copy of a Program before it is compiled.

The pipeline is an ordered list of named passes; `passes=` on the Executor
(or `to_static`) picks them: None = the default pipeline, [] = none. Each pass
takes a Program and returns an equivalent one; none may change a result.
"""
PASSES = {}            # name -> function(program) -> program
DEFAULT_PIPELINE = []  # filled as passes land (issue: graph passes)


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
