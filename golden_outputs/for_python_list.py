def for_python_list(x):

    def __for_body_0(k, x):
        x = x * k
        return x
    x = _jst.convert_for([1.0, 2.0, 3.0], __for_body_0, (x,), ('x',))
    return x
