def forward(self, x):
    h = nn.functional.relu(_jst.convert_call(self.fc1)(x))

    def __true_fn_0(h):
        h = h * 0.5
        return h
    h = _jst.convert_ifelse(h.mean() > 0.5, __true_fn_0, None, (h,), ('h',))
    return _jst.convert_call(self.fc2)(h)
