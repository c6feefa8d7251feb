"""ControlFlow: if/while/for become functions and one `_jst` call each (with transforms/state's places)."""
from transpiler.transforms.control_flow import ControlFlow

from transform_pictures import dedent, picture


def test_an_if_becomes_two_branch_functions():
    """The module doc's picture."""
    before = """
        def f(x):
            if x.mean() > 0:
                y = x * 2
            else:
                y = x - 1
            return y
    """
    assert picture(before, ControlFlow, analyzed=True) == dedent("""
        def f(x):
            y = _jst.undefined('y')

            def __true_fn_0(y):
                y = x * 2
                return y

            def __false_fn_0(y):
                y = x - 1
                return y
            y = _jst.convert_ifelse(x.mean() > 0, __true_fn_0, __false_fn_0, (y,), ('y',))
            return y
    """)


def test_a_python_test_stays_and_an_if_without_else_passes_none():
    """`b is not None` is Python's own if; a false branch with nothing to do is None."""
    before = """
        def f(x, b):
            if b is not None:
                x = x + b
            if x.sum() > 0:
                x = x * 2
            return x
    """
    assert picture(before, ControlFlow, analyzed=True) == dedent("""
        def f(x, b):
            if b is not None:
                x = x + b

            def __true_fn_0(x):
                x = x * 2
                return x
            x = _jst.convert_ifelse(x.sum() > 0, __true_fn_0, None, (x,), ('x',))
            return x
    """)


def test_a_while_carries_its_loop_variables():
    """Loop variables: names the body binds that are live."""
    before = """
        def f(x):
            i = 0
            while i < 3:
                x = x * 2
                i += 1
            return x
    """
    assert picture(before, ControlFlow, analyzed=True) == dedent("""
        def f(x):
            i = 0

            def __while_cond_0(i, x):
                return i < 3

            def __while_body_0(i, x):
                x = x * 2
                i += 1
                return i, x
            i, x = _jst.convert_while(__while_cond_0, __while_body_0, (i, x), ('i', 'x'))
            return x
    """)


def test_a_for_unpacks_its_item_in_the_body():
    """A tuple target is unpacked from one item parameter."""
    before = """
        def f(xs):
            s = 0
            for a, b in xs:
                s = s + a * b
            return s
    """
    assert picture(before, ControlFlow, analyzed=True) == dedent("""
        def f(xs):
            s = 0

            def __for_body_0(__item_0, s):
                a, b = __item_0
                s = s + a * b
                return s
            s = _jst.convert_for(xs, __for_body_0, (s,), ('s',))
            return s
    """)


def test_global_and_captured_names_stay_the_enclosing_scopes():
    """A global the body rebinds, and a name a closure reads, are set in their own scope first."""
    before = """
        def f(x):
            global n
            i = 0
            def via():
                return i
            while x.sum() > 0:
                n = n + via()
                i = i + 1
                x = x - 1
            return x
    """
    assert picture(before, ControlFlow, analyzed=True) == dedent("""
        def f(x):
            global n
            i = 0

            def via():
                return i

            def __while_cond_0(__i_0, __n_0, x):
                global n
                nonlocal i
                i = __i_0
                n = __n_0
                return x.sum() > 0

            def __while_body_0(__i_1, __n_1, x):
                global n
                nonlocal i
                i = __i_1
                n = __n_1
                n = n + via()
                i = i + 1
                x = x - 1
                return i, n, x
            i, n, x = _jst.convert_while(__while_cond_0, __while_body_0, (i, _jst.outer_value(lambda: n, 'n'), x),
                ('i', 'n', 'x'))
            return x
    """)


def test_an_attribute_written_in_a_branch_is_state():
    """transforms/state: the places written through objects, as one lambda."""
    before = """
        def f(self, x):
            if x > 0:
                self.n = self.n + 1
            return x
    """
    assert picture(before, ControlFlow, analyzed=True) == dedent("""
        def f(self, x):

            def __true_fn_0():
                self.n = self.n + 1
            _jst.convert_ifelse(x > 0, __true_fn_0, None, (), (), state=lambda: (_jst.attr_cell(self, 'n', 'self.n'),))
            return x
    """)


def test_a_handler_checks_what_it_caught_and_takes_partial_state():
    """A graph cannot catch: each handler first refuses a tensor region's raise."""
    before = """
        def f(x):
            try:
                y = g(x)
            except ValueError:
                y = x
            return y
    """
    assert picture(before, ControlFlow, analyzed=True) == dedent("""
        def f(x):
            try:
                y = g(x)
            except ValueError as __caught_0:
                _jst.check_caught(__caught_0)
                __partial_0 = _jst.partial_state(__caught_0)
                if 'y' in __partial_0:
                    y = __partial_0['y']
                y = x
            return y
    """)
