"""Corpus cases for if/elif/else, nested ifs, Python-valued ifs (ControlFlow transform): converted result == NumPy oracle."""
import pytest

from .oracle import cases, check_case, ids

CASES = cases("ifelse")


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_matches_numpy_oracle(case):
    check_case(case)


class _Block:
    """`downsample` is a Layer or None, as in a ResNet block."""

    def __init__(self, downsample):
        self.downsample = downsample

    def forward(self, x):
        y = x * 2
        if self.downsample is not None:
            y = y + self.downsample(x)
        if not (x is None or self.downsample is None):
            y = y - 1
        return y


@pytest.mark.parametrize("downsample", [None, lambda v: v.sum() * 0.5], ids=["none", "layer"])
def test_a_python_valued_test_stays_a_plain_if(downsample):
    """`is`/`is not` (and not/and/or of them) give a Python bool whatever the operands: the `if` stays as written."""
    import numpy as np

    import runtime as rt
    from transpiler import to_source, to_static

    block = _Block(downsample)
    source = to_source(block.forward)
    assert "    if self.downsample is not None:\n" in source and "convert_ifelse" not in source, source
    x = np.arange(3, dtype=np.float32)
    want = x * 2 + (0 if downsample is None else x.sum() * 0.5 - 1)
    got = to_static(block.forward)(rt.tensor(x)).numpy()
    np.testing.assert_allclose(got, want)


def test_a_test_mixing_is_none_with_a_tensor_keeps_the_run_time_choice():
    from transpiler import to_source

    def f(x, y):
        if y is not None and x.sum() > 0:
            x = x + 1
        return x
    assert "_jst.convert_ifelse(" in to_source(f)
