"""Layer: the base class of every network piece (PyTorch's Module, Paddle's Layer).

A Layer owns Parameters and sublayers, registered by plain attribute assignment
(`self.fc1 = Linear(8, 4)`), in that order; names are dotted paths ("fc1.weight").
Parameters are eager Tensors: a Program traced through a layer reads them as
persistable inputs, fed by reference on every run, so updating a Parameter's
`.data` (what `load_state_dict` does) changes what existing Programs compute.
Assigning to a buffer (`self.running_mean = ...`) writes into the buffer Tensor
(`set_value`), so a Program that computes the value writes it after each run.
"""
import copy
import functools
from collections import namedtuple

import numpy as np

from .. import tracing
from ..autodiff.traced import set_grad
from ..backends import get_backend
from ..buffers import escape
from ..shape_text import shape_text
from ..tensor import EagerTensor, Parameter, Tensor
from ..torch_methods import to_arguments
from ..tracer import Tracer
from . import init

LoadResult = namedtuple("LoadResult", ["missing_keys", "unexpected_keys"])


class Listing(list):
    """What `parameters()`, `named_modules()` and the other walks return: a list (len, indexing, `+`) that
    `next()` also walks, as PyTorch's generators are walked (`next(model.parameters())`)."""

    def __next__(self):
        walk = self.__dict__.get("_walk")
        if walk is None:
            walk = self.__dict__["_walk"] = iter(list(self))
        return next(walk)


class Layer:
    """Subclass it, assign Parameters and Layers as attributes in `__init__`, define `forward`."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_sublayers", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_hook_version", 0)   # counts hook registrations; guarded like training

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("runtime.nn") and "__init__" in cls.__dict__:
            cls.__init__ = _taking_device_and_dtype(cls.__dict__["__init__"])

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        # while tracing, a user's forward is converted even when library code (Sequential) calls it
        if self.__dict__.get("_hook_version"):
            return self._call_with_hooks(args, kwargs)
        return tracing.converted(self.forward)(*args, **kwargs)

    # --- forward hooks (PyTorch's and Paddle's) ---------------------------------------------
    def register_forward_pre_hook(self, hook):
        """hook(layer, args) runs before forward; a value it returns replaces the positional arguments
        (a non-tuple as the one argument). Returns a handle whose remove() unregisters it."""
        return self._add_hook("_forward_pre_hooks", hook)

    def register_forward_post_hook(self, hook):
        """hook(layer, args, output) runs after forward; a value it returns replaces the output."""
        return self._add_hook("_forward_post_hooks", hook)

    register_forward_hook = register_forward_post_hook

    def _add_hook(self, kind, hook):
        if not callable(hook):
            raise TypeError(f"a forward hook must be callable, got {type(hook).__name__}")
        hooks = self.__dict__.setdefault(kind, {})
        key = self.__dict__.get("_hook_version", 0) + 1
        hooks[key] = hook
        # the version is guarded like `training`: a static function that calls this layer retraces
        object.__setattr__(self, "_hook_version", key)
        return HookHandle(self, kind, key)

    def _call_with_hooks(self, args, kwargs):
        d = self.__dict__
        for hook in list(d.get("_forward_pre_hooks", {}).values()):
            result = tracing.converted(hook)(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        output = tracing.converted(self.forward)(*args, **kwargs)
        for hook in list(d.get("_forward_post_hooks", {}).values()):
            result = tracing.converted(hook)(self, args, output)
            if result is not None:
                output = result
        return output

    # --- registration -------------------------------------------------------------------
    def _registry(self, name):
        registry = self.__dict__.get(name)
        if registry is None:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning "
                                 "parameters or sublayers")
        return registry

    def _forget(self, name):
        self.__dict__.pop(name, None)
        for registry in _REGISTRIES:
            self.__dict__.get(registry, {}).pop(name, None)

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        sublayers = self.__dict__.get("_sublayers")
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            if _writes_into(buffers[name], value):
                buffers[name].set_value(value)
                return
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r} of "
                                f"{type(self).__name__} (a Tensor or None is expected)")
            buffers[name] = value
        elif isinstance(value, Parameter) and isinstance(value, EagerTensor):   # not a captured one, traced
            registry = self._registry("_parameters")
            self._forget(name)
            registry[name] = value
        elif isinstance(value, Layer):
            registry = self._registry("_sublayers")
            self._forget(name)
            registry[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as parameter {name!r} of "
                                f"{type(self).__name__} (a runtime.Parameter or None is expected)")
            params[name] = None
        elif sublayers is not None and name in sublayers:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as sublayer {name!r} of "
                                f"{type(self).__name__} (a Layer or None is expected)")
            sublayers[name] = None
        else:
            object.__setattr__(self, name, value)

    def __reduce_ex__(self, protocol):
        # to_static(layer) puts a static forward on the instance: the layer pickles as that
        # function's Program and parameters (never code); any other layer as a plain object
        static = self._static_forward()
        if static is not None:
            return static.__reduce__()
        return super().__reduce_ex__(protocol)

    # the copy module would otherwise take __reduce_ex__ and make a to_static layer its Program
    def __copy__(self):
        copied = self._blank_copy()
        copied.__dict__.update(self.__dict__)
        return copied

    def __deepcopy__(self, memo):
        copied = self._blank_copy()
        memo[id(self)] = copied
        copied.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return copied

    def _blank_copy(self):
        if self._static_forward() is not None:
            raise TypeError(f"a to_static {type(self).__name__} cannot be copied (it pickles as its Program); "
                            "copy the layer before to_static")
        return object.__new__(type(self))

    def _static_forward(self):
        static = self.__dict__.get("forward")
        return static if hasattr(type(static), "deployed_program") else None

    def __getattr__(self, name):
        # only reached when ordinary lookup fails: parameters and sublayers live in their registries
        d = self.__dict__
        for registry in _REGISTRIES:
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        d = self.__dict__
        for registry in _REGISTRIES:
            if registry in d and name in d[registry]:
                del d[registry][name]
                return
        object.__delattr__(self, name)

    def _check_new_name(self, name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name must be a str, got {type(name).__name__}")
        if not name or "." in name:
            raise KeyError(f"{kind} name must be non-empty and contain no '.', got {name!r}")
        if name in self.__dict__ or (hasattr(type(self), name)):
            raise KeyError(f"{type(self).__name__} already has an attribute {name!r}")

    def register_parameter(self, name, param):
        """Register `param` (a Parameter, or None for an absent one such as bias=False) under `name`."""
        registry = self._registry("_parameters")
        if name not in registry:
            self._check_new_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot register {type(param).__name__} as parameter {name!r} "
                            "(a runtime.Parameter or None is expected)")
        self._forget(name)
        registry[name] = param
        return param

    def add_parameter(self, name, parameter):
        """Paddle's name for register_parameter; returns the parameter."""
        return self.register_parameter(name, parameter)

    def create_parameter(self, shape, attr=None, dtype="float32", is_bias=False, default_initializer=None):
        """A new Parameter of `shape` (not registered: assign it to an attribute or add_parameter it), as
        Paddle's: zeros for a bias, Xavier-uniform otherwise, unless `default_initializer(tensor)` fills it."""
        param = new_parameter(shape, dtype)
        if default_initializer is not None:
            default_initializer(param)
        elif not is_bias:
            init.xavier_uniform_(param)
        return param

    def clear_gradients(self):
        """Paddle's name: every parameter's `.grad` back to None."""
        for name, param in self.named_parameters():
            set_grad(param, None, f"{name}.grad")

    def apply(self, fn):
        """fn(layer) on every sublayer, then on this one (initialization code); returns self."""
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    def register_buffer(self, name, tensor, persistent=True):
        """Register state that is not a parameter (BatchNorm's running statistics) under `name`.

        A buffer is in `state_dict` (unless persistent=False), moves with `.to(device)`, and
        a traced Program reads it as a persistable input like a parameter.
        """
        registry = self._registry("_buffers")
        if name not in registry:
            self._check_new_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            tensor = Tensor(get_backend("cpu").asarray(tensor), get_backend("cpu"))
            escape(tensor.array)        # the caller's array when it needed no copy: it may write into it
        self._forget(name)
        registry[name] = tensor
        if not persistent:
            self.__dict__.setdefault("_non_persistent", set()).add(name)
        return tensor

    def named_buffers(self, prefix=""):
        """(dotted name, Tensor) of every buffer of this layer and its sublayers."""
        out = [(f"{prefix}{n}", b) for n, b in self._buffers.items() if b is not None]
        for name, layer in self._sublayers.items():
            if layer is not None:
                out.extend(layer.named_buffers(f"{prefix}{name}."))
        return Listing(out)

    def buffers(self, recurse=True):
        return Listing(b for _, b in self.named_buffers())

    def _state_items(self, prefix=""):
        """(dotted name, Tensor) of everything state_dict holds: parameters, then persistent buffers."""
        out = [(f"{prefix}{n}", p) for n, p in self._parameters.items() if p is not None]
        skip = self.__dict__.get("_non_persistent", ())
        out += [(f"{prefix}{n}", b) for n, b in self._buffers.items() if b is not None and n not in skip]
        for name, layer in self._sublayers.items():
            if layer is not None:
                out.extend(layer._state_items(f"{prefix}{name}."))
        return out

    def add_sublayer(self, name, layer):
        """Register `layer` (or None) under `name`; returns the layer."""
        registry = self._registry("_sublayers")
        name = str(name) if isinstance(name, int) else name
        if name not in registry:
            self._check_new_name(name, "sublayer")
        if layer is not None and not isinstance(layer, Layer):
            raise TypeError(f"cannot add {type(layer).__name__} as sublayer {name!r} (a Layer or None is expected)")
        self._forget(name)
        registry[name] = layer
        return layer

    # --- traversal ----------------------------------------------------------------------
    def named_children(self):
        """(name, layer) of the direct sublayers, in registration order."""
        seen, out = set(), []
        for name, layer in self._sublayers.items():
            if layer is not None and id(layer) not in seen:
                seen.add(id(layer))
                out.append((name, layer))
        return Listing(out)

    def children(self):
        return Listing(layer for _, layer in self.named_children())

    def named_sublayers(self, prefix="", include_self=False):
        """(dotted name, layer) of every nested sublayer, depth first, each layer once."""
        out, seen = [], set()

        def visit(layer, path):
            if id(layer) in seen:
                return
            seen.add(id(layer))
            out.append((path, layer))
            for name, sub in layer._sublayers.items():
                if sub is not None:
                    visit(sub, f"{path}.{name}" if path else name)
        visit(self, prefix)
        return Listing(out if include_self else out[1:])

    def sublayers(self, include_self=False):
        return Listing(layer for _, layer in self.named_sublayers(include_self=include_self))

    def _all_named_parameters(self, prefix=""):
        """Every (dotted name, Parameter), shared ones under each of their names (state_dict's keys)."""
        out = []
        for name, param in self._parameters.items():
            if param is not None:
                out.append((f"{prefix}{name}", param))
        for name, layer in self._sublayers.items():
            if layer is not None:
                out.extend(layer._all_named_parameters(f"{prefix}{name}."))
        return out

    def named_parameters(self, prefix="", include_sublayers=True, remove_duplicate=True, *, recurse=None):
        """(dotted name, Parameter) in registration order, each Parameter once (a list)."""
        prefix = f"{prefix}." if prefix else ""
        include_sublayers = include_sublayers if recurse is None else recurse
        pairs = (self._all_named_parameters(prefix) if include_sublayers else
                 [(prefix + n, p) for n, p in self._parameters.items() if p is not None])
        seen, out = set(), []
        for name, param in pairs:
            if id(param) not in seen:
                seen.add(id(param))
                out.append((name, param))
        return Listing(out)

    def parameters(self, include_sublayers=True, *, recurse=None):
        return Listing(p for _, p in self.named_parameters(include_sublayers=include_sublayers, recurse=recurse))

    # --- state --------------------------------------------------------------------------
    def state_dict(self):
        """name -> Tensor holding each parameter's (and persistent buffer's) current value (sharing its array)."""
        return {name: Tensor(p.array, p.backend) for name, p in self._state_items()}

    def load_state_dict(self, state_dict, strict=True):
        """Set parameters from `state_dict` (name -> Tensor or array), all or nothing.

        Keys must match exactly (unless strict=False), and each value must have its parameter's shape;
        a value of another dtype of the same kind is cast as PyTorch's copy does (float64 into a float32
        parameter), another kind is an error. Values may be any array with `__dlpack__` (a torch tensor:
        no torch import needed) or a `.numpy()`.
        The existing Parameter objects get the new values, so Programs already
        traced through this layer use them on their next run.
        """
        own = dict(self._state_items())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        problems = []
        if strict and missing:
            problems.append("missing key(s): " + ", ".join(repr(k) for k in missing))
        if strict and unexpected:
            problems.append("unexpected key(s): " + ", ".join(repr(k) for k in unexpected))
        updates = []
        for name, param in own.items():
            if name not in state_dict:
                continue
            value = _foreign_array(state_dict[name])
            shape, dtype = _shape_dtype(value)
            if shape != param.shape:
                problems.append(f"shape mismatch for {name!r}: the value has shape {shape_text(shape)}, "
                                f"the parameter has shape {shape_text(param.shape)}")
            elif dtype != param.dtype and not (dtype.kind == param.dtype.kind or
                                                (dtype.kind in "iu" and param.dtype.kind in "iu")):
                problems.append(f"dtype mismatch for {name!r}: the value is {dtype}, the parameter is "
                                f"{param.dtype}; cast it with .astype('{param.dtype}')")
            else:
                updates.append((param, value))
        if problems:
            raise ValueError(f"error(s) loading state_dict into {type(self).__name__}:\n  " + "\n  ".join(problems))
        for param, value in updates:
            data = _copy_onto(param.backend, value)
            param.array = data if data.dtype == param.dtype else data.astype(param.dtype)
        return LoadResult(missing, unexpected)

    def set_state_dict(self, state_dict):
        """Paddle's name for load_state_dict."""
        return self.load_state_dict(state_dict)

    # --- modes and devices --------------------------------------------------------------
    def train(self, mode=True):
        """Training mode (dropout active) for this layer and every sublayer; returns self."""
        for layer in self.sublayers(include_self=True):
            layer.training = bool(mode)
        return self

    def eval(self):
        return self.train(False)

    def to(self, *args, **kwargs):
        """Move every parameter and buffer to a device ("cpu" or "gpu"; PyTorch's "cuda" is "gpu") and/or cast
        the floating-point ones to a float dtype, in place (`to(device)`, `to(dtype)`, `to(device, dtype)`, as
        PyTorch's); returns self. Make optimizers after this: their state is made beside each parameter."""
        device, dtype = to_arguments(args, dict(kwargs))
        if dtype is not None and np.dtype(dtype).kind not in "fc":
            raise TypeError(f"{type(self).__name__}.to() casts floating-point parameters to a floating-point "
                            f"dtype, got {np.dtype(dtype).name}")
        backend = None if device is None else get_backend(device)
        for param in self.parameters() + self.buffers():
            if dtype is not None and param.dtype.kind == np.dtype(dtype).kind and param.dtype != np.dtype(dtype):
                param.array = param.array.astype(dtype)
                param.grad = None
            if backend is not None and param.backend is not backend:
                param.array = backend.asarray(param.backend.to_numpy(param.array))
                param.backend = backend
        return self

    # --- PyTorch's names for the same things (nn.Module) -----------------------------------
    def float(self):
        return self.to(np.float32)

    def double(self):
        return self.to(np.float64)

    def half(self):
        return self.to(np.float16)

    def cuda(self, device=None):
        return self.to("gpu")

    def cpu(self):
        return self.to("cpu")

    def type(self, dst_type):
        return self.to(dst_type)

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, layer) of this layer ("") and every nested one, each once."""
        return self.named_sublayers(prefix=prefix, include_self=True)

    def modules(self):
        return self.sublayers(include_self=True)

    def add_module(self, name, module):
        return self.add_sublayer(name, module)

    register_module = add_module

    def get_submodule(self, target):
        """The layer at a dotted path ("encoder.layers.0"); "" is this one."""
        layer = self
        for part in target.split(".") if target else ():
            sub = layer._sublayers.get(part)
            if sub is None:
                raise AttributeError(f"{type(layer).__name__} has no sublayer {part!r} (in {target!r})")
            layer = sub
        return layer

    def zero_grad(self, set_to_none=True):
        """Every parameter's `.grad` to None (or to zeros with set_to_none=False)."""
        for param in self.parameters():
            if set_to_none or param.grad is None:
                param.grad = None
            else:
                param.grad = Tensor(param.backend.xp.zeros_like(param.array), param.backend)

    def requires_grad_(self, requires_grad=True):
        for param in self.parameters():
            param.requires_grad = requires_grad
        return self

    def get_parameter(self, target):
        path, _, name = target.rpartition(".")
        return getattr(self.get_submodule(path), name)

    # --- display ------------------------------------------------------------------------
    def extra_repr(self):
        """The text inside this layer's parentheses in repr (its configuration)."""
        return ""

    def __repr__(self):
        lines = [f"({name}): " + repr(layer).replace("\n", "\n  ") for name, layer in self._sublayers.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        body = "\n  ".join(([extra] if extra else []) + lines)
        return f"{type(self).__name__}(\n  {body}\n)"


_REGISTRIES = ("_parameters", "_sublayers", "_buffers")


def _taking_device_and_dtype(init):
    """A library layer's constructor that also takes PyTorch's `device=` and `dtype=` (`nn.Linear(4, 2,
    dtype=rt.float64)`): the layer is made as usual, then moved/cast with `to`."""
    @functools.wraps(init)
    def constructor(self, *args, device=None, dtype=None, **kwargs):
        init(self, *args, **kwargs)
        if device is not None or dtype is not None:
            self.to(device, dtype)
    return constructor


def _writes_into(buffer, value):
    """Whether assigning `value` to a buffer writes into the buffer Tensor (it keeps its identity, and
    a Program computing the value writes it after each run) rather than replacing it."""
    if buffer is None or value is buffer:
        return False
    if isinstance(value, Tracer):
        return True
    return isinstance(value, Tensor) and value.shape == buffer.shape and value.dtype == buffer.dtype


def _foreign_array(value):
    """A NumPy array for a value from another library (a torch tensor: detached, through DLPack or its
    `.numpy()`); our Tensors and NumPy/CuPy arrays as they are."""
    if isinstance(value, (Tensor, np.ndarray)) or hasattr(value, "__cuda_array_interface__") or \
            isinstance(value, (list, tuple, int, float)):
        return value
    if hasattr(value, "detach"):
        value = value.detach()
    if hasattr(value, "cpu"):
        value = value.cpu()
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, RuntimeError, BufferError):
            pass
    return value.numpy() if hasattr(value, "numpy") else value


def _shape_dtype(value):
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return tuple(value.shape), np.dtype(value.dtype)
    array = np.asarray(value)
    return array.shape, array.dtype


def _copy_onto(backend, value):
    """A fresh array on `backend` holding `value` (a Tensor, NumPy/CuPy array or nested list)."""
    if isinstance(value, Tensor):
        if value.backend is backend:
            return backend.xp.array(value.array, copy=True)
        value = value.backend.to_numpy(value.array)
    if backend.is_native(value):
        return backend.xp.array(value, copy=True)
    return backend.asarray(np.array(get_backend("cpu").asarray(value), copy=True))


class HookHandle:
    """What register_forward_*_hook returns: remove() unregisters the hook (and retraces its callers)."""

    def __init__(self, layer, kind, key):
        self.layer, self.kind, self.key = layer, kind, key

    def remove(self):
        d = self.layer.__dict__
        if d.get(self.kind, {}).pop(self.key, None) is not None:
            object.__setattr__(self.layer, "_hook_version", d["_hook_version"] + 1)


def new_parameter(shape, dtype="float32"):
    """A zero-filled Parameter on the CPU, for a layer's initializer to fill."""
    cpu = get_backend("cpu")
    return Parameter(np.zeros(tuple(int(d) for d in shape), dtype=dtype), cpu)
