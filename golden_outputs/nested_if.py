def nested_if(x):
    z = _jst.undefined('z')

    def __true_fn_1(z):
        y = _jst.undefined('y')

        def __true_fn_0(y):
            y = x - x.min()
            return y

        def __false_fn_0(y):
            y = x
            return y
        y = _jst.convert_ifelse(x.min() < 0, __true_fn_0, __false_fn_0, (y,), ('y',))
        z = y * 2
        return z

    def __false_fn_1(z):
        z = -x
        return z
    z = _jst.convert_ifelse(x.max() > 0, __true_fn_1, __false_fn_1, (z,), ('z',))
    return z
