"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay (torch.optim.SGD).

    g = grad (+ weight_decay * p)            (-grad with maximize)
    buf = g on the first step, else momentum * buf + (1 - dampening) * g
    g = g + momentum * buf (Nesterov) or buf
    p = p - lr * g
"""
from .. import ops
from .optimizer import Optimizer, eager_zeros, step_counter


class SGD(Optimizer):
    NON_NEGATIVE = ("lr", "momentum", "weight_decay")
    FLAGS = ("nesterov", "maximize")

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
                 maximize=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def _check(self, group):
        super()._check(group)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum and zero dampening")

    def _new_state(self, p, group):
        if not group["momentum"]:
            return {}
        # the step count tells the first step (the buffer starts as the gradient) without a Python flag,
        # which a compiled step would bake in
        return {"momentum_buffer": eager_zeros(p), "step": step_counter(p)}

    def _update(self, p, grad, state, group):
        dtype = p.dtype
        g = self._l2_gradient(p, grad, group)
        if group["momentum"]:
            momentum = group.scalar("momentum", dtype)
            step = state["step"]
            keep = ops.where(step == 0, 1.0, 1.0 - group.tensors["dampening"])
            buf = momentum * state["momentum_buffer"] + ops.astype(keep, dtype) * g
            state["momentum_buffer"].set_value(buf)
            step.set_value(step + 1)
            g = g + momentum * buf if group["nesterov"] else buf
        p.set_value(p - group.scalar("lr", dtype) * g)
