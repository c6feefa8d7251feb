def for_continue(x):
    total = x[0] * 0

    def __for_body_0(v, total):
        __continue_0 = False
        __continue_0 = _jst.convert_ifexp(v < 0, lambda: True, lambda: __continue_0, name='__continue_0')

        def __true_fn_0(total):
            total = total + v
            return total
        total = _jst.convert_ifelse(_jst.convert_logical_not(__continue_0), __true_fn_0, None, (total,), ('total',))
        return total
    total = _jst.convert_for(x, __for_body_0, (total,), ('total',))
    return total
