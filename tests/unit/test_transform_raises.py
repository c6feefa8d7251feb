"""Raises: raise → `_jst.convert_raise`; f-strings of raise/assert/print formatted when the Program runs."""
from transpiler.transforms.raises import Raises

from transform_pictures import dedent, picture


def test_a_raise_and_its_f_string():
    """The module doc's picture (before ControlFlow: the if stays)."""
    before = """
        def f(x):
            if x.sum() > 1:
                raise ValueError(f"x is {x}")
            return x
    """
    assert picture(before, Raises, analyzed=True) == dedent("""
        def f(x):
            if x.sum() > 1:
                _jst.convert_raise(ValueError(_jst.convert_fstring(('x is ', ''), (x,), (-1,), ('',))))
            return x
    """)


def test_a_try_body_catches_and_assert_and_print_format_later():
    """A bare raise stays; the try body runs under `_jst.catching`."""
    before = """
        def f(x):
            try:
                y = g(x)
            except ValueError:
                raise
            assert x.sum() > 0, f"bad {x}"
            print(f"x={x}")
            return y
    """
    assert picture(before, Raises, analyzed=True) == dedent("""
        def f(x):
            try:
                with _jst.catching(lambda: (ValueError,)):
                    y = g(x)
            except ValueError:
                raise
            assert x.sum() > 0, _jst.convert_fstring(('bad ', ''), (x,), (-1,), ('',))
            print(_jst.convert_fstring(('x=', ''), (x,), (-1,), ('',)))
            return y
    """)
