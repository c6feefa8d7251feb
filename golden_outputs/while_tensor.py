def while_tensor(x):
    h = rt.tanh(x)
    i = 0

    def __while_cond_0(h, i):
        return _jst.convert_test_and(rt.sum(h) < 100, lambda: i < 10)

    def __while_body_0(h, i):
        h = h * 2
        i += 1
        return h, i
    h, i = _jst.convert_while(__while_cond_0, __while_body_0, (h, i), ('h', 'i'))
    return h, i
