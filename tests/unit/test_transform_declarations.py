"""Declarations: `global`/`nonlocal` hoisted to the top of the function, nested defs left alone."""
from transpiler.transforms.declarations import Declarations

from transform_pictures import dedent, picture


def test_a_global_in_a_branch_moves_to_the_top():
    """A branch body becomes a nested function later: its declaration must not stay in it."""
    before = """
        def f(x):
            if x:
                global n
                n = 1
            def g():
                nonlocal m
            return x
    """
    assert picture(before, Declarations) == dedent("""
        def f(x):
            global n
            if x:
                n = 1

            def g():
                nonlocal m
            return x
    """)
