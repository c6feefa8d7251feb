def while_continue(x):
    i = 0
    total = x * 0

    def __while_cond_0(i, total):
        return i < 6

    def __while_body_0(i, total):
        __continue_0 = False
        i += 1
        __continue_0 = _jst.convert_ifexp(_jst.convert_call((x * i).sum)() < 0, lambda: True, lambda: __continue_0,
            name='__continue_0')

        def __true_fn_0(total):
            total = total + x
            return total
        total = _jst.convert_ifelse(_jst.convert_logical_not(__continue_0), __true_fn_0, None, (total,), ('total',))
        return i, total
    i, total = _jst.convert_while(__while_cond_0, __while_body_0, (i, total), ('i', 'total'))
    return total
