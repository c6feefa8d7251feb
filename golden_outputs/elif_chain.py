def elif_chain(x):
    s = x.sum()
    y = _jst.undefined('y')

    def __true_fn_2(y):
        y = x * 1
        return y

    def __false_fn_2(y):
        y = _jst.undefined('y')

        def __true_fn_1(y):
            y = x * 2
            return y

        def __false_fn_1(y):
            y = _jst.undefined('y')

            def __true_fn_0(y):
                y = x * 3
                return y

            def __false_fn_0(y):
                y = x * 4
                return y
            y = _jst.convert_ifelse(s > -1, __true_fn_0, __false_fn_0, (y,), ('y',))
            return y
        y = _jst.convert_ifelse(s > 0, __true_fn_1, __false_fn_1, (y,), ('y',))
        return y
    y = _jst.convert_ifelse(s > 1, __true_fn_2, __false_fn_2, (y,), ('y',))
    return y
