"""Optimizers (`rt.optim`): PyTorch's SGD, Adam, AdamW, Adamax, NAdam, RAdam, Adagrad, Adadelta and RMSprop, with their
update formulas and defaults.

An update is written with runtime ops and stored with `set_value`, so one `step()`
runs eagerly or records into a Program (a whole training step under `@to_static`
writes the parameters and the optimizer's state after every run).
"""
from .optimizer import Optimizer, ParamGroup
from .sgd import SGD
from .adam import Adam, AdamW
from .adaptive import Adadelta, Adagrad, RMSprop
from .adam_variants import Adamax, NAdam, RAdam
from . import lr_scheduler

__all__ = ["Optimizer", "ParamGroup", "SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "RMSprop", "Adamax", "NAdam", "RAdam",
           "lr_scheduler"]
