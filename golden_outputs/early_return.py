def early_return(x):
    __return_value = _jst.return_placeholder()

    def __true_fn_0(__return_value):
        __return_value = x * 10
        return __return_value

    def __false_fn_0(__return_value):
        y = x - 1
        __return_value = y
        return __return_value
    __return_value = _jst.convert_ifelse(x.sum() > 0, __true_fn_0, __false_fn_0, (__return_value,), ('__return_value',))
    return __return_value
