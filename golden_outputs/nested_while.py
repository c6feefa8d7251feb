def nested_while(x):
    i = 0
    total = x.sum() * 0

    def __while_cond_1(i, total):
        return _jst.convert_test_and(total < 50, lambda: i < 5)

    def __while_body_1(i, total):
        j = 0

        def __while_cond_0(j, total):
            return j < 3

        def __while_body_0(j, total):
            total = total + x.sum()
            j += 1
            return j, total
        j, total = _jst.convert_while(__while_cond_0, __while_body_0, (j, total), ('j', 'total'))
        i += 1
        return i, total
    i, total = _jst.convert_while(__while_cond_1, __while_body_1, (i, total), ('i', 'total'))
    return total, i
