def nested_function(x):
    scale = 3.0

    def helper(v):
        __return_value = _jst.return_placeholder()

        def __true_fn_0(__return_value):
            __return_value = v * scale
            return __return_value

        def __false_fn_0(__return_value):
            __return_value = v / scale
            return __return_value
        __return_value = _jst.convert_ifelse(v.sum() > 0, __true_fn_0,
            __false_fn_0, (__return_value,), ('__return_value',))
        return __return_value
    return _jst.convert_call(helper)(x) + _jst.convert_call(helper)(-x)
