def for_python_range(x):

    def __for_body_0(i, x):
        x = x + i
        return x
    x = _jst.convert_for(_jst.convert_range(4), __for_body_0, (x,), ('x',))
    return x
