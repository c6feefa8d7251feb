"""`rt.optim.lr_scheduler`: PyTorch's learning-rate schedules (StepLR, MultiStepLR, ExponentialLR,
CosineAnnealingLR, CosineAnnealingWarmRestarts, LambdaLR, MultiplicativeLR, LinearLR, ConstantLR, PolynomialLR,
CyclicLR, OneCycleLR, SequentialLR, ChainedScheduler, ReduceLROnPlateau).

A schedule only assigns `group["lr"]` (and OneCycleLR the momentum or Adam's beta1). Each group keeps
its numbers in 0-d tensors (`ParamGroup.tensors`) that a compiled training step reads by reference,
so `scheduler.step()` between calls changes the rate of a static step without retracing it.
Epoch counting, the first step made by the constructor and `get_last_lr()` are PyTorch's.
"""
import bisect
import math

from .optimizer import Optimizer


class LRScheduler:
    """The base: `step()` advances `last_epoch` and sets each group's lr to `lr_at(last_epoch)`."""

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__} needs an rt.optim optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            if last_epoch == -1:
                if "initial_lr" not in group:      # PyTorch's setdefault: OneCycleLR sets its own first
                    group["initial_lr"] = group["lr"]
            elif "initial_lr" not in group:
                raise KeyError("param 'initial_lr' is not specified in param_groups when resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, epoch):
        """Each group's learning rate at `epoch`."""
        raise NotImplementedError

    def step(self, epoch=None):
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.lr_at(self.last_epoch)):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self):
        return list(self._last_lr)

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer" and not callable(v)}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler


class StepLR(LRScheduler):
    """lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return [base * self.gamma ** (epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr * gamma ** (the number of milestones passed)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones, self.gamma = sorted(int(m) for m in milestones), float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return [base * self.gamma ** bisect.bisect_right(self.milestones, epoch) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr * gamma ** epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return [base * self.gamma ** epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """eta_min + (lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * epoch / self.T_max)) / 2
                for base in self.base_lrs]


class LambdaLR(LRScheduler):
    """lr * lr_lambda(epoch) (one function, or one per group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        groups = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
        if len(self.lr_lambdas) != groups:
            raise ValueError(f"LambdaLR: {len(self.lr_lambdas)} lr_lambdas for {groups} param groups")
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return [base * fn(epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas)]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}


class LinearLR(LRScheduler):
    """lr times a factor going linearly from start_factor to end_factor over total_iters epochs."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError("LinearLR: start_factor must be in (0, 1] and end_factor in [0, 1]")
        self.start_factor, self.end_factor, self.total_iters = float(start_factor), float(end_factor), int(total_iters)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        done = min(epoch, self.total_iters) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * done) for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr * factor until total_iters epochs have passed, then lr."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if not 0 <= factor <= 1:
            raise ValueError("ConstantLR: factor must be in [0, 1]")
        self.factor, self.total_iters = float(factor), int(total_iters)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return [base * (self.factor if epoch < self.total_iters else 1.0) for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr * (1 - min(epoch, total_iters) / total_iters) ** power."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters, self.power = int(total_iters), float(power)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return [base * (1.0 - min(epoch, self.total_iters) / self.total_iters) ** self.power for base in self.base_lrs]


class MultiplicativeLR(LRScheduler):
    """Each step multiplies the current lr by lr_lambda(epoch) (one function, or one per group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        groups = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
        if len(self.lr_lambdas) != groups:
            raise ValueError(f"MultiplicativeLR: {len(self.lr_lambdas)} lr_lambdas for {groups} param groups")
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        groups = self.optimizer.param_groups
        if epoch <= 0:
            return [group["lr"] for group in groups]
        return [group["lr"] * fn(epoch) for group, fn in zip(groups, self.lr_lambdas)]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from lr to eta_min over T_i epochs, restarting at lr; T_i starts at T_0 and is
    multiplied by T_mult at each restart (SGDR)."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if int(T_0) <= 0 or int(T_mult) < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_0 must be positive and T_mult at least 1, got "
                             f"{T_0}, {T_mult}")
        self.T_0, self.T_mult, self.eta_min = int(T_0), int(T_mult), float(eta_min)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        t_cur, t_i = max(epoch, 0), self.T_0
        while t_cur >= t_i:
            t_cur -= t_i
            t_i *= self.T_mult
        self.T_cur, self.T_i = t_cur, t_i
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * t_cur / t_i)) / 2
                for base in self.base_lrs]


class CyclicLR(LRScheduler):
    """The lr cycling between base_lr and max_lr (step_size_up steps up, step_size_down down): 'triangular',
    'triangular2' (the height halves each cycle), 'exp_range' (times gamma ** step) or a scale_fn; the
    momentum (SGD's, or Adam's beta1) moves the other way when cycle_momentum."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular",
                 gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.9, last_epoch=-1):
        groups = optimizer.param_groups
        base_lrs = list(base_lr) if isinstance(base_lr, (list, tuple)) else [base_lr] * len(groups)
        self.max_lrs = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr] * len(groups)
        if last_epoch == -1:
            for group, lr in zip(groups, base_lrs):
                group["lr"] = group["initial_lr"] = lr
        down = step_size_up if step_size_down is None else step_size_down
        self.total_size = float(step_size_up + down)
        self.step_ratio = step_size_up / self.total_size
        if scale_fn is None and mode not in ("triangular", "triangular2", "exp_range"):
            raise ValueError(f"CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range', got {mode!r}")
        self.mode, self.gamma = mode, float(gamma)
        self._scale_fn, self.scale_mode = scale_fn, ("cycle" if mode != "exp_range" else "iterations") \
            if scale_fn is None else scale_mode
        self.cycle_momentum = bool(cycle_momentum)
        self._beta = self.cycle_momentum and "betas" in groups[0]
        if self.cycle_momentum and not self._beta and "momentum" not in groups[0]:
            raise ValueError("CyclicLR: optimizer got no momentum or betas to cycle (cycle_momentum=False)")
        self.base_momentums = [base_momentum] * len(groups)
        self.max_momentums = [max_momentum] * len(groups)
        super().__init__(optimizer, last_epoch)

    def _scale(self, x):
        if self._scale_fn is not None:
            return self._scale_fn(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def _factor(self, epoch):
        cycle = math.floor(1 + epoch / self.total_size)
        x = 1.0 + epoch / self.total_size - cycle
        height = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        return height * self._scale(cycle if self.scale_mode == "cycle" else epoch)

    def lr_at(self, epoch):
        factor = self._factor(epoch)
        return [base + (top - base) * factor for base, top in zip(self.base_lrs, self.max_lrs)]

    def step(self, epoch=None):
        super().step(epoch)
        if self.cycle_momentum:
            factor = self._factor(self.last_epoch)
            for group, low, high in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                m = high - (high - low) * factor
                if self._beta:
                    group["betas"] = (m, *group["betas"][1:])
                else:
                    group["momentum"] = m


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr from max_lr/div_factor up to max_lr (pct_start of the steps), then down to
    initial_lr/final_div_factor ('cos' or 'linear'); the momentum (SGD's, or Adam's beta1) moves the other
    way between max_momentum and base_momentum when cycle_momentum."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False, last_epoch=-1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
            total_steps = int(epochs) * int(steps_per_epoch)
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.total_steps, self.anneal_strategy = int(total_steps), anneal_strategy
        groups = optimizer.param_groups
        max_lrs = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr] * len(groups)
        up = float(pct_start * self.total_steps) - 1
        if three_phase:
            self.phases = [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                           (float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                            "max_momentum"),
                           (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self.phases = [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                           (self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        self.cycle_momentum = bool(cycle_momentum)
        self._beta = self.cycle_momentum and "betas" in groups[0]
        if self.cycle_momentum and not self._beta and "momentum" not in groups[0]:
            raise ValueError("OneCycleLR: optimizer got no momentum or betas to cycle (cycle_momentum=False)")
        self._ranges = []
        for group, top in zip(groups, max_lrs):
            initial = top / div_factor
            ranges = {"initial_lr": initial, "max_lr": top, "min_lr": initial / final_div_factor,
                      "max_momentum": max_momentum, "base_momentum": base_momentum}
            self._ranges.append(ranges)
            if last_epoch == -1:
                group["initial_lr"] = initial
                group["max_lr"], group["min_lr"] = top, ranges["min_lr"]
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _at(self, epoch, ranges, kind):
        if epoch > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {epoch} times, more than total_steps={self.total_steps}")
        start_step = 0.0
        for i, (end_step, lr0, lr1, m0, m1) in enumerate(self.phases):
            if epoch <= end_step or i == len(self.phases) - 1:
                # the step() after the last one (epoch == total_steps) sets a rate no update uses: PyTorch
                # extrapolates there (below zero for 'linear'), here it stays the final rate
                pct = min((epoch - start_step) / (end_step - start_step), 1.0)
                a, b = (lr0, lr1) if kind == "lr" else (m0, m1)
                return self._anneal(ranges[a], ranges[b], pct)
            start_step = end_step
        raise AssertionError("unreachable")

    def lr_at(self, epoch):
        return [self._at(epoch, ranges, "lr") for ranges in self._ranges]

    def step(self, epoch=None):
        super().step(epoch)
        if self.cycle_momentum:
            for group, ranges in zip(self.optimizer.param_groups, self._ranges):
                m = self._at(self.last_epoch, ranges, "momentum")
                if self._beta:
                    group["betas"] = (m, *group["betas"][1:])
                else:
                    group["momentum"] = m


class SequentialLR:
    """The schedulers in turn: schedulers[i] from milestones[i - 1] on, each restarting at its epoch 0."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} milestones, "
                             f"got {len(milestones)}")
        if any(s.optimizer is not optimizer for s in schedulers):
            raise ValueError("SequentialLR: every scheduler must belong to the optimizer given")
        self.optimizer, self._schedulers, self._milestones = optimizer, list(schedulers), [int(m) for m in milestones]
        self.last_epoch = last_epoch + 1
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for scheduler in self._schedulers:      # undo the step each constructor made; the first one starts
            scheduler.last_epoch -= 1
        self._schedulers[0].step()
        self._last_lr = self._schedulers[0].get_last_lr()

    def step(self):
        self.last_epoch += 1
        index = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler.step(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def get_last_lr(self):
        return list(self._last_lr)


class ChainedScheduler:
    """Several schedules at once: each step steps every scheduler, and the lr is the initial lr times the
    product of each schedule's factor (its lr over its base)."""

    def __init__(self, schedulers, optimizer=None):
        self._schedulers = list(schedulers)
        self.optimizer = optimizer if optimizer is not None else self._schedulers[0].optimizer
        self._combine()

    def _combine(self):
        for i, group in enumerate(self.optimizer.param_groups):
            lr = group["initial_lr"]
            for scheduler in self._schedulers:
                if isinstance(scheduler, LRScheduler) and scheduler.base_lrs[i]:
                    lr *= scheduler.lr_at(scheduler.last_epoch)[i] / scheduler.base_lrs[i]
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def step(self):
        for scheduler in self._schedulers:
            scheduler.step()
        self._combine()

    def get_last_lr(self):
        return list(self._last_lr)


class ReduceLROnPlateau:
    """Multiply the lr by `factor` when the metric given to `step(metric)` has not improved (by
    `threshold`, 'rel' or 'abs', in `mode` 'min' or 'max') for `patience` epochs; then wait `cooldown`."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau: factor must be < 1.0")
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError("ReduceLROnPlateau: mode is 'min' or 'max', threshold_mode 'rel' or 'abs'")
        self.optimizer, self.mode, self.factor, self.patience = optimizer, mode, float(factor), int(patience)
        self.threshold, self.threshold_mode, self.cooldown, self.eps = float(threshold), threshold_mode, \
            int(cooldown), float(eps)
        groups = optimizer.param_groups
        self.min_lrs = list(min_lr) if isinstance(min_lr, (list, tuple)) else [float(min_lr)] * len(groups)
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs, self.cooldown_counter, self.last_epoch = 0, 0, 0
        self._last_lr = [group["lr"] for group in groups]

    def _better(self, a, best):
        if self.mode == "min":
            return a < (best * (1 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return a > (best * (1 + self.threshold) if self.threshold_mode == "rel" else best + self.threshold)

    def step(self, metrics):
        current = float(metrics)
        self.last_epoch += 1
        if self._better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, floor in zip(self.optimizer.param_groups, self.min_lrs):
                new = max(group["lr"] * self.factor, floor)
                if group["lr"] - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self):
        return list(self._last_lr)

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "LinearLR",
           "OneCycleLR", "ReduceLROnPlateau", "ConstantLR", "PolynomialLR", "MultiplicativeLR",
           "CosineAnnealingWarmRestarts", "CyclicLR", "SequentialLR", "ChainedScheduler"]
