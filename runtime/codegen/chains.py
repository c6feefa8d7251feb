"""A fused op on NumPy: one ufunc call per step, results in scratch buffers reused as values die.

    buf = xp_multiply(x, 0.5)
    xp_add(buf, b, buf)              # s0 is dead after this step: its buffer takes s1
    y = xp_tanh(buf, buf)

A step of static shape writes into any dead buffer of its shape and dtype; one of
unknown shape only into a dying argument's buffer that broadcasting cannot grow.
With `into=k` (the `inplace` pass) input k's buffer is the first scratch buffer,
when the plan's own liveness agrees it is the plan's to overwrite. A step's number
that is exactly a value of the dtype it meets is a 0-d array of that dtype, made once.
"""
import numpy as np

from ..ops import fused as _fused
from .liveness import is_big, is_static


def fused_chain(gen, op, steps):
    """The plan's statements computing the fused op into its output."""
    specs = _fused.step_specs(op.inputs, steps)
    last_read = {}
    for j, step in enumerate(steps):
        for a in step[1:]:
            if isinstance(a, dict):
                last_read[tuple(*a.items())] = j
    into = op.attrs.get("into")
    if into is not None and gen.donations.get(id(op)) != into:
        into = None                     # not provably ours to overwrite: allocate instead
    buffers = []                        # [python name, shape, dtype, key of the value it holds]
    if into is not None:
        v = op.inputs[into]
        buffers.append([gen.value(v), v.static_shape, v.dtype, ("in", into)])
    names, lines = {}, []
    out = op.outputs[0]
    for j, step in enumerate(steps):
        fn = gen.bound(step[0])
        met = {_arg_dtype(b, op, specs) for b in step[1:] if isinstance(b, dict)}
        args = ", ".join(_number(gen, a, met) if _is_number(a) else gen.step_arg(a, op, names) for a in step[1:])
        spec = specs[j]
        shape, dtype = tuple(spec.shape), np.dtype(spec.dtype)
        target = None
        if -1 not in shape and len(shape) >= 1:
            for buf in buffers:
                if buf[1] == shape and buf[2] == dtype and last_read.get(buf[3], -1) <= j:
                    target = buf
                    break
        elif len(shape) >= 1:
            target = _dying_argument_buffer(step, j, shape, dtype, buffers, last_read, op, specs)
        last = j == len(steps) - 1
        if target is not None:
            target[3] = ("step", j)
            names[j] = target[0]
            out_arg = f"out={target[0]}" if step[0] in _fused.KEYWORD_OUT else target[0]
            lines.append(f"{gen.name(out) + ' = ' if last else ''}{fn}({args}, {out_arg})")
        else:
            name = gen.name(out) if last else gen.temp("buf")
            names[j] = name
            lines.append(f"{name} = {fn}({args})")
            if len(shape) >= 1:
                buffers.append([name, shape, dtype, ("step", j)])
    temps = [n for j, n in names.items() if n.startswith("buf") and n != gen.name(out)]
    temps = list(dict.fromkeys(temps))
    if temps and (is_big(out) or not is_static(out)):
        lines.append("del " + ", ".join(temps))    # the result keeps its buffer alive by its own name
    return lines


def _is_number(a):
    return isinstance(a, (int, float)) and not isinstance(a, bool)


def _arg_dtype(a, op, specs):
    (kind, k), = a.items()
    return np.dtype(op.inputs[k].dtype if kind == "in" else specs[k].dtype)


def _number(gen, a, met):
    """A step's number as a 0-d array of the one dtype it meets (made once): a ufunc takes it ~0.4 µs
    faster than a Python number, which it converts on every call. Only where the number is exactly a
    value of that dtype, so NEP 50's conversion of the weak number gives the same operand."""
    if len(met) == 1:
        (dtype,) = met
        if dtype.kind in "iuf":
            try:
                typed = np.asarray(a, dtype)
            except (OverflowError, ValueError):
                typed = None
            if typed is not None and typed.item() == a and (dtype.kind != "f" or np.isfinite(typed)):
                return gen.typed_constant(typed)
    return gen.value(a)


def _dying_argument_buffer(step, j, shape, dtype, buffers, last_read, op, specs):
    """A scratch buffer a step of unknown shape may write into, or None.

    Only the buffer of one of the step's own arguments that dies here, of the result's dtype
    and symbolic shape, and only where broadcasting cannot grow it: at every unknown dim the
    other arguments are 1 or absent. (Without this a chain over a dynamic batch allocated a
    fresh array per step where the unfused plan's in-place writes did not.)"""
    def arg_shape(a):
        if not isinstance(a, dict):
            return ()
        (kind, k), = a.items()
        return tuple(op.inputs[k].static_shape) if kind == "in" else tuple(specs[k].shape)

    refs = [tuple(*a.items()) for a in step[1:] if isinstance(a, dict)]
    for buf in buffers:
        if buf[3] not in refs or buf[1] != shape or buf[2] != dtype or last_read.get(buf[3], -1) > j:
            continue
        others = [arg_shape(a) for a in step[1:] if not (isinstance(a, dict) and tuple(*a.items()) == buf[3])]
        if all(len(o) <= len(shape) and all(o[i - len(shape)] == 1 for i in range(len(shape))
                                            if shape[i] == -1 and i - len(shape) >= -len(o))
               for o in others):
            return buf
    return None
