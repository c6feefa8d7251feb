def several_returns(x):
    __return_value = _jst.return_placeholder()
    s = x.sum()

    def __true_fn_2(__return_value):
        __return_value = x + 2
        return __return_value

    def __false_fn_2(__return_value):

        def __true_fn_1(__return_value):
            __return_value = x + 1
            return __return_value

        def __false_fn_1(__return_value):

            def __true_fn_0(__return_value):
                __return_value = x - 1
                return __return_value

            def __false_fn_0(__return_value):
                __return_value = x - 2
                return __return_value
            __return_value = _jst.convert_ifelse(s > -2, __true_fn_0,
                __false_fn_0, (__return_value,), ('__return_value',))
            return __return_value
        __return_value = _jst.convert_ifelse(s > 0, __true_fn_1,
            __false_fn_1, (__return_value,), ('__return_value',))
        return __return_value
    __return_value = _jst.convert_ifelse(s > 2, __true_fn_2, __false_fn_2,
        (__return_value,), ('__return_value',))
    return __return_value
