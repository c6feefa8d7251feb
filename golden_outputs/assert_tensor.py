def assert_tensor(x):
    y = rt.abs(x) + 1
    _jst.convert_assert(y.min() > 0, lambda: 'y must be positive')
    return y
