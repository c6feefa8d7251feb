def for_break(x):
    total = x[0] * 0
    __break_0 = False

    def __for_body_0(v, __break_0, total):

        def __true_fn_0(__break_0):
            __break_0 = True
            return __break_0

        def __false_fn_0(__break_0):
            return __break_0
        __break_0 = _jst.convert_ifelse(total > 2, __true_fn_0,
            __false_fn_0, (__break_0,), ('__break_0',))

        def __true_fn_1(total):
            total = total + v
            return total

        def __false_fn_1(total):
            return total
        total = _jst.convert_ifelse(_jst.convert_logical_not(__break_0),
            __true_fn_1, __false_fn_1, (total,), ('total',))
        return __break_0, total

    def __for_test_0(__break_0, total):
        return _jst.convert_logical_not(__break_0)
    __break_0, total = _jst.convert_for(x, __for_body_0, (__break_0, total),
        ('__break_0', 'total'), __for_test_0)
    return total
