"""Random arrays (runtime/ops/random.py): shapes and dtypes, statistics, `rt.seed` reproducibility, and
a Program that draws new numbers on every run and every loop iteration, the same numbers as eager code
from the same seed."""
import numpy as np
import pytest

import runtime as rt
from transpiler import InputSpec, to_static


@pytest.mark.parametrize("make, dtype", [(lambda: rt.rand(3, 4), np.float32), (lambda: rt.randn((3, 4)), np.float32),
                                         (lambda: rt.rand([3, 4], dtype="float64"), np.float64),
                                         (lambda: rt.randint(0, 7, shape=(3, 4)), np.int64),
                                         (lambda: rt.randint(7, shape=[3, 4], dtype="int32"), np.int32)])
def test_shapes_and_dtypes(make, dtype):
    x = make()
    assert x.shape == (3, 4) and x.dtype == dtype


def test_values_follow_their_distributions():
    rt.seed(3)
    u, z, k = rt.rand(20000).numpy(), rt.randn(20000).numpy(), rt.randint(-2, 3, shape=(20000,)).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    assert set(np.unique(k)) == {-2, -1, 0, 1, 2}
    assert sorted(rt.randperm(50).numpy()) == list(range(50))


def test_seed_makes_draws_reproducible():
    rt.seed(11)
    first = [rt.rand(5).numpy(), rt.randn(5).numpy(), rt.randperm(6).numpy()]
    rt.seed(11)
    again = [rt.rand(5).numpy(), rt.randn(5).numpy(), rt.randperm(6).numpy()]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def noisy(x):
    return x + rt.randn(x.shape) * 0.1


def test_a_program_draws_new_numbers_on_every_run_the_same_as_eager_code():
    x = rt.tensor(np.zeros(4, np.float32))
    static = to_static(noisy)
    rt.seed(5)
    eager = [noisy(x).numpy() for _ in range(3)]
    rt.seed(5)
    runs = [static(x).numpy() for _ in range(3)]
    assert not np.array_equal(runs[0], runs[1])
    for a, b in zip(eager, runs):
        np.testing.assert_array_equal(a, b)
    assert "randn" in {op.type for op in static.get_program(x, optimized=True).ops()}


def stochastic_depth(x):
    i = 0
    while x.sum() < 100.0 and i < 20:
        if rt.rand(()) < 0.5:
            x = x + 1.0
        x = x + rt.rand_like(x)
        i += 1
    return x, i


def test_draws_inside_a_tensor_loop_are_new_each_iteration():
    x = rt.tensor(np.zeros(3, np.float32))
    rt.seed(9)
    want, want_i = stochastic_depth(x)
    rt.seed(9)
    got, got_i = to_static(stochastic_depth)(x)
    assert int(got_i) == want_i
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_shapes_may_be_dynamic_dims():
    f = to_static(lambda x: rt.randn_like(x) * 0 + rt.randint(3, shape=x.shape), input_spec=[InputSpec([None, 2])])
    out = f(rt.tensor(np.ones((5, 2), np.float32)))
    assert out.shape == (5, 2) and set(np.unique(out.numpy())) <= {0.0, 1.0, 2.0}


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="low .* less than high"):
        rt.randint(3, 3)
    with pytest.raises(TypeError, match="floating dtype"):
        rt.rand(2, dtype="int32")
