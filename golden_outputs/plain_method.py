def apply(self, x):
    return _jst.convert_ifexp(x.sum() > 0, lambda: x * self.factor, lambda: x, name='__return_value')
