def return_in_loop(x):
    __return_value = _jst.return_placeholder()
    __return_flag = False
    i = 0
    __break_0 = False

    def __while_cond_0(__break_0, __return_flag, __return_value, i, x):
        return _jst.convert_test_and(_jst.convert_logical_not(__break_0), 
            lambda : i < 10)

    def __while_body_0(__break_0, __return_flag, __return_value, i, x):
        x = x * 2

        def __true_fn_0(__break_0, __return_flag, __return_value, i):
            __return_value = x - 1
            __return_flag = True
            __break_0 = True
            return __break_0, __return_flag, __return_value, i

        def __false_fn_0(__break_0, __return_flag, __return_value, i):
            i += 1
            return __break_0, __return_flag, __return_value, i
        __break_0, __return_flag, __return_value, i = _jst.convert_ifelse(x
            .max() > 20, __true_fn_0, __false_fn_0, (__break_0,
            __return_flag, __return_value, i), ('__break_0',
            '__return_flag', '__return_value', 'i'))
        return __break_0, __return_flag, __return_value, i, x
    __break_0, __return_flag, __return_value, i, x = _jst.convert_while(
        __while_cond_0, __while_body_0, (__break_0, __return_flag,
        __return_value, i, x), ('__break_0', '__return_flag',
        '__return_value', 'i', 'x'))

    def __true_fn_1(__return_flag, __return_value):
        __return_value = x
        __return_flag = True
        return __return_value

    def __false_fn_1(__return_flag, __return_value):
        return __return_value
    __return_value = _jst.convert_ifelse(_jst.convert_logical_not(
        __return_flag), __true_fn_1, __false_fn_1, (__return_flag,
        __return_value), ('__return_value',))
    return __return_value
