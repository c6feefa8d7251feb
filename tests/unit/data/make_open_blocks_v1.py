"""Save, with dy2static at b52a1cd (open blocks, format version 1), a Program whose nested blocks read
enclosing values by name: tests/unit/test_serialization.py loads it with the closed-block reader."""
import sys
import numpy as np
import runtime as rt

W = rt.tensor(np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3))


def model(x):
    b = rt.sum(x, axis=0)
    def cond(h, i):
        return i < 3
    def body(h, i):
        h = rt.cond(rt.sum(h) > 0, lambda: rt.tanh(h @ W) + b, lambda: h * 0.5 - x)
        return h, i + 1
    h, i = rt.while_loop(cond, body, (x, rt.zeros((), "int64")))
    s, ys = rt.scan(lambda c, r: (c + r * b, c * 2.0), rt.zeros((3,), "float32"), h)
    return h, s, ys


program, _, _ = rt.trace(model, [rt.InputSpec([4, 3], "float32", "x")])
print(program)
from runtime.deploy import save_program
save_program(program, sys.argv[1])
