"""Which arrays user code may write in place behind the runtime's back: the write barrier's other half.

Every write the API makes into a Tensor (`set_value`, `t[i] = v`, `p -= lr * g`, an optimizer's step,
`load_state_dict`, in-place methods, a static function's write-back) gives the Tensor a new array, so
an array the runtime holds never changes under it: a copy derived from an array (a GEMM's packed weight)
stays right as long as that array object lives. The exception is memory user code holds a writable
reference to: an array handed out by `t.numpy()`, `np.asarray(t)`, DLPack, a NumPy array a Tensor was
made from without a copy (`rt.asarray(a)`, `Parameter(a)`), an array fed to a Program as it is. Those
arrays are marked here (`escape`), and what derives copies asks `escaped(a)` first. Writing into a
Tensor's `.array` attribute in place is outside the contract (docs/semantics.md).

The marks are weak (an array's mark goes with it), and a mark on a view marks the array it views too.
Small arrays (the inputs of a batch-1 call) are not marked at all, so marking costs them ~0.1 µs.
"""
import weakref

import numpy as np

_ESCAPED = {}       # id(array) -> weakref to it (its callback drops the entry before the id can be reused)
WATCHED = 4096      # arrays of fewer elements are never marked, and count as escaped (a copy of one is cheap)


def escape(array):
    """Mark `array` (and the array it is a view of) as writable by code the runtime does not see."""
    while isinstance(array, np.ndarray):
        if array.size >= WATCHED:
            key = id(array)
            if key not in _ESCAPED:
                _ESCAPED[key] = weakref.ref(array, lambda ref, key=key, marks=_ESCAPED: marks.get(key) is ref
                                            and marks.pop(key, None))
        array = array.base


def escaped(array):
    """True unless `array` is an ndarray of WATCHED elements or more that owns its memory and was never
    handed out writable."""
    if type(array) is not np.ndarray or array.size < WATCHED or not array.flags.owndata:
        return True          # (a view: its owner may be written through another view)
    ref = _ESCAPED.get(id(array))
    return ref is not None and ref() is array


def unmarked(array):
    """`not escaped(array)` for an array already known to own its memory and to be WATCHED elements or more
    (facts an array keeps for life): only whether it was marked since (one dict lookup)."""
    return id(array) not in _ESCAPED
