"""Expressions: and/or/not/ternaries/chained comparisons/in/comprehensions become `_jst` calls with thunks."""
from transpiler.transforms.expressions import Expressions

from transform_pictures import dedent, picture


def test_each_expression_of_the_module_doc():
    """The module doc's table; a value position names its target."""
    before = """
        def f(a, b, c):
            y = a and b
            z = not a
            w = a if c else b
            if a < g(b) < c:
                y = [e * 2 for e in b if e]
            return a in b
    """
    assert picture(before, Expressions, analyzed=True) == dedent("""
        def f(a, b, c):
            y = _jst.convert_logical_and(a, lambda: b, name='y')
            z = _jst.convert_logical_not(a)
            w = _jst.convert_ifexp(c, lambda: a, lambda: b, name='w')
            if _jst.convert_logical_and(a < (__compare_0 := g(b)), lambda: __compare_0 < c):
                y = _jst.convert_list_comp(b, lambda e: e, lambda e: e * 2, False)
            return _jst.convert_in(a, b)
    """)
