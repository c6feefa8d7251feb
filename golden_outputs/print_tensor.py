def print_tensor(x):
    y = x * 2
    _jst.convert_print('y =', y)
    return y
