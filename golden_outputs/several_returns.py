def several_returns(x):
    s = x.sum()
    return _jst.convert_ifexp(s > 2, lambda: x + 2, lambda: _jst.convert_ifexp(s > 0, lambda: x + 1,
        lambda: _jst.convert_ifexp(s > -2, lambda: x - 1, lambda: x - 2, name='__return_value'), name='__return_value'),
        name='__return_value')
