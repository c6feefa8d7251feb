def for_break(x):
    total = x[0] * 0
    __break_0 = False

    def __for_body_0(v, __break_0, total):
        __break_0 = _jst.convert_ifexp(total > 2, lambda: True, lambda: __break_0, name='__break_0')

        def __true_fn_0(total):
            total = total + v
            return total
        total = _jst.convert_ifelse(_jst.convert_logical_not(__break_0), __true_fn_0, None, (total,), ('total',))
        return __break_0, total
    __break_0, total = _jst.convert_for(x, __for_body_0, (__break_0, total), ('__break_0', 'total'), until='__break_0')
    return total
