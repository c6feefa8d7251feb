def python_range_tensor_break(x):
    __break_0 = False

    def __for_body_0(i, __break_0, x):

        def __true_fn_0(__break_0):
            __break_0 = True
            return __break_0

        def __false_fn_0(__break_0):
            return __break_0
        __break_0 = _jst.convert_ifelse(x.sum() > 10, __true_fn_0,
            __false_fn_0, (__break_0,), ('__break_0',))

        def __true_fn_1(x):
            x = x * 2
            return x

        def __false_fn_1(x):
            return x
        x = _jst.convert_ifelse(_jst.convert_logical_not(__break_0),
            __true_fn_1, __false_fn_1, (x,), ('x',))
        return __break_0, x

    def __for_test_0(__break_0, x):
        return _jst.convert_logical_not(__break_0)
    __break_0, x = _jst.convert_for(_jst.convert_range(5), __for_body_0, (
        __break_0, x), ('__break_0', 'x'), __for_test_0)
    return x
