"""A chain of n elementwise ops costs work linear in n from source to first result (issue 27: 4000 ops in
≤ 0.5 s; `python -m bench.pass_scaling --first-call` times it). The work is counted, not timed: Python
function calls (cProfile's count, the same on every machine) of converting the source and of tracing,
optimizing, compiling and running it, at n and 4n ops."""
import cProfile
import importlib.util
import pstats

import numpy as np
import pytest

import runtime as rt
from bench.pass_scaling import chain_source
from runtime import passes
from runtime.codegen.plan import compile_plan
from transpiler.conversion import convert_function

SPEC = [rt.InputSpec([8, 8], "float32", "x")]
X = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)


def _chain(tmp_path, n, form):
    path = tmp_path / f"chain_{form}_{n}.py"
    path.write_text(chain_source(n, form))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.chain


def _calls(fn, *args):
    profile = cProfile.Profile()
    profile.enable()
    try:
        result = fn(*args)
    finally:
        profile.disable()
    return pstats.Stats(profile).total_calls, result


def _first_result(converted):
    program, _, _ = rt.trace(converted, SPEC)
    return compile_plan(passes.run_passes(program), rt.Executor().backend)(X)[0]


@pytest.mark.parametrize("form", ["mixed_lines", "mixed_loop"])
def test_work_from_source_to_first_result_is_linear_in_the_op_count(tmp_path, form):
    _first_result(convert_function(_chain(tmp_path, 20, form)))        # imports and caches: paid once
    counts = {}
    for n in (250, 1000):
        fn = _chain(tmp_path, n, form)
        converting, converted = _calls(convert_function, fn)
        running, result = _calls(_first_result, converted)
        counts[n] = (converting, running)
        np.testing.assert_array_equal(result, fn(rt.tensor(X)).numpy())     # the same bits as eager
    (convert_small, run_small), (convert_big, run_big) = counts[250], counts[1000]
    assert convert_big <= 4.2 * convert_small, counts
    assert run_big <= 4.2 * run_small, counts


def test_tracing_promotes_dtypes_once_per_operand_types_not_once_per_op(tmp_path):
    """NumPy's result_type is asked per distinct (dtype, weak) operands, not per recorded op."""
    calls = {}
    for n in (250, 1000):
        converted = convert_function(_chain(tmp_path, n, "mixed_lines"))
        profile = cProfile.Profile()
        profile.enable()
        try:
            rt.trace(converted, SPEC)
        finally:
            profile.disable()
        stats = pstats.Stats(profile).stats
        calls[n] = sum(count for (filename, _, name), (count, *_) in stats.items()
                       if name == "result_type" and "numpy" in filename)
    assert calls[1000] <= calls[250] + 2, calls
