"""InPlaceUpdates: in-place updates of local names become rebindings."""
from transpiler.transforms.lists import InPlaceUpdates

from transform_pictures import dedent, picture


def test_every_in_place_update_rebinds_its_name():
    """The module doc's table, one statement each."""
    before = """
        def f(x, i):
            xs = []
            xs.append(x)
            x[i] = 1.0
            x[i] += 2.0
            c = {}
            c[0][i] = x
            v = xs.pop()
            del xs[i]
            x.add_(x, alpha=2)
            x.stop_gradient = True
            return xs[0]
    """
    assert picture(before, InPlaceUpdates) == dedent("""
        def f(x, i):
            xs = []
            xs = _jst.convert_append(xs, x)
            x = _jst.convert_setitem(x, i, 1.0)
            x = _jst.convert_setitem(x, i, x[i] + 2.0)
            c = {}
            c = _jst.convert_setitem_path(c, (0,), i, x)
            xs, v = _jst.convert_pop(xs)
            xs = _jst.convert_delitem(xs, i)
            x = _jst.convert_in_place(x, 'add_', x, alpha=2)
            x = _jst.convert_stop_gradient(x, True)
            return _jst.convert_getitem(xs, 0)
    """)


def test_pops_inside_statements_and_unpacked_item_targets():
    """A pop inside a statement runs first; item targets of an unpacking are stored left to right."""
    before = """
        def f(xs, s, a):
            xs.insert(0, s)
            xs.pop()
            s += xs.pop(1)
            n, a[0] = g()
            return f(xs)[1:2]
    """
    assert picture(before, InPlaceUpdates) == dedent("""
        def f(xs, s, a):
            xs = _jst.convert_insert(xs, 0, s)
            xs = _jst.convert_pop(xs)[0]
            xs, __pop_0 = _jst.convert_pop(xs, 1)
            s += __pop_0
            __item_0, __item_1 = g()
            n = __item_0
            a = _jst.convert_setitem(a, 0, __item_1)
            return f(xs)[1:2]
    """)


def test_a_global_container_is_mutated_as_written():
    """Only local names are rebound."""
    before = """
        def f(x):
            log.append(x)
            return x
    """
    assert picture(before, InPlaceUpdates) == dedent("""
        def f(x):
            log.append(x)
            return x
    """)
