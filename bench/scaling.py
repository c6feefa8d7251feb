"""Conversion scaling: functions of about 100, 300 and 1000 lines of nested tensor control
flow, timed from source to compiled Program (convert, then trace + passes + compile), in a
fresh process per size. Printing the converted source (`f.code`, done only on demand) is
reported separately.

Run as `python -m bench.scaling LINES`; prints one JSON line.
"""
import json
import os
import random
import sys
import tempfile
import time

SIZES = (100, 300, 1000)


def generate(lines, seed=0):
    """Source of `def big(x):` with about `lines` lines of nested if/while over tensors."""
    rng = random.Random(seed)
    body = ["a = x * 1.0", "b = x * 0.5"]
    loops = [0]

    def assign(pad):
        t = rng.choice("ab")
        o = "b" if t == "a" else "a"
        return pad + rng.choice([f"{t} = xp.tanh({t} * 1.1 + {o})", f"{t} = {t} - {o} * 0.25",
                                 f"{t} = {t} * 0.9 + x"])

    def cond():
        return rng.choice(["a.sum() > {c}", "b.mean() < {c}", "(a * b).sum() > {c}"]).format(
            c=round(rng.uniform(-1, 1), 2))

    def block(depth, pad, budget):
        out = []
        while len(out) < budget:
            r = rng.random()
            if depth >= 3 or r < 0.5:
                out.append(assign(pad))
            elif r < 0.8:
                inner = block(depth + 1, pad + "    ", rng.randint(2, 5))
                out += [f"{pad}if {cond()}:"] + inner
                if rng.random() < 0.5:
                    out += [f"{pad}else:"] + block(depth + 1, pad + "    ", rng.randint(1, 3))
            else:
                n = f"n{loops[0]}"
                loops[0] += 1
                out += [f"{pad}{n} = 0", f"{pad}while {cond()} and {n} < 3:", f"{pad}    {n} += 1"]
                out += block(depth + 1, pad + "    ", rng.randint(2, 5))
        return out

    while len(body) < lines - 2:
        body += block(0, "", 10)
    return "def big(x):\n" + "\n".join("    " + line for line in body) + "\n    return a + b\n"


def main(lines):
    lines = int(lines)
    from .pin import pin
    pin()
    import numpy as np
    import runtime as rt
    from transpiler import to_source, to_static
    from transpiler.api import convert_function
    source = "import runtime as xp\n\n\n" + generate(lines)
    n_lines = source.count("\n") - 3
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"big_{lines}.py")
        with open(path, "w") as f:
            f.write(source)
        sys.path.insert(0, tmp)
        module = __import__(f"big_{lines}")
        x = rt.tensor(np.linspace(-1, 1, 8).astype(np.float32))
        t0 = time.perf_counter()
        convert_function(module.big)                 # source -> converted code object
        t1 = time.perf_counter()
        static = to_static(module.big)
        program = static.get_program(x)              # trace + passes + compile
        t2 = time.perf_counter()
        to_source(module.big)                        # printing the converted source (f.code), done on demand
        t3 = time.perf_counter()
    print(json.dumps({"lines": n_lines, "convert_ms": (t1 - t0) * 1e3, "trace_compile_ms": (t2 - t1) * 1e3,
                      "total_ms": (t2 - t0) * 1e3, "print_source_ms": (t3 - t2) * 1e3,
                      "ops": sum(1 for _ in program.ops())}))


if __name__ == "__main__":
    main(sys.argv[1])
