def subscript_assign(x):
    x = _jst.convert_setitem(x, 0, x[1] * 2)
    x = _jst.convert_setitem(x, (slice(None, None, None), 1), 0)
    x = _jst.convert_setitem(x, 2, x[2] + 1)
    return x
