def if_else(x):
    y = _jst.undefined('y')

    def __true_fn_0(y):
        y = x * 2
        return y

    def __false_fn_0(y):
        y = x - 1
        return y
    y = _jst.convert_ifelse(x.mean() > 0, __true_fn_0, __false_fn_0, (y,), ('y',))
    return y
