def ternary(x):
    return _jst.convert_ifexp(x.sum() > 0, lambda: x * 2, lambda: x / 2)
