"""Returns: early returns become one return at the end."""
from transpiler.transforms.returns import Returns

from transform_pictures import dedent, picture


def test_an_early_return_moves_the_rest_into_else():
    """The module doc's picture."""
    before = """
        def f(x):
            if x.sum() > 0:
                z = x * 2
                return z
            y = -x
            return y
    """
    assert picture(before, Returns) == dedent("""
        def f(x):
            __return_value = _jst.return_placeholder()
            if x.sum() > 0:
                z = x * 2
                __return_value = z
            else:
                y = -x
                __return_value = y
            return __return_value
    """)


def test_guarded_returns_fold_into_a_ternary():
    """`if c: return a` then `return b` is `return a if c else b`."""
    before = """
        def f(x):
            if x.sum() > 0:
                return x
            return -x
    """
    assert picture(before, Returns) == dedent("""
        def f(x):
            return x if x.sum() > 0 else -x
    """)
