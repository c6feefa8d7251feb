def tuple_outputs(x):
    a = _jst.undefined('a')
    b = _jst.undefined('b')

    def __true_fn_0(a, b):
        a, b = x + 1, x * 2
        return a, b

    def __false_fn_0(a, b):
        a, b = x - 1, x / 2
        return a, b
    a, b = _jst.convert_ifelse(x.sum() > 0, __true_fn_0, __false_fn_0, (a, b), ('a', 'b'))
    return a, b
