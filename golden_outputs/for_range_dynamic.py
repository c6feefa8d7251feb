def for_range_dynamic(x):
    total = x[0] * 0

    def __for_body_0(i, total):
        total = total + x[i] * i
        return total
    total = _jst.convert_for(_jst.convert_range(x.shape[0]), __for_body_0, (total,), ('total',))
    return total
