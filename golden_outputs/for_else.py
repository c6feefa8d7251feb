def for_else(x):
    found = x[0] * 0
    __break_0 = False

    def __for_body_0(v, __break_0, found):

        def __true_fn_0(__break_0, found):
            found = v
            __break_0 = True
            return __break_0, found
        __break_0, found = _jst.convert_ifelse(v > 100, __true_fn_0, None, (__break_0, found), ('__break_0', 'found'))
        return __break_0, found
    __break_0, found = _jst.convert_for(x, __for_body_0, (__break_0, found), ('__break_0', 'found'), until='__break_0')

    def __true_fn_1(found):
        found = found - 1
        return found
    found = _jst.convert_ifelse(_jst.convert_logical_not(__break_0), __true_fn_1, None, (found,), ('found',))
    return found
