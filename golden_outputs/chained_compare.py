def chained_compare(x):
    __return_value = _jst.return_placeholder()

    def __true_fn_0(__return_value):
        __return_value = x * 0
        return __return_value

    def __false_fn_0(__return_value):
        __return_value = x
        return __return_value
    __return_value = _jst.convert_ifelse(_jst.convert_test_and(-1 < (
        __compare_0 := x.mean()), lambda : __compare_0 < 1), __true_fn_0,
        __false_fn_0, (__return_value,), ('__return_value',))
    return __return_value
