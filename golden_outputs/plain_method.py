def apply(self, x):
    __return_value = _jst.return_placeholder()

    def __true_fn_0(__return_value):
        __return_value = x * self.factor
        return __return_value

    def __false_fn_0(__return_value):
        __return_value = x
        return __return_value
    __return_value = _jst.convert_ifelse(x.sum() > 0, __true_fn_0,
        __false_fn_0, (__return_value,), ('__return_value',))
    return __return_value
