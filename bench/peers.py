"""The same workloads in the systems our users come from, when they import.

Each peer is optional (`pip install .[bench-peers]` brings PyTorch and JAX;
TensorFlow and Paddle are used when already installed): a peer that does not
import, or fails to build, is skipped with the reason recorded, never fatal.
Every peer runs on the CPU with one thread, in its compiled mode
(torch.jit.script, jax.jit, tf.function, paddle.jit.to_static), in inference
mode, returning a host-readable result.
"""
import importlib
import importlib.util

import numpy as np

ALL = ("torch.jit.script", "jax.jit", "tf.function", "paddle.jit")
SKIPPED = {}     # peer -> why it was skipped in this process


def _module(name):
    try:
        return importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken install
        return e


def _torch():
    torch = _module("torch")
    if isinstance(torch, Exception):
        raise torch
    torch.set_num_threads(1)
    return torch


def _jax():
    jax = _module("jax")
    if isinstance(jax, Exception):
        raise jax
    jax.config.update("jax_platforms", "cpu")
    return jax


def _tf():
    tf = _module("tensorflow")
    if isinstance(tf, Exception):
        raise tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    return tf


def _paddle():
    paddle = _module("paddle")
    if isinstance(paddle, Exception):
        raise paddle
    paddle.set_device("cpu")
    return paddle


def _build(out, names, label, make):
    if label not in names:
        return
    try:
        fn = make()
        fn()
        out[label] = fn
    except Exception as e:  # noqa: BLE001 - a peer that cannot run is skipped, with the reason
        SKIPPED[label] = f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"


# --- W1/W2 ----------------------------------------------------------------------------------

def mlp(x, ws, names):
    out = {}

    def torch_():
        torch = _torch()

        @torch.jit.script
        def f(x, w1, b1, w2, b2, w3, b3):
            h = torch.relu(x @ w1 + b1)
            h = torch.relu(h @ w2 + b2)
            return h @ w3 + b3
        args = [torch.from_numpy(a) for a in [x] + ws]

        def call():
            with torch.inference_mode():
                return f(*args)
        return call

    def jax_():
        jax = _jax()
        import jax.numpy as jnp

        @jax.jit
        def f(x, w1, b1, w2, b2, w3, b3):
            h = jnp.maximum(x @ w1 + b1, 0)
            h = jnp.maximum(h @ w2 + b2, 0)
            return h @ w3 + b3
        args = [jax.device_put(a) for a in [x] + ws]
        return lambda: f(*args).block_until_ready()

    def tf_():
        tf = _tf()

        @tf.function
        def f(x, w1, b1, w2, b2, w3, b3):
            h = tf.maximum(x @ w1 + b1, 0)
            h = tf.maximum(h @ w2 + b2, 0)
            return h @ w3 + b3
        args = [tf.constant(a) for a in [x] + ws]
        return lambda: f(*args).numpy()

    def paddle_():
        paddle = _paddle()

        @paddle.jit.to_static
        def f(x, w1, b1, w2, b2, w3, b3):
            h = paddle.maximum(paddle.matmul(x, w1) + b1, paddle.zeros([1]))
            h = paddle.maximum(paddle.matmul(h, w2) + b2, paddle.zeros([1]))
            return paddle.matmul(h, w3) + b3
        args = [paddle.to_tensor(a) for a in [x] + ws]
        return lambda: f(*args).numpy()

    for label, make in zip(ALL, (torch_, jax_, tf_, paddle_)):
        _build(out, names, label, make)
    return out


# --- W3 --------------------------------------------------------------------------------------

def rnn(x, u, w, b, steps, names):
    out = {}
    hidden = w.shape[0]

    def torch_():
        torch = _torch()

        @torch.jit.script
        def f(x, u, w, b, steps: int):
            h = torch.zeros((1, w.shape[0]))
            i = 0
            while i < steps and bool(h.sum() < 1e9):
                h = torch.tanh(x[i] @ u + h @ w + b)
                i += 1
            return h
        args = [torch.from_numpy(a) for a in (x, u, w, b)]

        def call():
            with torch.inference_mode():
                return f(*args, steps)
        return call

    def jax_():
        jax = _jax()
        import jax.numpy as jnp

        @jax.jit
        def f(x, u, w, b):
            def cond(state):
                i, h = state
                return (i < steps) & (h.sum() < 1e9)

            def body(state):
                i, h = state
                return i + 1, jnp.tanh(x[i] @ u + h @ w + b)
            return jax.lax.while_loop(cond, body, (0, jnp.zeros((1, hidden), jnp.float32)))[1]
        args = [jax.device_put(a) for a in (x, u, w, b)]
        return lambda: f(*args).block_until_ready()

    def tf_():
        tf = _tf()

        @tf.function
        def f(x, u, w, b):
            h = tf.zeros((1, hidden))
            i = tf.constant(0)
            while i < steps and tf.reduce_sum(h) < 1e9:
                h = tf.tanh(x[i] @ u + h @ w + b)
                i += 1
            return h
        args = [tf.constant(a) for a in (x, u, w, b)]
        return lambda: f(*args).numpy()

    def paddle_():
        paddle = _paddle()

        @paddle.jit.to_static
        def f(x, u, w, b):
            h = paddle.zeros([1, hidden])
            i = paddle.zeros([1], "int64")
            while i < steps and h.sum() < 1e9:
                h = paddle.tanh(paddle.matmul(x[i], u) + paddle.matmul(h, w) + b)
                i += 1
            return h
        args = [paddle.to_tensor(a) for a in (x, u, w, b)]
        return lambda: f(*args).numpy()

    for label, make in zip(ALL, (torch_, jax_, tf_, paddle_)):
        _build(out, names, label, make)
    return out


# --- W4 --------------------------------------------------------------------------------------

def ifelse(x, names):
    out = {}

    def torch_():
        torch = _torch()

        @torch.jit.script
        def f(x):
            if bool(x.mean() > 0):
                y = x * 2
            else:
                y = x - 1
            return y
        xt = torch.from_numpy(x)

        def call():
            with torch.inference_mode():
                return f(xt)
        return call

    def jax_():
        jax = _jax()

        @jax.jit
        def f(x):
            return jax.lax.cond(x.mean() > 0, lambda v: v * 2, lambda v: v - 1, x)
        xj = jax.device_put(x)
        return lambda: f(xj).block_until_ready()

    def tf_():
        tf = _tf()

        @tf.function
        def f(x):
            if tf.reduce_mean(x) > 0:
                y = x * 2
            else:
                y = x - 1
            return y
        xt = tf.constant(x)
        return lambda: f(xt).numpy()

    def paddle_():
        paddle = _paddle()

        @paddle.jit.to_static
        def f(x):
            if x.mean() > 0:
                y = x * 2
            else:
                y = x - 1
            return y
        xt = paddle.to_tensor(x)
        return lambda: f(xt).numpy()

    for label, make in zip(ALL, (torch_, jax_, tf_, paddle_)):
        _build(out, names, label, make)
    return out


# --- W5 --------------------------------------------------------------------------------------

def gelu(x, names):
    out = {}

    def torch_():
        torch = _torch()

        @torch.jit.script
        def f(x):
            return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x ** 3)))
        xt = torch.from_numpy(x)

        def call():
            with torch.inference_mode():
                return f(xt)
        return call

    def jax_():
        jax = _jax()
        import jax.numpy as jnp

        @jax.jit
        def f(x):
            return 0.5 * x * (1 + jnp.tanh(0.79788456 * (x + 0.044715 * x ** 3)))
        xj = jax.device_put(x)
        return lambda: f(xj).block_until_ready()

    def tf_():
        tf = _tf()

        @tf.function
        def f(x):
            return 0.5 * x * (1 + tf.tanh(0.79788456 * (x + 0.044715 * x ** 3)))
        xt = tf.constant(x)
        return lambda: f(xt).numpy()

    def paddle_():
        paddle = _paddle()

        @paddle.jit.to_static
        def f(x):
            return 0.5 * x * (1 + paddle.tanh(0.79788456 * (x + 0.044715 * x ** 3)))
        xt = paddle.to_tensor(x)
        return lambda: f(xt).numpy()

    for label, make in zip(ALL, (torch_, jax_, tf_, paddle_)):
        _build(out, names, label, make)
    return out


def versions():
    """Installed versions of the peers (None when absent)."""
    out = {}
    for label, module in (("torch", "torch"), ("jax", "jax"), ("tensorflow", "tensorflow"), ("paddle", "paddle")):
        spec = importlib.util.find_spec(module)
        if spec is None:
            out[label] = None
            continue
        try:
            from importlib.metadata import version
            out[label] = version({"paddle": "paddlepaddle"}.get(module, module))
        except Exception:  # noqa: BLE001
            out[label] = "installed"
    return out


del np
