"""Ports: Python numbers and tensors mixed as the peer suites mix them (dtype promotion, integer division
and modulo signs, round/floor/divmod of numbers taken from tensors, numbers carried by tensor loops).

Oracle: the same function run eagerly; see peers.like_eager (three calls: same input, another, same again).
"""
import math

import numpy as np
import pytest

import runtime as rt
from transpiler import to_static

from .peers import like_eager


def s(v, dtype=np.float32):
    return np.asarray(v, dtype)


X = (s([1.5, -2.5, 3.0]),)
Y = (s([-0.5, 4.0, -3.5]),)
N5, N3 = (s(5, np.int32),), (s(3, np.int32),)


def float_carried_by_tensor_loop(n):
    i = 0
    k = 1.0
    while i < n:
        k = k * 0.5 + 0.1
        i += 1
    return k, i


def int_division_signs_in_loop(n):
    i = 0
    t = 0
    while i < n:
        t += (-i) // 2 + (-i) % 3 + i / 2
        i += 1
    return t


def round_of_float_items(x):
    r = []
    for v in x:
        r.append(round(float(v)))
    return r


def number_protocol_of_items(x):
    return int(x[1]), round(float(x[0])), math.floor(float(x[2])), math.ceil(x[1].item()), \
        math.trunc(float(x[1])), abs(int(x[1])), round(float(x[2]) * 1.2345, 2), math.floor(x[0])


def divmod_of_loop_numbers(n):
    i = 0
    acc = 0
    while i < n:
        acc += i * i
        i += 1
    return acc / n, acc // n, divmod(acc, 3), divmod(-acc, 4), divmod(7, acc + 1)


def round_halves_to_even(x):
    out = []
    for v in x:
        out.append(round(float(v) + 0.5))
    return out


def max_of_loop_numbers(n):
    i = 0
    m = 0
    while i < n:
        m = max(m, i * 2)
        i += 1
    return m


def bool_arithmetic(x):
    return (x > 0) + 0, (x > 0) * 1.5, True + (x[0] > 0), (x > 0).sum()


def int_tensor_ops(x):
    i = x.astype("int32")
    return i / 2, i // 2, i % 2, i * 1.0, i ** 2, -i // 4, i.astype("uint8") + 1, i % -3, i // -3


def float16_ops(x):
    h = x.astype("float16")
    return h * 2.5, h + 1, h / 3, (h * 3).astype("float32")


def bool_toggled_in_loop(n):
    i = 0
    b = False
    while i < n:
        b = not b
        i += 1
    return b


def mixed_int_float_accumulator(x):
    acc = 0
    for v in x:
        if v > 0:
            acc += 1
        else:
            acc -= 0.5
    return acc


def dtype_facts(x):
    return str(x.shape), x.dtype == np.float32, x.dtype.name


def python_float_bits(x):
    i = 0
    acc = 0.0
    while i < 3:
        acc += 0.1
        i += 1
    y = x * 0
    for v in x:
        acc += 0.1
        y = y + acc
    return acc, y


def list_of_ints_set_in_loop(n):
    lst = [1, 2, 3]
    i = 0
    while i < n and i < 3:
        lst[i] = lst[i] * 10
        i += 1
    return lst, sum(lst)


def numpy_scalars_with_tensors(x):
    a = x.astype("int64")
    b = x.astype("int32")
    return a + b, b * np.int64(2), b + np.float64(1.5), x + np.float64(1.5), x * np.float32(2), \
        x.astype("float64") * np.float32(2), x + np.int8(3), np.float32(2) ** x


def integer_power_of_loop_counter(n):
    i = 0
    p = 0
    while i < n:
        p = p + 2 ** i + i ** 2
        i += 1
    return p


def true_division_of_ints(n):
    return n / 2, n // 2, -n // 2, -n % 2, n / n, (n * 3) % 4


def comparison_chain_numbers(x):
    out = []
    for v in x:
        out.append(-2 < v <= 2)
    return out


def min_max_builtins_tensor_numbers(x):
    return max(x[0], 0.0), min(x[1], x[2]), max(1, 2), min(x[0], x[1], x[2])


def sum_of_python_list_and_tensor(x):
    return sum([x[0], x[1], 1.0]), sum([1, 2, 3]) * x, sum(x, 10)


def float_inf_nan_compare(x):
    m = float("inf")
    for v in x:
        if v < m:
            m = v
    return m


CASES = [
    (float_carried_by_tensor_loop, N5, N3), (int_division_signs_in_loop, N5, N3), (round_of_float_items, X, Y),
    (number_protocol_of_items, X, Y), (divmod_of_loop_numbers, N5, N3), (round_halves_to_even, X, Y),
    (max_of_loop_numbers, N5, N3), (bool_arithmetic, X, Y), (int_tensor_ops, X, Y), (float16_ops, X, Y),
    (bool_toggled_in_loop, N5, N3), (mixed_int_float_accumulator, X, Y), (dtype_facts, X, Y),
    (python_float_bits, X, Y), (list_of_ints_set_in_loop, N5, N3), (numpy_scalars_with_tensors, X, Y),
    (integer_power_of_loop_counter, N5, N3), (true_division_of_ints, N5, N3), (comparison_chain_numbers, X, Y),
    (min_max_builtins_tensor_numbers, X, Y), (sum_of_python_list_and_tensor, X, Y),
    (float_inf_nan_compare, X, Y),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_like_eager(case):
    like_eager(case[0], *case[1:])


def negative_power_of_python_int(n):
    i = 0
    p = 0.0
    while i < n:
        p = p + 2 ** (-i)
        i += 1
    return p


def test_a_python_int_to_a_negative_traced_int_power_is_an_error_at_the_users_line():
    # Python's int ** int is an int or a float depending on the exponent's sign, which a Program cannot
    # know: NumPy's error when the Program runs, naming the user's line (2.0 ** -i is the way)
    with pytest.raises(ValueError, match="negative integer powers") as info:
        to_static(negative_power_of_python_int)(rt.tensor(s(3, np.int32)))
    assert "test_peer_ports_numbers.py" in str(info.value)


def test_round_of_a_tensor_is_a_type_error_as_eagerly():
    def f(x):
        return round(x[0])
    with pytest.raises(TypeError, match="__round__"):
        f(rt.tensor(X[0]))
    with pytest.raises(TypeError, match="__round__"):
        to_static(f)(rt.tensor(X[0]))
