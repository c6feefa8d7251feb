def if_python_flag(x, flag):

    def __true_fn_0(x):
        x = x + 1
        return x

    def __false_fn_0(x):
        x = x - 1
        return x
    x = _jst.convert_ifelse(flag, __true_fn_0, __false_fn_0, (x,), ('x',))
    return x
