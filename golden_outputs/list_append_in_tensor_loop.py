def list_append_in_tensor_loop(x):
    outs = []

    def __for_body_0(row, outs):
        outs = _jst.convert_append(outs, row * 2)
        return outs
    outs = _jst.convert_for(x, __for_body_0, (outs,), ('outs',))
    return rt.stack(outs)
