"""Jumps: break and continue become flags."""
from transpiler.transforms.jumps import Jumps

from transform_pictures import dedent, picture


def test_a_break_becomes_a_flag_in_the_loop_test():
    """The module doc's picture (a guard that only sets the flag is one expression)."""
    before = """
        def f(x):
            while x.sum() > 1:
                if x.max() > 9:
                    break
                x = x / 2
            return x
    """
    assert picture(before, Jumps) == dedent("""
        def f(x):
            __break_0 = False
            while not __break_0 and x.sum() > 1:
                __break_0 = True if x.max() > 9 else __break_0
                if not __break_0:
                    x = x / 2
            return x
    """)


def test_a_continue_guards_the_rest_of_the_body():
    """The flag is reset at the top of each iteration."""
    before = """
        def f(x):
            for i in range(3):
                if i == 1:
                    continue
                x = x + i
            return x
    """
    assert picture(before, Jumps) == dedent("""
        def f(x):
            for i in range(3):
                __continue_0 = False
                __continue_0 = True if i == 1 else __continue_0
                if not __continue_0:
                    x = x + i
            return x
    """)
