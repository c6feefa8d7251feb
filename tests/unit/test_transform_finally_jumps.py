"""FinallyJumps: a `finally` that jumps holds the exception in flight until it has run."""
from transpiler.transforms.finally_jumps import FinallyJumps

from transform_pictures import dedent, picture


def test_a_return_in_finally_holds_the_exception():
    """The module doc's picture."""
    before = """
        def f(x):
            try:
                y = risky(x)
            finally:
                return x + 1
    """
    assert picture(before, FinallyJumps) == dedent("""
        def f(x):
            __pending_0 = None
            try:
                y = risky(x)
            except BaseException as __exc_0:
                __pending_0 = __exc_0
            finally:
                return x + 1
            if __pending_0 is not None:
                raise __pending_0
    """)


def test_a_finally_without_a_jump_is_left_as_written():
    """Nothing to hold: the try stays."""
    before = """
        def f(x):
            try:
                y = risky(x)
            finally:
                x = x + 1
            return y
    """
    assert picture(before, FinallyJumps) == dedent("""
        def f(x):
            try:
                y = risky(x)
            finally:
                x = x + 1
            return y
    """)
