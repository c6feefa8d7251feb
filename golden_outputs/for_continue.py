def for_continue(x):
    total = x[0] * 0

    def __for_body_0(v, total):
        __continue_0 = False

        def __true_fn_0(__continue_0):
            __continue_0 = True
            return __continue_0

        def __false_fn_0(__continue_0):
            return __continue_0
        __continue_0 = _jst.convert_ifelse(v < 0, __true_fn_0, __false_fn_0,
            (__continue_0,), ('__continue_0',))

        def __true_fn_1(total):
            total = total + v
            return total

        def __false_fn_1(total):
            return total
        total = _jst.convert_ifelse(_jst.convert_logical_not(__continue_0),
            __true_fn_1, __false_fn_1, (total,), ('total',))
        return total
    total = _jst.convert_for(x, __for_body_0, (total,), ('total',))
    return total
