"""The fast call: per traced signature, generated Python that checks the arguments and runs the plan.

A StaticFunction's steady-state call is this one generated function (see
`compile_fast_call`); whatever it does not handle returns MISS and takes
StaticFunction's general path.
"""
import math

import numpy as np

import runtime as rt
from runtime import pytree, tracing
from runtime.autodiff.static_call import call_record_class, draws_random, record_call, tape_signature
from runtime.autodiff.tape import GRAD_MODE
from runtime.codegen.plan import located as located_in_plan, wrap_output

from . import effects, guards

MISS = guards.MISS
_SCALARS = (bool, int, str, type(None))


def compile_fast_call(static, traced, args, key):
    """A function running `traced` for arguments of exactly this signature, or returning MISS.

    Generated per signature: a guard of identity and equality checks on the
    arguments (Tensors on the plan's backend with this shape and dtype, equal
    Python scalars, no trace being recorded in this thread, the layer's train/eval
    mode), the checks of `traced.guard` on the globals, closure cells and
    attributes the trace may have read (captured tensors are read from their
    places here), parameters still on the plan's backend, then the plan's
    function called directly. Anything else returns MISS and takes the general
    path, which decides, traces and raises exactly as before. None when the
    signature has arguments the guard does not handle (nests, arrays, other objects).
    """
    if traced.state.entries:
        return None     # places written through Python objects after each run: the general path
    if draws_random(traced.program):
        return None     # a backward() through it needs the generator state from before each run: the general path
    plan, program = traced.plan, traced.program
    backend = plan.backend
    ns = {"MISS": MISS, "STATE": tracing._state, "ACTIVE": tracing._active, "Tensor": rt.Tensor, "BE": backend,
          "FN": plan.fn, "PLAN": plan, "LOCATED": located_in_plan, "WRAP": wrap_output,
          "ND": type(backend.asarray(np.zeros(1))), "REBUILD": tracing.rebuild_outputs, "PROGRAM": program,
          "INST": static._instance, "COPYSIGN": math.copysign}
    lines = [f"if (ACTIVE[0] and STATE.blocks) or len(args) != {len(args)}:", "    return MISS"]
    feeds = []
    specs = static._input_spec
    for i, a in enumerate(args):
        if type(a) is rt.Tensor:
            n = len(feeds)
            spec = specs[n] if specs is not None and n < len(specs) else None
            shape = spec.shape if spec is not None else tuple(a.array.shape)
            ns[f"DT{i}"] = np.dtype(spec.dtype if spec is not None else a.array.dtype)
            lines += [f"a{i} = args[{i}]", f"if a{i}.__class__ is not Tensor or a{i}.backend is not BE:",
                      "    return MISS", f"d{i} = a{i}.array", f"s{i} = d{i}.shape"]
            if -1 in shape:
                dims = " or ".join(f"s{i}[{k}] != {d}" for k, d in enumerate(shape) if d != -1)
                test = f"len(s{i}) != {len(shape)}" + (f" or {dims}" if dims else "")
            else:
                test = f"s{i} != {shape!r}"
            lines += [f"if {test} or (d{i}.dtype is not DT{i} and d{i}.dtype != DT{i}):", "    return MISS"]
            feeds.append(f"d{i}")
        elif type(a) in _SCALARS:
            ns[f"V{i}"] = a
            lines += [f"if args[{i}].__class__ is not {type(a).__name__ if a is not None else 'type(None)'} "
                      f"or args[{i}] != V{i}:", "    return MISS"]
        elif type(a) is float and a == a:
            ns[f"V{i}"], ns[f"SIGN{i}"] = a, math.copysign(1.0, a)      # 0.0 == -0.0, yet 1/x differs
            lines += [f"if args[{i}].__class__ is not float or args[{i}] != V{i} "
                      f"or COPYSIGN(1.0, args[{i}]) != SIGN{i}:", "    return MISS"]
        else:
            return None
    if static._instance is not None and key[2] is not None:
        ns["TRAINING"] = key[2]
        lines += ["if getattr(INST, 'training', None) != TRAINING:", "    return MISS"]
    guard_lines, sources = traced.guard.code(ns)
    lines += guard_lines
    params = []
    for j, (t, source) in enumerate(zip(traced.param_tensors, sources)):
        ns[f"P{j}"] = t
        params.append(source or f"P{j}")
    if params:
        lines += ["if " + " or ".join(f"{p}.backend is not BE" for p in params) + ":", "    return MISS"]
    stores = []
    for j, (tensor, k, shape, dtype) in enumerate(traced.state.in_place):   # tensors the Program writes
        ns[f"WT{j}"], ns[f"WS{j}"], ns[f"WD{j}"] = tensor, shape, dtype
        lines += [f"if WT{j}.array.shape != WS{j} or WT{j}.array.dtype != WD{j} or WT{j}.backend is not BE:",
                  "    return MISS"]
        stores.append(f"WT{j}.array = outs[{k}] if outs[{k}].__class__ is ND else WRAP(outs[{k}], BE).array")
    ns["GEN"], ns["G0"] = effects.GENERATION, effects.GENERATION[0]
    lines += ["if GEN[0] != G0:", "    return MISS"]       # a write-back replaced a captured tensor
    lines += [f"p{j} = {p}.array" for j, p in enumerate(params)]     # the arrays this run reads
    feeds += [f"p{j}" for j in range(len(params))]
    lines += ["try:", f"    outs = FN({', '.join(feeds)})", "except Exception as e:",
              "    raise LOCATED(e, PLAN) from None"]
    lines += stores
    wrapped = [f"(Tensor(outs[{k}], BE) if outs[{k}].__class__ is ND else WRAP(outs[{k}], BE))"
               for k in range(len(program.outputs))]
    sources = [] if traced.writes_parameters else [f"a{i}" for i, a in enumerate(args) if type(a) is rt.Tensor] + params
    if sources:     # some input may require grad: the call goes on the tape (see runtime.autodiff.static_call)
        results = [f"result{k}" for k in range(len(program.outputs))]    # names, not a list: no list per call
        lines += [f"{r} = {w}" for r, w in zip(results, wrapped)]
        lines += _tape_lines(ns, program, backend, feeds, sources, results)
        wrapped = results
    tree = program.output_tree
    if not program.output_consts and tree == pytree.LEAF and len(wrapped) == 1:
        lines.append(f"return {wrapped[0]}")
    elif (not program.output_consts and tree.kind == "tuple" and len(tree.children) == len(wrapped)
          and all(c == pytree.LEAF for c in tree.children)):
        lines.append(f"return ({', '.join(wrapped)}{',' if len(wrapped) == 1 else ''})")
    else:
        lines.append(f"return REBUILD(PROGRAM, [{', '.join(wrapped)}])")
    source = "def fast(args):\n" + "\n".join("    " + line for line in lines) + "\n"
    exec(compile(source, f"<dy2static call {static._fn.__qualname__}>", "exec"), ns)
    ns["fast"].generation = ns["G0"]
    return ns["fast"]


def _tape_lines(ns, program, backend, feeds, sources, results):
    """Lines putting this run on the tape when grad mode is on and some float input tracks a gradient.

    A Program with one float output gets one `CallOutputRecord` (record and slot in one object: an
    object and three stores, with the keys tested inline); any other goes through `record_call`. Either
    keeps the arrays fed (`feeds`, read before the run's writes) and the inputs' keys, nothing else: the
    backward Program is found when backward() reaches the record."""
    opdef, float_inputs, float_outputs = signature = tape_signature(program)
    if not float_inputs or not float_outputs:
        return []
    if len(program.outputs) != 1 or program.outputs[0].kind != "dense":
        ns["GRAD"], ns["RECORD"], ns["SIGNATURE"], ns["PROGRAM"] = GRAD_MODE, record_call, signature, program
        tracked = " or ".join(f"{sources[i]}._ag is not None" for i in float_inputs)
        return [f"if ({tracked}) and GRAD.enabled:",
                f"    RECORD(PROGRAM, [{', '.join(feeds)}], [{', '.join(sources)}], [{', '.join(results)}], BE, "
                "None, SIGNATURE)"]
    ns["GRAD"], ns["NEW"], ns["REC"] = GRAD_MODE, object.__new__, call_record_class(program, backend)
    lines = ["if GRAD.enabled:"]
    keys = ["None"] * len(feeds)
    for i in float_inputs:       # a key that tracks nothing (a .grad set on a constant) is no key
        keys[i] = f"k{i}"
        lines += [f"    k{i} = {sources[i]}._ag",
                  f"    if k{i} is not None and not k{i}.requires and k{i}.record is None:", f"        k{i} = None"]
    tracked = " or ".join(f"k{i} is not None" for i in float_inputs)
    lines += [f"    if {tracked}:",
              "        rec = NEW(REC)",
              f"        rec.saved = [{', '.join(feeds + keys)}]",
              f"        rec.results = {results[0]}.array",
              "        rec.grad = None",
              f"        {results[0]}._ag = rec"]
    return lines
