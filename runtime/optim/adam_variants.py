"""Adamax, NAdam and RAdam (torch.optim.Adamax / NAdam / RAdam): their formulas, defaults and state names.

    Adamax: m = m + (1 - beta1) * (g - m);  u = max(beta2 * u, |g| + eps);  p = p - lr / (1 - beta1**t) * m / u
    NAdam:  mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay));  mu_product = prod(mu_1..mu_t)
            m, v as Adam's;  denom = sqrt(v / (1 - beta2**t)) + eps
            p = p - lr * (1 - mu_t) / (1 - mu_product) * g / denom
                  - lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom
    RAdam:  m, v as Adam's;  rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
            p = p - lr * m / (1 - beta1**t) * (r_t * sqrt(1 - beta2**t) / (sqrt(v) + eps) if rho_t > 5 else 1)
            with r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))

g is the gradient (negated with maximize) plus weight_decay * p, or with decoupled_weight_decay the parameter
shrinks by lr * weight_decay first (AdamW's rule). Scalars are computed in float64 and cast once.
"""
from .. import ops
from ..tensor import Tensor
from .adam import Adam
from .optimizer import eager_zeros, step_counter


class _AdamFamily(Adam):
    """Adam's checks, flags and betas pair; each subclass its own state and update."""

    FLAGS = ("maximize", "decoupled_weight_decay")

    def _gradient(self, p, grad, group):
        """(the value p decays to, the gradient the update uses)."""
        g = -grad if group["maximize"] else grad
        if not group["weight_decay"]:
            return p, g
        if group.get("decoupled_weight_decay"):
            hyper = group.tensors
            return p * ops.astype(1.0 - hyper["lr"] * hyper["weight_decay"], p.dtype), g
        return p, g + group.scalar("weight_decay", p.dtype) * p

    def _moments(self, g, state, group, dtype):
        hyper = group.tensors
        beta1, beta2 = hyper[("betas", 0)], hyper[("betas", 1)]
        m = state["exp_avg"] + ops.astype(1.0 - beta1, dtype) * (g - state["exp_avg"])
        v = state["exp_avg_sq"] * ops.astype(beta2, dtype) + ops.astype(1.0 - beta2, dtype) * (g * g)
        state["exp_avg"].set_value(m)
        state["exp_avg_sq"].set_value(v)
        return m, v

    def _count(self, state):
        step = state["step"] + 1
        state["step"].set_value(step)
        return ops.astype(step, "float64")

    def _start(self, p, grad, state, group):
        """What every update begins with: (step t, the value p decays to, the gradient, hyperparameters, beta1,
        beta2)."""
        t = self._count(state)
        value, g = self._gradient(p, grad, group)
        hyper = group.tensors
        return t, value, g, hyper, hyper[("betas", 0)], hyper[("betas", 1)]


class Adamax(_AdamFamily):
    FLAGS = ("maximize",)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, *, maximize=False):
        super(Adam, self).__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                                maximize=maximize))

    def _new_state(self, p, group):
        return {"step": step_counter(p), "exp_avg": eager_zeros(p), "exp_inf": eager_zeros(p)}

    def _update(self, p, grad, state, group):
        dtype = p.dtype
        t, value, g, hyper, beta1, beta2 = self._start(p, grad, state, group)
        m = state["exp_avg"] + ops.astype(1.0 - beta1, dtype) * (g - state["exp_avg"])
        u = ops.maximum(state["exp_inf"] * ops.astype(beta2, dtype), ops.abs(g) + group.scalar("eps", dtype))
        state["exp_avg"].set_value(m)
        state["exp_inf"].set_value(u)
        p.set_value(value - ops.astype(hyper["lr"] / (1.0 - beta1 ** t), dtype) * (m / u))


class NAdam(_AdamFamily):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, maximize=False):
        super(Adam, self).__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                                momentum_decay=momentum_decay,
                                                decoupled_weight_decay=decoupled_weight_decay, maximize=maximize))

    def _new_state(self, p, group):
        mu_product = Tensor(p.backend.xp.ones((), dtype="float32"), p.backend)
        return {"step": step_counter(p), "mu_product": mu_product, "exp_avg": eager_zeros(p),
                "exp_avg_sq": eager_zeros(p)}

    def _update(self, p, grad, state, group):
        dtype = p.dtype
        t, value, g, hyper, beta1, beta2 = self._start(p, grad, state, group)
        decay = hyper["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1.0) * decay))
        mu_product = ops.astype(state["mu_product"], "float64") * mu
        state["mu_product"].set_value(ops.astype(mu_product, "float32"))
        m, v = self._moments(g, state, group, dtype)
        denom = ops.sqrt(v / ops.astype(1.0 - beta2 ** t, dtype)) + group.scalar("eps", dtype)
        lr = hyper["lr"]
        now = ops.astype(lr * (1.0 - mu) / (1.0 - mu_product), dtype)
        ahead = ops.astype(lr * mu_next / (1.0 - mu_product * mu_next), dtype)
        p.set_value(value - now * (g / denom) - ahead * (m / denom))


class RAdam(_AdamFamily):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=False, *, maximize=False):
        super(Adam, self).__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                                decoupled_weight_decay=decoupled_weight_decay, maximize=maximize))

    def _new_state(self, p, group):
        return {"step": step_counter(p), "exp_avg": eager_zeros(p), "exp_avg_sq": eager_zeros(p)}

    def _update(self, p, grad, state, group):
        dtype = p.dtype
        t, value, g, hyper, beta1, beta2 = self._start(p, grad, state, group)
        m, v = self._moments(g, state, group, dtype)
        correction2 = 1.0 - beta2 ** t
        rho_inf = 2.0 / (1.0 - beta2) - 1.0
        rho_t = rho_inf - 2.0 * t * beta2 ** t / correction2
        rectified = rho_t > 5.0
        safe_rho = ops.where(rectified, rho_t, 10.0)      # the unused branch stays finite (rho_inf >= rho_t > 5
        safe_inf = ops.where(rectified, rho_inf, 10.0)    # where it is used)
        rect = ops.sqrt((safe_rho - 4.0) * (safe_rho - 2.0) * safe_inf
                        / ((safe_inf - 4.0) * (safe_inf - 2.0) * safe_rho))
        adaptive = ops.astype(rect * ops.sqrt(correction2), dtype) / (ops.sqrt(v) + group.scalar("eps", dtype))
        scale = ops.where(rectified, adaptive, ops.ones_like(adaptive))
        p.set_value(value - ops.astype(hyper["lr"] / (1.0 - beta1 ** t), dtype) * m * scale)
