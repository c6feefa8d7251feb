def while_else(x):
    i = 0
    __break_0 = False

    def __while_cond_0(__break_0, i, x):
        return _jst.convert_test_and(_jst.convert_logical_not(__break_0),
            lambda: _jst.convert_test_and(x.sum() < 30, lambda: i < 20))

    def __while_body_0(__break_0, i, x):
        x = x + 1
        i += 1
        __break_0 = _jst.convert_ifexp(x.max() > 10, lambda: True, lambda: __break_0, name='__break_0')
        return __break_0, i, x
    __break_0, i, x = _jst.convert_while(__while_cond_0, __while_body_0, (__break_0, i, x), ('__break_0', 'i', 'x'))

    def __true_fn_0(x):
        x = x + 1000
        return x
    x = _jst.convert_ifelse(_jst.convert_logical_not(__break_0), __true_fn_0, None, (x,), ('x',))
    return x
