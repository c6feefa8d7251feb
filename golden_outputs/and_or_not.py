def and_or_not(x):
    y = _jst.undefined('y')

    def __true_fn_0(y):
        y = x + 10
        return y

    def __false_fn_0(y):
        y = x - 10
        return y
    y = _jst.convert_ifelse(_jst.convert_test_or(_jst.convert_test_and(x.sum() > 0, lambda: x.max() < 5),
        lambda: _jst.convert_logical_not(x.min() > -5)), __true_fn_0, __false_fn_0, (y,), ('y',))
    return y
