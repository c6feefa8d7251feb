"""Containers: Sequential (layers applied one after another), LayerList and LayerDict (layers held by position
or name, no forward of their own)."""
from collections import OrderedDict

from ..tensor import Parameter
from .layer import Layer


class _LayerSequence(Layer):
    """Sublayers registered in order as "0", "1", ... (or given names), indexable like a list."""

    def append(self, layer):
        self.add_sublayer(str(len(self._sublayers)), layer)
        return self

    def __len__(self):
        return len(self._sublayers)

    def __iter__(self):
        return iter(list(self._sublayers.values()))

    def __getitem__(self, index):
        items = list(self._sublayers.items())
        if isinstance(index, slice):
            return self._from_items(items[index])
        if not -len(items) <= index < len(items):
            raise IndexError(f"index {index} is out of range for a {type(self).__name__} of {len(items)} layers")
        return items[index][1]


class Sequential(_LayerSequence):
    """`Sequential(l0, l1, ...)` (sublayers named "0", "1", ...), `Sequential(OrderedDict(name=layer))` or
    Paddle's `Sequential((name, layer), ...)`."""

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (dict, OrderedDict)):
            for name, layer in layers[0].items():
                self.add_sublayer(name, layer)
        elif layers and all(isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                            for item in layers):
            for name, layer in layers:
                self.add_sublayer(name, layer)
        else:
            for i, layer in enumerate(layers):
                self.add_sublayer(str(i), layer)

    @staticmethod
    def _from_items(items):
        return Sequential(OrderedDict(items))      # a slice keeps the layers' names

    def forward(self, x):
        for layer in self._sublayers.values():
            x = layer(x)
        return x


class LayerList(_LayerSequence):
    """A list of layers (PyTorch's ModuleList): registered as "0", "1", ...; no forward of its own."""

    def __init__(self, layers=()):
        super().__init__()
        self.extend(layers)

    @staticmethod
    def _from_items(items):
        return LayerList(layer for _, layer in items)

    def extend(self, layers):
        for layer in layers:
            self.append(layer)
        return self

    def insert(self, index, layer):
        items = list(self._sublayers.values())
        items.insert(index, layer)
        self._sublayers.clear()
        self.extend(items)

    def __setitem__(self, index, layer):
        names = list(self._sublayers)
        self.add_sublayer(names[index], layer)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("LayerList has no forward: iterate over it and call its layers")


class LayerDict(Layer):
    """A dict of layers (PyTorch's ModuleDict), in insertion order."""

    def __init__(self, layers=None):
        super().__init__()
        for name, layer in (dict(layers) if layers is not None else {}).items():
            self.add_sublayer(name, layer)

    def __getitem__(self, name):
        return self._sublayers[name]

    def __setitem__(self, name, layer):
        self.add_sublayer(name, layer)

    def __delitem__(self, name):
        del self._sublayers[name]

    def __contains__(self, name):
        return name in self._sublayers

    def __len__(self):
        return len(self._sublayers)

    def __iter__(self):
        return iter(list(self._sublayers))

    def keys(self):
        return list(self._sublayers)

    def values(self):
        return list(self._sublayers.values())

    def items(self):
        return list(self._sublayers.items())

    def update(self, layers):
        for name, layer in dict(layers).items():
            self.add_sublayer(name, layer)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("LayerDict has no forward: look its layers up by name and call them")


class ParameterList(Layer):
    """Parameters held by position (PyTorch's nn.ParameterList), registered as "0", "1", ..."""

    def __init__(self, values=None):
        super().__init__()
        for value in values or ():
            self.append(value)

    def append(self, value):
        self.register_parameter(str(len(self._parameters)), _as_parameter(value))
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def __getitem__(self, index):
        return list(self._parameters.values())[index]

    def __setitem__(self, index, value):
        keys = list(self._parameters)
        self.register_parameter(keys[index], _as_parameter(value))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(list(self._parameters.values()))


class ParameterDict(Layer):
    """Parameters held by name (PyTorch's nn.ParameterDict)."""

    def __init__(self, parameters=None):
        super().__init__()
        for name, value in (parameters or {}).items():
            self[name] = value

    def __getitem__(self, name):
        return self._parameters[name]

    def __setitem__(self, name, value):
        self.register_parameter(name, _as_parameter(value))

    def __contains__(self, name):
        return name in self._parameters

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(list(self._parameters))

    def keys(self):
        return list(self._parameters)

    def values(self):
        return list(self._parameters.values())

    def items(self):
        return list(self._parameters.items())


def _as_parameter(value):
    return value if isinstance(value, Parameter) or value is None else Parameter(value)
