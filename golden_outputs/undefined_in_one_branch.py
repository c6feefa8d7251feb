def undefined_in_one_branch(x):
    y = _jst.undefined('y')

    def __true_fn_0(y):
        scratch = x * 2
        y = scratch + 1
        return y

    def __false_fn_0(y):
        y = x
        return y
    y = _jst.convert_ifelse(x.sum() > 0, __true_fn_0, __false_fn_0, (y,), ('y',))
    return y
