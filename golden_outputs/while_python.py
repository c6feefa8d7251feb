def while_python(x):
    i = 0

    def __while_cond_0(i, x):
        return i < 3

    def __while_body_0(i, x):
        x = x + i
        i += 1
        return i, x
    i, x = _jst.convert_while(__while_cond_0, __while_body_0, (i, x), ('i', 'x'))
    return x
