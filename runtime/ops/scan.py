"""The `scan` op: a loop over a static trip count that carries state and stacks per-iteration outputs.

    carry, ys = scan(*init, *xs, *closure; body_block, length, num_carry)

as `jax.lax.scan`: iteration i binds the body block's params to the carry and to `xs[j][i]`;
its results are the next carry (the first `num_carry`) and the values stacked into `ys`
(`ys[j][i]`). Added through the region door alone (`regions.py`): passes, codegen and
serialization know it only through its `ScanRegion`. The public function is `rt.scan`
(`runtime/scan.py`), its gradient `runtime/autodiff/scan.py`, its ONNX form a `Loop`
(`onnx_lowerings/scan.py`).
"""
from .control import lowered_by_executor
from .registry import OpDef, register
from .regions import Region, RegionError, Slot


class ScanRegion(Region):
    """One body block; params: carry then the scanned slices; results: next carry then the stacked values."""

    block_attrs = ("body_block",)
    attrs = ("length", "num_carry")
    loop = True

    @staticmethod
    def counts(op, body):
        """(carry, scanned inputs, stacked outputs) counts."""
        nc = op.attrs["num_carry"]
        return nc, len(body.params) - nc, len(body.results) - nc

    def own_count(self, op):
        nc, nx, _ = self.counts(op, self.blocks(op)[0])
        return nc + nx

    def own_slots(self, op):
        nc, nx, ny = self.counts(op, self.blocks(op)[0])
        return ([Slot(k, (k,), ((0, k),), ((0, k),)) for k in range(nc)] +
                [Slot(None, (nc + j,), ((0, nc + j),), (), stacked=True) for j in range(nx)] +
                [Slot(nc + j, (), (), ((0, nc + j),), stacked=True) for j in range(ny)])

    def first_blocks(self, op):
        return self.blocks(op) if op.attrs["length"] > 0 else []

    def body(self, op):
        return self.blocks(op)[0]

    def attrs_after_drop(self, op, kept):
        return dict(op.attrs, num_carry=sum(1 for s in kept if not s.stacked and not s.closure))

    def check(self, op, check_types):
        length, nc = op.attrs.get("length"), op.attrs.get("num_carry")
        for key, value in (("length", length), ("num_carry", nc)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise RegionError(f": attr {key!r} must be an int >= 0, not {str(value)[:40]!r}")
        (body,) = self.blocks(op)
        nx, ny = len(body.params) - nc, len(body.results) - nc
        if nx < 0 or ny < 0 or len(op.outputs) != nc + ny or len(op.inputs) < nc + nx:
            raise RegionError(f": carry and scanned values do not match ({nc} carried, {len(op.inputs)} inputs, "
                              f"{len(op.outputs)} outputs, {len(body.params)} body params, "
                              f"{len(body.results)} body results)")
        for x in op.inputs[nc:nc + nx]:
            shape = getattr(x, "static_shape", ())
            if not shape or shape[0] not in (length, -1):
                raise RegionError(f": scanned input {getattr(x, 'name', x)!r} must have {length} rows")
        for y in op.outputs[nc:]:
            if y.static_shape[:1] not in ((length,), (-1,)):
                raise RegionError(f": stacked output '{y.name}' must have {length} rows")

    def emit(self, gen, op, indent):
        """carry = init; `for i in range(length):` slices bound, body, carry = results, ys[i] = results.
        A stacked output of static shape is allocated before the loop, else at the first iteration."""
        (body,) = self.blocks(op)
        nc, nx, _ = self.counts(op, body)
        length = op.attrs["length"]
        carry = op.outputs[:nc]
        gen.assign(carry, op.inputs[:nc], indent)
        for param, out in zip(body.params[:nc], carry):
            gen.names[id(param)] = gen.name(out)          # the carry lives in the op's outputs
        late = []
        for y, out in zip(body.results[nc:], op.outputs[nc:]):
            dims = out.static_shape[1:]
            if -1 not in dims or length == 0:
                shape = (length,) + tuple(max(d, 0) for d in dims)
                gen.emit(indent, f"{gen.name(out)} = xp.empty({shape!r}, {out.dtype.name!r})", op)
            else:
                late.append((y, out))
        if length == 0:
            return
        step = gen.temp("step")
        gen.emit(indent, f"for {step} in range({length}):", op)
        start = len(gen.lines)
        gen.count_iteration(op, indent + 1)
        for param, xs in zip(body.params[nc:], op.inputs[nc:nc + nx]):
            gen.emit(indent + 1, f"{gen.name(param)} = {gen.value(xs)}[{step}]")
        gen.block(body, indent + 1)
        for y, out in late:
            gen.emit(indent + 1, f"if {step} == 0:")
            gen.emit(indent + 2, f"{gen.name(out)} = xp.empty(({length},) + tuple(getattr({gen.value(y)}, "
                                 f"'shape', ())), {out.dtype.name!r})")
        for y, out in zip(body.results[nc:], op.outputs[nc:]):       # before the carry moves on: a row
            gen.emit(indent + 1, f"{gen.name(out)}[{step}] = {gen.value(y)}", op)   # may be the carry itself
        gen.assign(carry, body.results[:nc], indent + 1)
        if len(gen.lines) == start:
            gen.emit(indent + 1, "pass")


SCAN = register(OpDef("scan", lowered_by_executor, None, num_outputs=-1, region=ScanRegion()))
