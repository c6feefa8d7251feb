"""BatchNorm1D/2D/3D, GroupNorm and InstanceNorm1D/2D/3D, with PyTorch's parameters, buffers and defaults.

BatchNorm keeps `running_mean`/`running_var` (and `num_batches_tracked`) as
buffers: in state_dict, moved by `.to()`, read by a traced Program as inputs.
Training mode normalizes by the batch and updates the running statistics by
assigning the buffers: eagerly now, and in a static forward as outputs of the
Program that each run writes into the same buffer Tensors (runtime.writes).
"""
from .. import ops as rt
from ..shape_text import shape_text
from ..autodiff.tape import no_grad
from . import composite, init
from .layer import Layer, new_parameter


def _scale_and_shift(layer, n, affine):
    """The learned per-channel weight (ones) and bias (zeros), or None for both when not affine."""
    if affine:
        layer.weight = init.ones_(new_parameter((n,)))
        layer.bias = new_parameter((n,))
    else:
        layer.register_parameter("weight", None)
        layer.register_parameter("bias", None)


class _BatchNorm(Layer):
    _ranks = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = int(num_features), float(eps), momentum
        self.affine, self.track_running_stats = bool(affine), bool(track_running_stats)
        _scale_and_shift(self, self.num_features, affine)
        if track_running_stats:
            self.register_buffer("running_mean", rt.zeros((self.num_features,)))
            self.register_buffer("running_var", rt.ones((self.num_features,)))
            self.register_buffer("num_batches_tracked", rt.zeros((), dtype="int64"))
        else:
            self.running_mean = self.running_var = None

    def forward(self, x):
        shape = tuple(x.shape) if not hasattr(x, "static_shape") else x.static_shape
        if len(shape) not in self._ranks:
            raise ValueError(f"{type(self).__name__}: expected input of rank {' or '.join(map(str, self._ranks))}, "
                             f"got shape {shape_text(shape)}")
        if shape[1] not in (self.num_features, -1):
            raise ValueError(f"{type(self).__name__}: expected {self.num_features} channels, got shape {shape_text(shape)}")
        use_batch = self.training or not self.track_running_stats
        if use_batch and self.track_running_stats:
            self._update_running_stats(x)
        return composite.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                                    training=use_batch, eps=self.eps)

    def _update_running_stats(self, x):
        with no_grad():            # the statistics are not part of what backward() differentiates
            mean, var = composite.batch_statistics(x)
            self.num_batches_tracked = self.num_batches_tracked + 1
            if self.momentum is None:      # a cumulative average, as PyTorch
                m = 1.0 / rt.astype(self.num_batches_tracked, self.running_mean.dtype)
            else:
                m = self.momentum
            self.running_mean = (1 - m) * self.running_mean + m * mean
            self.running_var = (1 - m) * self.running_var + m * var

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1D(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) input."""
    _ranks = (2, 3)


class BatchNorm2D(_BatchNorm):
    """Batch normalization over (N, C, H, W) input."""
    _ranks = (4,)


class GroupNorm(Layer):
    """Normalize over groups of channels; weight ones and bias zeros per channel to start."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels, self.eps = int(num_groups), int(num_channels), float(eps)
        _scale_and_shift(self, self.num_channels, affine)

    def forward(self, x):
        return composite.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.weight is not None}"


class BatchNorm3D(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) input."""
    _ranks = (5,)


class _InstanceNorm(Layer):
    _ranks = ()

    def __init__(self, num_features, eps=1e-5, affine=False):
        super().__init__()
        self.num_features, self.eps = int(num_features), float(eps)
        _scale_and_shift(self, self.num_features, affine)

    def forward(self, x):
        shape = tuple(x.shape) if not hasattr(x, "static_shape") else x.static_shape
        if len(shape) not in self._ranks or shape[1] not in (self.num_features, -1):
            raise ValueError(f"{type(self).__name__}: expected input of rank {self._ranks[0]} with "
                             f"{self.num_features} channels, got shape {shape_text(shape)}")
        return composite.instance_norm(x, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_features}, eps={self.eps}, affine={self.weight is not None}"


class InstanceNorm1D(_InstanceNorm):
    """Instance normalization over (N, C, L) input (no running statistics; affine=False as PyTorch)."""
    _ranks = (3,)


class InstanceNorm2D(_InstanceNorm):
    """Instance normalization over (N, C, H, W) input (no running statistics; affine=False as PyTorch)."""
    _ranks = (4,)


class InstanceNorm3D(_InstanceNorm):
    _ranks = (5,)
