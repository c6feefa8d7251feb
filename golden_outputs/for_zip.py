def for_zip(x, y):
    acc = x[0] * 0

    def __for_body_0(__item_0, acc):
        a, b = __item_0
        acc = acc + a * b
        return acc
    acc = _jst.convert_for(_jst.convert_zip(x, y), __for_body_0, (acc,), ('acc',))
    return acc
