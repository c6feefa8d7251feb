"""Branches whose results nobody uses, and branches this call does not take (issue 24 §3).

The oracle is the same function run eagerly.
"""
import numpy as np
import pytest

import runtime as rt
import transpiler
from transpiler import InputSpec, to_static


def t(value):
    return rt.tensor(np.asarray(value, np.float32))


# --- a cond whose outputs all died, holding a list-growing while, in a while's condition -----------

def _grows_a_list_it_never_reads(s):
    if rt.sum(s) > 0:
        parts = []
        i = 0
        while i < rt.sum(s):
            parts.append(s * i)
            i += 1
    return rt.sum(s) > 1


def count_down(x):
    s = x
    while _grows_a_list_it_never_reads(s):
        s = s - 1
    return s


@pytest.mark.parametrize("data", [[3.0], [-2.0], [1.5]])
def test_dead_cond_with_a_growing_list_in_a_loop_condition_compiles_and_runs(data):
    np.testing.assert_array_equal(to_static(count_down)(t(data)).numpy(), count_down(t(data)).numpy())


def test_dead_cond_with_a_growing_list_in_a_loop_condition_exports(tmp_path):
    import importlib.util
    py_path, _ = transpiler.export_python(to_static(count_down), tmp_path / "m",
                                          input_spec=[InputSpec([1], "float32", "x")])
    spec = importlib.util.spec_from_file_location("dead_cond_module", py_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_array_equal(module.run(x=np.asarray([3.0], np.float32)), count_down(t([3.0])).numpy())
