def chained_compare(x):
    return _jst.convert_ifexp(_jst.convert_test_and(-1 < (__compare_0 := x.mean()), lambda: __compare_0 < 1),
        lambda: x * 0, lambda: x, name='__return_value')
