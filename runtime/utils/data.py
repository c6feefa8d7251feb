"""`runtime.utils.data`: a minimal `Dataset`, `TensorDataset` and `DataLoader` with PyTorch's names.

Batches are made eagerly, in Python, from the dataset's items (what a static training step then takes
as its inputs); shuffling draws from the generator `rt.seed` / `rt.manual_seed` reset, so a seeded run
sees the same batches.
"""
import numpy as np

from .. import ops, rng
from ..ops.creation import asarray
from ..tensor import Tensor


class Dataset:
    """Subclass it: `__getitem__(i)` gives one item, `__len__` their number."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")


class TensorDataset(Dataset):
    """Item i is the tuple of row i of each tensor (all with the same number of rows)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = {t.shape[0] for t in tensors}
        if len(sizes) != 1:
            raise ValueError(f"TensorDataset: the tensors have different numbers of rows: {sorted(sizes)}")
        self.tensors = tuple(t if isinstance(t, Tensor) else asarray(t) for t in tensors)

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


def default_collate(items):
    """Stack a list of items into a batch: tensors stacked on a new first dim, numbers into a tensor,
    tuples/lists/dicts field by field."""
    first = items[0]
    if isinstance(first, Tensor):
        return ops.stack(list(items))
    if isinstance(first, np.ndarray):
        return asarray(np.stack(items))
    if isinstance(first, (bool, int, float, np.number)):
        return asarray(np.asarray(items))
    if isinstance(first, dict):
        return {key: default_collate([item[key] for item in items]) for key in first}
    if isinstance(first, (tuple, list)):
        return type(first)(default_collate(list(field)) for field in zip(*items)) if isinstance(first, tuple) \
            else [default_collate(list(field)) for field in zip(*items)]
    return list(items)


class DataLoader:
    """Batches of `batch_size` items of `dataset`, in order or shuffled each epoch, the last smaller
    unless `drop_last`. `num_workers` and the other loading options are accepted and load in this
    process."""

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 generator=None, prefetch_factor=None, persistent_workers=False):
        if batch_size is not None and int(batch_size) < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, bool(shuffle), \
            bool(drop_last)
        self.sampler = sampler
        self.collate_fn = collate_fn or default_collate

    def _order(self):
        if self.sampler is not None:
            return list(self.sampler)
        n = len(self.dataset)
        return list(rng.default_rng().permutation(n)) if self.shuffle else list(range(n))

    def __iter__(self):
        order = self._order()
        if self.batch_size is None:
            for i in order:
                yield self.dataset[int(i)]
            return
        size = int(self.batch_size)
        for start in range(0, len(order), size):
            chunk = order[start:start + size]
            if len(chunk) < size and self.drop_last:
                return
            yield self.collate_fn([self.dataset[int(i)] for i in chunk])

    def __len__(self):
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        size = int(self.batch_size)
        return n // size if self.drop_last else -(-n // size)


__all__ = ["Dataset", "TensorDataset", "DataLoader", "default_collate"]
