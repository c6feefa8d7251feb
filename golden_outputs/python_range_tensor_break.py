def python_range_tensor_break(x):
    __break_0 = False

    def __for_body_0(i, __break_0, x):
        __break_0 = _jst.convert_ifexp(x.sum() > 10, lambda: True, lambda: __break_0, name='__break_0')

        def __true_fn_0(x):
            x = x * 2
            return x
        x = _jst.convert_ifelse(_jst.convert_logical_not(__break_0), __true_fn_0, None, (x,), ('x',))
        return __break_0, x
    __break_0, x = _jst.convert_for(_jst.convert_range(5), __for_body_0, (__break_0, x), ('__break_0', 'x'),
        until='__break_0')
    return x
