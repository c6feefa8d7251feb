"""A data-dependent model: a `while` whose trip count and an `if` whose branch depend on the data.

    python examples/control_flow.py

Prints the converted source (`f.code`), the traced Program (`str(program)`),
then runs the Program on a few inputs and checks it against plain Python.
"""
import numpy as np

import runtime as rt
from transpiler import InputSpec, to_static


@to_static(input_spec=[InputSpec([None, 4], "float32")])       # any batch size, one Program
def shrink_then_squash(x):
    """Halve x until its energy is at most 1 (at most 20 times), then squash it one way or the other."""
    steps = 0
    while rt.sum(x * x) > 1.0 and steps < 20:      # tensor condition: becomes a `while` op
        x = x * 0.5
        steps += 1
    if x.mean() > 0:                                # tensor condition: becomes a `cond` op
        y = rt.tanh(x)
    else:
        y = -x
    return y, steps


def main():
    print("=== converted source (shrink_then_squash.code) ===")
    print(shrink_then_squash.code)
    program = shrink_then_squash.get_program(InputSpec([None, 4], "float32"))
    print("=== Program for x: float32[None, 4] ===")
    print(program)
    print("op types:", ", ".join(sorted({op.type for op in program.ops()})))
    print()
    print("=== runs ===")
    eager = shrink_then_squash.rollback()                       # the original Python function
    for batch, scale in ((2, 3.0), (5, -0.1), (1, 40.0)):
        x = np.full((batch, 4), scale, np.float32)
        y, steps = shrink_then_squash(rt.tensor(x))
        y_eager, steps_eager = eager(rt.tensor(x))
        np.testing.assert_allclose(y.numpy(), y_eager.numpy(), rtol=1e-6)
        assert int(steps) == int(steps_eager)
        first = float(y.numpy()[0, 0])
        print(f"x = {scale:5.1f} everywhere, batch {batch}: steps = {int(steps):2d}, y[0, 0] = {first:+.6f} "
              "(same as eager)")
    print(f"traced signatures: {shrink_then_squash.cache_size}")


if __name__ == "__main__":
    main()
