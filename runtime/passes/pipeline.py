"""The pass registry and the pipeline: which passes run, in what order, on a copy of the Program."""
PASSES = {}            # name -> function(program) -> program
DEFAULT_PIPELINE = ["strength_reduce", "fold", "licm", "hoist_gather_matmul", "fold_gather_addend", "cse", "dce",
                    "fuse_elementwise", "inplace"]


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
    program = program.clone()
    for name in names:
        program = PASSES[name](program)
    return program

