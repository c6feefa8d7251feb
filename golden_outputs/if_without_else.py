def if_without_else(x):
    y = x + 1

    def __true_fn_0(y):
        y = y * 3
        return y
    y = _jst.convert_ifelse(x.sum() > 0, __true_fn_0, None, (y,), ('y',))
    return y
