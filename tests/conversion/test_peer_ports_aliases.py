"""Ports: a list shared by two names (or a name and a container) that grows inside tensor control flow.

Python appends to the one object, so every holder sees the items. A list grown by a graph construct
becomes a tensor array bound to the construct's name alone: where another holder exists and the loop
cannot unroll, that is a ControlFlowError naming both (it used to leave the other holder silently empty).
"""
import numpy as np
import pytest

import runtime as rt
from runtime.errors import ControlFlowError
from transpiler import InputSpec, to_static

from .peers import like_eager


def s(v, dtype=np.float32):
    return np.asarray(v, dtype)


X = (s([1.0, -2.0, 3.0]),)
Y = (s([4.0, 5.0, -6.0, 7.0]),)


def alias_grown_in_tensor_while(n):
    xs = []
    ys = xs
    i = 0
    while i < n:
        xs.append(rt.tensor(np.float32(1)) * i)
        i += 1
    return len(ys)


def alias_grown_in_tensor_if(x):
    xs = [x[0]]
    ys = xs
    i = 0
    while i < 2:
        if x[i] > 0:
            xs.append(x[i])
        i += 1
    return len(ys)


def list_in_dict_grown_through_a_name(x):
    holder = {"l": []}
    lst = holder["l"]
    i = 0
    while i < x.shape[0] and x[i] > -10:
        lst.append(x[i])
        i += 1
    return len(holder["l"])


class Items:
    def __init__(self):
        self.items = []

    def fill(self, x):
        lst = self.items
        i = 0
        while i < x.shape[0] and x[i] > -10:
            lst.append(x[i])
            i += 1
        return len(self.items)


def alias_grown_over_rows(x):
    xs = []
    ys = xs
    for v in x:
        xs.append(v * 2)
    return len(ys), ys


@pytest.mark.parametrize("fn, args", [
    (alias_grown_in_tensor_while, (rt.tensor(np.int32(3)),)),
    (alias_grown_in_tensor_if, (rt.tensor(X[0]),)),
    (list_in_dict_grown_through_a_name, (rt.tensor(X[0]),)),
    (Items().fill, (rt.tensor(X[0]),)),
], ids=["other-name-while", "other-name-if", "dict-item", "attribute"])
def test_a_list_grown_in_a_graph_construct_with_another_holder_is_an_error_naming_both(fn, args):
    assert fn(*args) > 0        # eagerly every holder sees the items
    with pytest.raises(ControlFlowError, match="holds the same list") as info:
        to_static(fn)(*args)
    message = str(info.value)
    assert "test_peer_ports_aliases.py" in message and ("ys" in message or "holder['l']" in message
                                                        or "self.items" in message)


def test_a_static_length_loop_over_rows_growing_a_shared_list_unrolls_as_python():
    like_eager(alias_grown_over_rows, X, Y)


def test_a_dynamic_length_loop_growing_a_shared_list_is_an_error():
    static = to_static(alias_grown_over_rows, input_spec=[InputSpec([None], "float32")])
    with pytest.raises(ControlFlowError, match="'ys' holds the same list"):
        static(rt.tensor(X[0]))


def one_name_for_the_list(n):
    xs = []
    i = 0
    while i < n:
        xs.append(rt.tensor(np.float32(2)) * i)
        i += 1
    ys = xs                         # an alias made after the loop is fine
    return len(ys), rt.stack(ys)


def test_an_alias_made_after_the_loop_sees_the_items():
    like_eager(one_name_for_the_list, (s(4, np.int32),), (s(2, np.int32),))
