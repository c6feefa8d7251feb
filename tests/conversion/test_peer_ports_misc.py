"""Ports: loops, jumps, closures and generators as the peer suites write them (TF AutoGraph's generators
and loop_scoping tests, Paddle's for/else and zip/enumerate, TorchScript's nested breaks).

Oracle: the same function run eagerly; see peers.like_eager (three calls: same input, another, same again).
"""
import numpy as np
import pytest

import runtime as rt
from transpiler import ConversionError
from transpiler import to_static

from .peers import like_eager


def s(v, dtype=np.float32):
    return np.asarray(v, dtype)


X = (s([1.5, -2.5, 3.0]),)
Y = (s([-0.5, 4.0, -3.5]),)
N5, N3 = (s(5, np.int32),), (s(3, np.int32),)


def nested_generator(x):
    def doubled(v):
        for r in v:
            yield r * 2
    return list(doubled(x))


def pairs(x):
    for i in range(x.shape[0] - 1):
        yield x[i], x[i + 1]


def module_generator_in_a_loop(x):
    acc = x[0] * 0
    for a, b in pairs(x):
        if a > b:
            acc = acc + a - b
    return acc


def generator_with_send_like_state(x):
    def running(v):
        total = v[0] * 0
        for r in v:
            total = total + r
            yield total
    return [t * 1 for t in running(x)]


def loop_var_after_tensor_range(n):
    for i in range(n):
        pass
    return i


def loop_var_reassigned_in_body(n):
    t = 0
    for i in range(n):
        t += i
        i = 100
    return t, i


def walrus_in_while_test(n):
    i = 0
    while (i := i + 1) < n:
        pass
    return i


def augmented_item_at_tensor_counter(x):
    y = x * 0
    i = 0
    while i < 3:
        y[i] += x[i] * i
        i += 1
    return y


def flag_break_out_of_two_loops(x):
    found = False
    for i in range(3):
        for j in range(3):
            if x[i] * j > 2:
                found = True
                break
        if found:
            break
    return found, i, j


def return_from_for_else(x):
    for v in x:
        if v > 2:
            return v
    else:
        return x[0] * 0 - 1


def enumerate_zip_tensor_if(x):
    r = []
    for i, (a, b) in enumerate(zip(x, x * 2)):
        if a > 0:
            r.append(a + b + i)
        else:
            r.append(a - b - i)
    return r


def dict_items_tensor_if(x):
    d = {"a": x[0], "b": x[1]}
    out = x[0] * 0
    for k, v in d.items():
        if v > 0:
            out = out + v
    return out


def tensor_in_list_of_numbers(x):
    if x[0] in [1.5, 2.0]:
        return x + 1
    return x


def continue_over_list_of_tensors(x):
    lst = [x[0], x[1], x[2]]
    total = 0
    for v in lst:
        if v > 0:
            continue
        total = total + v
    return total


def list_grown_under_tensor_if_static_loop(x):
    acc = []
    for i in range(3):
        if x[i] > 0:
            acc.append(x[i])
    return len(acc)


def helper_returns_the_list_it_grew(x):
    def helper(v, out):
        if v > 0:
            out.append(v)
        return out
    res = []
    for v in x:
        res = helper(v, res)
    return res


def reverse_or_double_in_loop(x):
    y = x
    k = 0
    while k < 3:
        y = y[::-1] if y[0] > 0 else y * 2
        k += 1
    return y


def factorial_tensor_range(n):
    r = 1
    for i in range(1, n + 1):
        r *= i
    return r


def fibonacci_tuple_swap(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def while_true_with_breaks(x):
    i = 0
    while True:
        i += 1
        if x[0] * i > 5:
            break
        if i > 50:
            break
    return i


CASES = [
    (nested_generator, X, Y), (module_generator_in_a_loop, X, Y), (generator_with_send_like_state, X, Y),
    (loop_var_after_tensor_range, N5, N3), (loop_var_reassigned_in_body, N5, N3), (walrus_in_while_test, N5, N3),
    (augmented_item_at_tensor_counter, X, Y), (flag_break_out_of_two_loops, X, Y), (return_from_for_else, X, Y),
    (enumerate_zip_tensor_if, X, Y), (dict_items_tensor_if, X, Y), (tensor_in_list_of_numbers, X, Y),
    (continue_over_list_of_tensors, X, Y), (list_grown_under_tensor_if_static_loop, X, Y),
    (helper_returns_the_list_it_grew, X, Y), (reverse_or_double_in_loop, X, Y), (factorial_tensor_range, N5, N3),
    (fibonacci_tuple_swap, N5, N3), (while_true_with_breaks, X, Y),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_like_eager(case):
    like_eager(case[0], *case[1:])


def filtered(v):
    for r in v:
        if r > 0:
            yield r


def calls_a_generator_with_a_tensor_condition(x):
    return list(filtered(x))


def test_a_tensor_condition_inside_a_called_generator_is_an_error_at_its_line():
    with pytest.raises(ConversionError, match="tensor-dependent condition") as info:
        to_static(calls_a_generator_with_a_tensor_condition)(rt.tensor(X[0]))
    assert "if r > 0:" in str(info.value)


def test_to_static_of_a_generator_function_is_a_conversion_error():
    with pytest.raises(ConversionError, match="generators"):
        to_static(pairs)(rt.tensor(X[0]))


def text_of_a_sum(x):
    return f"{x.sum()}"


def text_by_percent(x):
    return "v=%s" % x[0]


def text_by_str(x):
    return str(x[0])


def text_with_a_spec(x):
    return x * 2, f"sum {x.sum():.2f}"


@pytest.mark.parametrize("fn", [text_of_a_sum, text_by_percent, text_by_str, text_with_a_spec],
                         ids=lambda f: f.__name__)
def test_text_of_a_traced_value_is_a_type_error_at_the_users_line(fn):
    # eagerly the text holds the value; a string made while tracing would hold a placeholder on every run
    assert isinstance(fn(rt.tensor(X[0])), (str, tuple))
    with pytest.raises(TypeError, match="has no value while tracing") as info:
        to_static(fn)(rt.tensor(X[0]))
    assert "test_peer_ports_misc.py" in str(info.value) and "print(" in str(info.value)


def text_of_static_facts_and_printed_values(x):
    print(f"x is {x}")
    assert rt.all(x > -10), f"bad {x}"
    return repr(x.shape), f"{x.shape[0]}x{x.ndim}", x.dtype.name


def test_text_of_shapes_and_printed_tensors_like_eager():
    like_eager(text_of_static_facts_and_printed_values, X, Y)


def function_picked_or_none_in_a_loop(x):
    g = None
    for v in x:
        if v > 0:
            def g(t, v=v):
                return t + v
    return g(x) if g is not None else x


def test_an_error_inside_a_loop_body_names_the_users_function_not_a_generated_one():
    with pytest.raises(Exception, match="only a function in both branches") as info:
        to_static(function_picked_or_none_in_a_loop)(rt.tensor(X[0]))
    message = str(info.value)
    assert "in function_picked_or_none_in_a_loop" in message and "__for_body" not in message


def comprehension_with_tensor_condition(x):
    res = [v * 2 for v in x if v > 0]
    return len(res), res


def comprehension_of_indices_with_tensor_condition(x):
    return [i for i in range(3) if x[i] > 0]


def comprehension_over_enumerate_with_tensor_condition(x):
    kept = [v + i for i, v in enumerate(x) if v < 2]
    return rt.stack(kept) if len(kept) > 0 else x[:0]


def comprehension_with_python_condition(x):
    return [x * k for k in range(4) if k % 2], [k for k in "abc" if k != "b"]


@pytest.mark.parametrize("fn", [comprehension_with_tensor_condition, comprehension_of_indices_with_tensor_condition,
                                comprehension_over_enumerate_with_tensor_condition,
                                comprehension_with_python_condition], ids=lambda f: f.__name__)
def test_a_list_comprehension_with_a_tensor_condition_like_eager(fn):
    # the filtered list is a tensor array, as the loop `for v in x: if c: out.append(e)` makes
    like_eager(fn, X, Y, (s([-1.0, -2.0, -3.0]),))


def two_generators_with_tensor_condition(x):
    return [a + b for a in x for b in x if a > b]


def test_a_comprehension_of_two_fors_with_a_tensor_condition_is_a_conversion_error():
    with pytest.raises(ConversionError, match="tensor-dependent condition"):
        to_static(two_generators_with_tensor_condition)(rt.tensor(X[0]))


def test_a_filtering_comprehension_over_a_dynamic_first_dim_is_a_graph_loop():
    from transpiler import InputSpec

    from .peers import agree

    def positive_rows(x):
        kept = [r * 2 for r in x if r.sum() > 0]
        return len(kept), kept
    static = to_static(positive_rows, input_spec=[InputSpec([None, 3], "float32")])
    for n in (4, 2, 4, 1):
        data = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        agree(static(rt.tensor(data)), positive_rows(rt.tensor(data)))
