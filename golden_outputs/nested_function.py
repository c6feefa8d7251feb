def nested_function(x):
    scale = 3.0

    def helper(v):
        return _jst.convert_ifexp(v.sum() > 0, lambda: v * scale, lambda: v / scale, name='__return_value')
    return _jst.convert_call(helper)(x) + _jst.convert_call(helper)(-x)
