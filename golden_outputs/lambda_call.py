def lambda_call(x):
    g = lambda v: _jst.convert_ifexp(_jst.convert_call(v.sum)() > 0, lambda: v * 2, lambda: v * 3)
    return _jst.convert_call(g)(x)
