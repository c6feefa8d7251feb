def while_break(x):
    i = 0
    __break_0 = False

    def __while_cond_0(__break_0, i, x):
        return _jst.convert_test_and(_jst.convert_logical_not(__break_0), lambda: i < 8)

    def __while_body_0(__break_0, i, x):
        x = x * 1.5
        __break_0 = _jst.convert_ifexp(x.sum() > 50, lambda: True, lambda: __break_0, name='__break_0')

        def __true_fn_0(i):
            i += 1
            return i
        i = _jst.convert_ifelse(_jst.convert_logical_not(__break_0), __true_fn_0, None, (i,), ('i',))
        return __break_0, i, x
    __break_0, i, x = _jst.convert_while(__while_cond_0, __while_body_0, (__break_0, i, x), ('__break_0', 'i', 'x'))
    return x, i
