"""Values read from outside the function (globals, attributes, closure cells) behave as in Python: a tensor is
read when the Program runs, so rebinding the name to another tensor is seen by the next call (retracing only
when its shape or dtype differs); a Python value is baked in and guarded, so when it changes the next call
retraces and `retrace_reasons` says which value changed. A stale Program never runs."""
import types

import numpy as np

import runtime as rt
from transpiler import to_static

P = rt.asarray(np.float32(2.0))
FLAG = True
SETTINGS = types.SimpleNamespace(offset=1.0)
SIZES = [1, 2]


def uses_global_tensor(x):
    return x * P


def uses_flag(x):
    if FLAG:
        return x + 1
    return x - 1


def uses_settings(x):
    return x + SETTINGS.offset


def uses_list(x):
    for s in SIZES:
        x = x * s
    return x


def _x():
    return rt.tensor(np.float32([1, 2]))


def test_rebinding_a_global_tensor_is_seen_without_retracing():
    global P
    static = to_static(uses_global_tensor)
    np.testing.assert_array_equal(static(_x()).numpy(), [2, 4])
    saved = P
    try:
        P = rt.asarray(np.float32(10.0))
        np.testing.assert_array_equal(static(_x()).numpy(), [10, 20])
        assert static.cache_size == 1 and static.retrace_reasons == []
        P = rt.asarray(np.float32([1, -1]))                 # another shape: retraced
        np.testing.assert_array_equal(static(_x()).numpy(), [1, -2])
        assert static.retrace_reasons == ["global 'P': shape [] -> [2]"]
    finally:
        P = saved


def test_changed_global_flag_retraces_and_says_why():
    global FLAG
    static = to_static(uses_flag)
    np.testing.assert_array_equal(static(_x()).numpy(), [2, 3])
    try:
        FLAG = False
        np.testing.assert_array_equal(static(_x()).numpy(), [0, 1])
        assert static.retrace_reasons == ["global 'FLAG': True -> False"]
    finally:
        FLAG = True
    np.testing.assert_array_equal(static(_x()).numpy(), [2, 3])


def test_attribute_of_a_global_object_is_guarded():
    static = to_static(uses_settings)
    np.testing.assert_array_equal(static(_x()).numpy(), [2, 3])
    SETTINGS.offset = 0.5
    try:
        np.testing.assert_array_equal(static(_x()).numpy(), [1.5, 2.5])
        assert static.retrace_reasons == ["SETTINGS.offset: 1.0 -> 0.5"]
    finally:
        SETTINGS.offset = 1.0


def test_a_global_list_changed_in_place_is_guarded():
    static = to_static(uses_list)
    np.testing.assert_array_equal(static(_x()).numpy(), [2, 4])
    SIZES.append(3)
    try:
        np.testing.assert_array_equal(static(_x()).numpy(), [6, 12])
        assert static.retrace_reasons == ["len(SIZES): 2 -> 3"]
    finally:
        SIZES.pop()


class Model:
    scale = 2.0                                  # a class attribute, until an instance sets its own

    def __init__(self):
        self.tol = 0.5
        self.w = rt.tensor(np.float32([1, 1]))

    @to_static
    def forward(self, x):
        y = x * self.w * self.scale
        if rt.sum(y) > self.tol:
            return y
        return -y


def test_attributes_python_values_are_guarded_and_tensors_reread():
    m = Model()
    x = _x()
    np.testing.assert_array_equal(m.forward(x).numpy(), [2, 4])
    m.tol = 100.0
    np.testing.assert_array_equal(m.forward(x).numpy(), [-2, -4])
    assert m.forward.retrace_reasons == ["self.tol: 0.5 -> 100.0"]
    m.w = rt.tensor(np.float32([3, 3]))          # another tensor, same shape: seen, not retraced
    np.testing.assert_array_equal(m.forward(x).numpy(), [-6, -12])
    m.scale = 1.0                                # shadows the class attribute
    np.testing.assert_array_equal(m.forward(x).numpy(), [-3, -6])
    Model.scale = 2.0
    assert m.forward.retrace_reasons[1:] == ["self.scale: 2.0 -> (gone)"]
    assert m.forward.cache_size == 1


def make_closure():
    w = rt.tensor(np.float32(3.0))
    k = 1

    def f(x):
        return x * w + k

    def rebind(new_w, new_k):
        nonlocal w, k
        w, k = new_w, new_k
    return f, rebind


def test_closure_cells_are_reread_and_guarded():
    f, rebind = make_closure()
    static = to_static(f)
    np.testing.assert_array_equal(static(_x()).numpy(), [4, 7])
    rebind(rt.tensor(np.float32(2.0)), 1)
    np.testing.assert_array_equal(static(_x()).numpy(), [3, 5])
    assert static.retrace_reasons == []
    rebind(rt.tensor(np.float32(2.0)), 10)
    np.testing.assert_array_equal(static(_x()).numpy(), [12, 14])
    assert static.retrace_reasons == ["closure variable 'k': 1 -> 10"]


COUNT = 0


def counts_calls(x):
    global COUNT
    COUNT += 1
    return x + COUNT


def test_a_python_value_the_function_changes_is_never_stale():
    global COUNT
    static = to_static(counts_calls)
    COUNT = 0
    got = [static(_x()).numpy().tolist() for _ in range(3)]
    assert got == [[2, 3], [3, 4], [4, 5]] and COUNT == 3


WEIGHTS = [rt.tensor(np.float32(2.0)), rt.tensor(np.float32(3.0))]
TABLE = {"scale": rt.tensor(np.float32(5.0)), "shift": 1}


def uses_containers(x):
    for w in WEIGHTS:
        x = x * w
    return x * TABLE["scale"] + TABLE["shift"]


def test_items_of_captured_lists_and_dicts_are_read_when_the_program_runs():
    static = to_static(uses_containers)
    np.testing.assert_array_equal(static(_x()).numpy(), [31, 61])
    saved = list(WEIGHTS), dict(TABLE)
    try:
        WEIGHTS[1] = rt.tensor(np.float32(-1.0))         # another tensor, same shape: read, no retrace
        TABLE["scale"] = rt.tensor(np.float32(1.0))
        np.testing.assert_array_equal(static(_x()).numpy(), [-1, -3])
        assert static.retrace_reasons == []
        TABLE["shift"] = 0                               # a Python value: retraced
        np.testing.assert_array_equal(static(_x()).numpy(), [-2, -4])
        WEIGHTS.append(rt.tensor(np.float32(10.0)))      # one more item: retraced
        np.testing.assert_array_equal(static(_x()).numpy(), [-20, -40])
        assert static.retrace_reasons == ["TABLE['shift']: 1 -> 0", "len(WEIGHTS): 2 -> 3"]
    finally:
        WEIGHTS[:] = saved[0]
        TABLE.clear()
        TABLE.update(saved[1])


OFFSETS = np.float32([1, 2])


def uses_numpy_global(x):
    return x + OFFSETS


def test_a_global_numpy_array_changed_in_place_is_guarded():
    static = to_static(uses_numpy_global)
    np.testing.assert_array_equal(static(_x()).numpy(), [2, 4])
    OFFSETS[0] = 10
    try:
        np.testing.assert_array_equal(static(_x()).numpy(), [11, 4])
        assert static.retrace_reasons == ["global 'OFFSETS': array([1., 2.], dtype=float32) -> "
                                          "array([10.,  2.], dtype=float32)"]
    finally:
        OFFSETS[0] = 1


def test_get_program_holds_the_tensors_a_call_would_feed_now():
    global P
    static = to_static(uses_global_tensor)
    static(_x())
    saved = P
    try:
        P = rt.asarray(np.float32(7.0))
        program = static.get_program(_x())
        assert [float(t.numpy()) for t in program.parameters.values()] == [7.0]
        assert static.cache_size == 1
    finally:
        P = saved


USE_BIAS = rt.tensor(np.bool_(True))


def reads_a_tensor_as_a_python_value(x):
    if USE_BIAS:                              # an eager tensor: decided while tracing, as a Python bool
        return x + 1
    return x


def test_a_tensor_read_as_a_python_value_is_guarded_by_its_values():
    static = to_static(reads_a_tensor_as_a_python_value)
    np.testing.assert_array_equal(static(_x()).numpy(), [2, 3])
    USE_BIAS[...] = False                     # updated in place: same object, other value
    try:
        np.testing.assert_array_equal(static(_x()).numpy(), [1, 2])
        assert static.retrace_reasons == ["global 'USE_BIAS': its values changed (they were read while tracing)"]
    finally:
        USE_BIAS[...] = True
