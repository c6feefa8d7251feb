def for_enumerate(x):
    acc = x[0] * 0

    def __for_body_0(__item_0, acc):
        i, row = __item_0
        acc = acc + row * i
        return acc
    acc = _jst.convert_for(_jst.convert_enumerate(x), __for_body_0, (acc,), ('acc',))
    return acc
