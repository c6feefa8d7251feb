"""Calls: user functions converted when called, tensor-aware builtins, library calls left alone."""
from transpiler.transforms.calls import Calls

from transform_pictures import dedent, picture


def test_each_call_of_the_module_doc():
    """The module doc's table (rt and np resolve to the libraries)."""
    before = """
        def f(self, x, n):
            h = self.fc1(x)
            k = len(x)
            for i in range(n):
                h = h + int(i)
            print('h', h)
            assert h.sum() > 0, 'm'
            y = rt.tanh(x)
            a = np.asarray(h)
            return x.sum()
    """
    assert picture(before, Calls, analyzed=True) == dedent("""
        def f(self, x, n):
            h = _jst.convert_call(self.fc1)(x)
            k = _jst.convert_len(x)
            for i in _jst.convert_range(n):
                h = h + _jst.convert_int(i)
            _jst.convert_print('h', h)
            _jst.convert_assert(h.sum() > 0, lambda: 'm')
            y = rt.tanh(x)
            a = _jst.convert_call(np.asarray)(h)
            return x.sum()
    """)


def test_super_and_an_indexed_layer():
    """`super()` gets its explicit form; `self.fcs[i](x)` may pick a layer by a tensor."""
    before = """
        def forward(self, x):
            h = super().forward(x)
            return self.fcs[x](h)
    """
    assert picture(before, Calls, analyzed=True) == dedent("""
        def forward(self, x):
            h = _jst.convert_call(super(__class__, self).forward)(x)
            return _jst.convert_call_item(self.fcs, x)(h)
    """)
