"""Adam and AdamW (torch.optim.Adam / AdamW): their formulas, defaults and state names.

    t = t + 1;  g = grad (-grad with maximize)
    Adam: g = g + weight_decay * p          AdamW: p = p * (1 - lr * weight_decay)
    m = m + (1 - beta1) * (g - m)           v = beta2 * v + (1 - beta2) * g * g
    v_max = max(v_max, v) with amsgrad, which then stands for v below
    p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

The scalar factors are computed in float64 (PyTorch computes them in Python)
and cast to the parameter's dtype once.
"""
from .. import ops
from .optimizer import Optimizer, eager_zeros, step_counter


class Adam(Optimizer):
    FLAGS = ("amsgrad", "maximize")
    PAIRS = ("betas",)
    decoupled = False      # AdamW: weight decay shrinks the parameter instead of joining the gradient

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _check(self, group):
        super()._check(group)
        name = type(self).__name__
        if group["eps"] < 0 or group["weight_decay"] < 0:
            raise ValueError(f"{name}: eps and weight_decay must be >= 0")
        if len(group["betas"]) != 2 or not all(0 <= b < 1 for b in group["betas"]):
            raise ValueError(f"{name}: betas must be two numbers in [0, 1), got {group['betas']!r}")

    def _new_state(self, p, group):
        state = {"step": step_counter(p), "exp_avg": eager_zeros(p), "exp_avg_sq": eager_zeros(p)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = eager_zeros(p)
        return state

    def _update(self, p, grad, state, group):
        dtype = p.dtype
        as_dtype = lambda scalar: ops.astype(scalar, dtype)  # noqa: E731
        hyper = group.tensors
        beta1, beta2 = hyper[("betas", 0)], hyper[("betas", 1)]
        step = state["step"] + 1
        state["step"].set_value(step)
        t = ops.astype(step, "float64")
        g = -grad if group["maximize"] else grad
        value = p
        if group["weight_decay"]:
            if self.decoupled:
                value = p * as_dtype(1.0 - hyper["lr"] * hyper["weight_decay"])
            else:
                g = g + group.scalar("weight_decay", dtype) * p
        m = state["exp_avg"] + as_dtype(1.0 - beta1) * (g - state["exp_avg"])
        v = state["exp_avg_sq"] * as_dtype(beta2) + as_dtype(1.0 - beta2) * (g * g)
        state["exp_avg"].set_value(m)
        state["exp_avg_sq"].set_value(v)
        if group["amsgrad"]:
            v = ops.maximum(state["max_exp_avg_sq"], v)
            state["max_exp_avg_sq"].set_value(v)
        step_size = hyper["lr"] / (1.0 - beta1 ** t)
        denom = ops.sqrt(v) / as_dtype(ops.sqrt(1.0 - beta2 ** t)) + group.scalar("eps", dtype)
        p.set_value(value - as_dtype(step_size) * (m / denom))


class AdamW(Adam):
    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
