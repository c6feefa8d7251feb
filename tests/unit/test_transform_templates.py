"""transforms/templates: generated code written as source with holes gives the same tree as built by hand."""
import gast
import pytest

from transpiler.transforms import templates
from transpiler.transforms.base import const, jst, load, store

from transform_pictures import text


def test_a_str_hole_is_a_name_in_the_context_where_it_stands():
    (made,) = templates.replace("name = _jst.convert_setitem(name, index, value)", name="x", index=load("i"),
                                value=const(3))
    by_hand = gast.Assign(targets=[store("x")], value=gast.Call(
        func=jst("convert_setitem"), args=[load("x"), load("i"), const(3)], keywords=[]), type_comment=None)
    assert gast.dump(made) == gast.dump(by_hand)
    assert not hasattr(made, "lineno") or made.lineno is None     # located by the caller


def test_a_node_hole_used_twice_is_copied_the_second_time():
    index = load("i")
    (made,) = templates.replace("x = a[index] + a[index]", index=index)
    first, second = made.value.left.slice, made.value.right.slice
    assert first is index and second is not index and gast.dump(second) == gast.dump(index)


def test_list_holes_splice_arguments_parameters_and_statements():
    made = templates.replace("def fn(params):\n    body\n    return f(args)", fn="__f_0", params=["a", "b"],
                             body=templates.replace("a = a + 1"), args=[load("a"), const(2)])
    assert text(made) == "def __f_0(a, b):\n    a = a + 1\n    return f(a, 2)\n"
    assert all(isinstance(p.ctx, gast.Param) for p in made[0].args.args)


def test_expression_and_a_template_parsed_once():
    call = templates.expression("_jst.outer_value(lambda: name, key)", name="n", key=const("n"))
    assert text([gast.Expr(value=call)]) == "_jst.outer_value(lambda: n, 'n')\n"
    again = templates.expression("_jst.outer_value(lambda: name, key)", name="m", key=const("m"))
    assert again is not call and again.args[0] is not call.args[0]      # every filling makes new nodes
    with pytest.raises(ValueError):
        templates.expression("a = 1\nb = 2")


def test_a_hole_the_template_lacks_is_an_error():
    with pytest.raises(ValueError, match=r"\['indx'\] are not in the template"):
        templates.replace("x = a[index]", indx=load("i"))
