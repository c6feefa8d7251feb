"""`runtime.utils`: PyTorch's `torch.utils` names that training scripts import (`utils.data`)."""
from . import data  # noqa: F401

__all__ = ["data"]
