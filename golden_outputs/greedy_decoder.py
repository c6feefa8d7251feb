def forward(self, h):
    token = rt.full((h.shape[0],), BOS, dtype='int64')
    done = rt.zeros((h.shape[0],), dtype='bool')
    tokens = []
    __break_0 = False

    def __for_body_0(_, __break_0, done, h, token, tokens):
        h = _jst.convert_call(self.cell)(_jst.convert_call(self.embed)(token), h)
        token = rt.where(done, EOS, rt.argmax(_jst.convert_call(self.out)(h), axis=-1))
        tokens = _jst.convert_append(tokens, token)
        done = done | (token == EOS)
        __break_0 = _jst.convert_ifexp(rt.all(done), lambda: True, lambda: __break_0, name='__break_0')
        return __break_0, done, h, token, tokens
    __break_0, done, h, token, tokens = _jst.convert_for(_jst.convert_range(self.max_len), __for_body_0,
        (__break_0, done, h, token, tokens), ('__break_0', 'done', 'h', 'token', 'tokens'), until='__break_0',
        state=lambda: _jst.called_places(lambda: (self.cell, None, None),
        'self.cell') + _jst.called_places(lambda: (self.embed, None),
        'self.embed') + _jst.called_places(lambda: (self.out, None), 'self.out'))
    return rt.stack(tokens, axis=1)
