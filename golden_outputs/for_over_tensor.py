def for_over_tensor(x):
    total = x[0] * 0

    def __for_body_0(row, total):
        total = total + row * 2
        return total
    total = _jst.convert_for(x, __for_body_0, (total,), ('total',))
    return total
