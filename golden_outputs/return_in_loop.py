def return_in_loop(x):
    __return_value, __return_flag = _jst.return_placeholder(), False
    i = 0

    def __while_cond_0(__return_flag, __return_value, i, x):
        return _jst.convert_test_and(_jst.convert_logical_not(__return_flag), lambda: i < 10)

    def __while_body_0(__return_flag, __return_value, i, x):
        x = x * 2

        def __true_fn_0(__return_flag, __return_value, i):
            __return_value = x - 1
            __return_flag = True
            return __return_flag, __return_value, i

        def __false_fn_0(__return_flag, __return_value, i):
            i += 1
            return __return_flag, __return_value, i
        __return_flag, __return_value, i = _jst.convert_ifelse(x.max() > 20, __true_fn_0, __false_fn_0,
            (__return_flag, __return_value, i), ('__return_flag', '__return_value', 'i'))
        return __return_flag, __return_value, i, x
    __return_flag, __return_value, i, x = _jst.convert_while(__while_cond_0, __while_body_0,
        (__return_flag, __return_value, i, x), ('__return_flag', '__return_value', 'i', 'x'))
    return _jst.convert_ifexp(__return_flag, lambda: __return_value, lambda: x, name='__return_value')
