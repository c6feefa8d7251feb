def calls_user_function(x):
    return _jst.convert_call(_bounded_grow)(x, k=3) + _jst.convert_call(_bounded_grow)(x)
