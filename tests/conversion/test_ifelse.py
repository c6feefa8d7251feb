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


def _nested_item_set_in_a_branch(a):
    d = {"a": {"b": a}, "c": [[1, 2]]}
    inner, row = d["a"], d["c"][0]
    if a > 0:
        d["a"]["b"] = a * 2
        d["c"][0][1] = a
    return d, inner, row


def _nested_key_set_in_one_branch(a):
    x = {"a": {"a": a}}
    if x["a"]["a"] > 0:
        x["a"]["b"] = 1
    return x


@pytest.mark.parametrize("a", [1, -1])
def test_an_item_of_a_nested_container_set_in_a_branch_stays_on_that_path(a):
    """Each branch mutates its own copy of the containers inside too (the other path kept the true
    branch's write), and names sharing an inner container see the merged value, as in Python."""
    import numpy as np

    import runtime as rt
    from transpiler import to_static

    from .oracle import compare

    d, inner, row = to_static(_nested_item_set_in_a_branch)(rt.tensor(np.int32(a)))
    want_d, want_inner, want_row = _nested_item_set_in_a_branch(np.int32(a))
    compare([d["a"]["b"], d["c"][0], inner["b"], row], [want_d["a"]["b"], want_d["c"][0], want_inner["b"], want_row])


def test_a_nested_key_set_in_one_branch_only_is_an_error_naming_it():
    # AutoGraph's composite_names_in_control_flow_test if_imbalanced_nested: this returned the
    # true branch's key for every input
    import numpy as np

    import runtime as rt
    from runtime.errors import ControlFlowError
    from transpiler import to_static

    with pytest.raises(ControlFlowError, match=r"key 'b' of 'x\['a'\]' is set in the true branch only"):
        to_static(_nested_key_set_in_one_branch)(rt.tensor(np.int32(0)))


def _set_through_an_alias(a):
    d = {"a": {"b": a * 0}}
    inner = d["a"]
    if a > 0:
        inner["b"] = a
    return d


@pytest.mark.parametrize("a", [2, -2])
def test_an_item_set_in_a_branch_through_a_name_not_read_after_the_if(a):
    """`inner` is dead after the if, yet the dict it names is `d`'s: the write must reach `d` on
    the path that made it (it was dropped, or with a shallow copy kept on every path)."""
    import numpy as np

    import runtime as rt
    from transpiler import to_static

    got = to_static(_set_through_an_alias)(rt.tensor(np.int32(a)))
    assert int(got["a"]["b"]) == int(_set_through_an_alias(np.int32(a))["a"]["b"])
