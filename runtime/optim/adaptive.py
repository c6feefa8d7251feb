"""Adagrad and RMSprop (torch.optim.Adagrad / RMSprop): their formulas, defaults and state names.

    Adagrad:  t = t + 1;  g = grad (+ weight_decay * p);  sum = sum + g * g
              p = p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)
    RMSprop:  g = grad (+ weight_decay * p);  square_avg = alpha * square_avg + (1 - alpha) * g * g
              avg = sqrt(square_avg - grad_avg**2) + eps with centered (grad_avg: the mean of g), else
              sqrt(square_avg) + eps;  buf = momentum * buf + g / avg;  p = p - lr * buf (or g / avg)
"""
from .. import ops
from .optimizer import Optimizer, eager_zeros, step_counter


class Adagrad(Optimizer):
    NON_NEGATIVE = ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps")

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                 *, maximize=False):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, eps=eps,
                                      maximize=maximize))

    def _new_state(self, p, group):
        total = eager_zeros(p)
        total.array = total.array + group["initial_accumulator_value"]
        return {"step": step_counter(p), "sum": total}

    def _update(self, p, grad, state, group):
        dtype = p.dtype
        step = state["step"] + 1
        state["step"].set_value(step)
        g = self._l2_gradient(p, grad, group)
        hyper = group.tensors
        clr = hyper["lr"] / (1.0 + (ops.astype(step, "float64") - 1.0) * hyper["lr_decay"])
        total = state["sum"] + g * g
        state["sum"].set_value(total)
        p.set_value(p - ops.astype(clr, dtype) * (g / (ops.sqrt(total) + group.scalar("eps", dtype))))


class RMSprop(Optimizer):
    NON_NEGATIVE = ("lr", "alpha", "eps", "weight_decay", "momentum")
    FLAGS = ("centered", "maximize")

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, *,
                 maximize=False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    def _new_state(self, p, group):
        state = {"step": step_counter(p), "square_avg": eager_zeros(p)}
        if group["momentum"]:
            state["momentum_buffer"] = eager_zeros(p)
        if group["centered"]:
            state["grad_avg"] = eager_zeros(p)
        return state

    def _update(self, p, grad, state, group):
        dtype = p.dtype
        state["step"].set_value(state["step"] + 1)
        g = self._l2_gradient(p, grad, group)
        alpha = group.scalar("alpha", dtype)
        square_avg = alpha * state["square_avg"] + (1 - alpha) * (g * g)
        state["square_avg"].set_value(square_avg)
        if group["centered"]:
            grad_avg = alpha * state["grad_avg"] + (1 - alpha) * g
            state["grad_avg"].set_value(grad_avg)
            avg = ops.sqrt(square_avg - grad_avg * grad_avg) + group.scalar("eps", dtype)
        else:
            avg = ops.sqrt(square_avg) + group.scalar("eps", dtype)
        update = g / avg
        if group["momentum"]:
            update = group.scalar("momentum", dtype) * state["momentum_buffer"] + update
            state["momentum_buffer"].set_value(update)
        p.set_value(p - group.scalar("lr", dtype) * update)


class Adadelta(Optimizer):
    """torch.optim.Adadelta:  g = grad (+ weight_decay * p);  square_avg = rho * square_avg + (1 - rho) * g * g
    delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g;  acc_delta = rho * acc_delta + (1 - rho) * delta**2
    p = p - lr * delta"""

    NON_NEGATIVE = ("lr", "rho", "eps", "weight_decay")

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, *, maximize=False):
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize))

    def _check(self, group):
        super()._check(group)
        if group["rho"] > 1:
            raise ValueError(f"Adadelta: invalid rho {group['rho']!r} (must be in [0, 1])")

    def _new_state(self, p, group):
        return {"step": step_counter(p), "square_avg": eager_zeros(p), "acc_delta": eager_zeros(p)}

    def _update(self, p, grad, state, group):
        dtype = p.dtype
        state["step"].set_value(state["step"] + 1)
        g = self._l2_gradient(p, grad, group)
        rho, eps = group.scalar("rho", dtype), group.scalar("eps", dtype)
        square_avg = rho * state["square_avg"] + (1 - rho) * (g * g)
        state["square_avg"].set_value(square_avg)
        delta = ops.sqrt(state["acc_delta"] + eps) / ops.sqrt(square_avg + eps) * g
        state["acc_delta"].set_value(rho * state["acc_delta"] + (1 - rho) * (delta * delta))
        p.set_value(p - group.scalar("lr", dtype) * delta)
