"""WalrusOperands: an and/or whose later operand binds a name with a walrus becomes statements."""
from transpiler.transforms.walrus import WalrusOperands

from transform_pictures import dedent, picture


def test_an_and_value_becomes_statements():
    """`y = a and (m := g())`: m is bound only when a is true, as in Python."""
    before = """
        def f(a):
            y = a and (m := g())
            return y
    """
    assert picture(before, WalrusOperands) == dedent("""
        def f(a):
            __walrus_0 = a
            if __walrus_0:
                __walrus_0 = (m := g())
            y = __walrus_0
            return y
    """)


def test_an_and_test_becomes_nested_ifs():
    """`if a and (m := g()) > 1:` nests the second test under the first."""
    before = """
        def f(a):
            if a and (m := g()) > 1:
                a = m
            return a
    """
    assert picture(before, WalrusOperands) == dedent("""
        def f(a):
            if a:
                if (m := g()) > 1:
                    a = m
            return a
    """)
