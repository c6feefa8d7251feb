"""Fence: what cannot be converted is refused first, at the user's line, with a hint."""
import pytest

from transpiler.errors import ConversionError
from transpiler.transforms.fence import Fence
from transform_pictures import dedent, picture


@pytest.mark.parametrize("line, what", [("yield x", "generators"), ("await x", "async code")])
def test_generators_and_async_code_are_refused_at_their_line(line, what):
    source = f"def f(x):\n    y = x\n    {line}\n"
    with pytest.raises(ConversionError, match=what) as caught:
        picture(source, Fence)
    assert caught.value.lineno == 3 and caught.value.hint


def test_a_nested_generator_is_fenced_when_it_is_converted_itself():
    source = """
    def f(x):

        def gen():
            yield x
        return x
    """
    assert picture(source, Fence) == dedent(source)
