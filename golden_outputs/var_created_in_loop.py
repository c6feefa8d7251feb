def var_created_in_loop(x):
    i = 0
    last = _jst.undefined('last')

    def __while_cond_0(i, last, x):
        return _jst.convert_test_and(x.sum() < 10, lambda: i < 6)

    def __while_body_0(i, last, x):
        last = x
        x = x + 1
        i += 1
        return i, last, x
    i, last, x = _jst.convert_while(__while_cond_0, __while_body_0, (i, last, x), ('i', 'last', 'x'))
    return last
