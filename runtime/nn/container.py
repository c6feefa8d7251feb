"""Sequential: layers applied one after another, indexable like a list."""
from collections import OrderedDict

from .layer import Layer


class Sequential(Layer):
    """`Sequential(l0, l1, ...)` (sublayers named "0", "1", ...) or `Sequential(OrderedDict(name=layer))`."""

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (dict, OrderedDict)):
            for name, layer in layers[0].items():
                self.add_sublayer(name, layer)
        else:
            for i, layer in enumerate(layers):
                self.add_sublayer(str(i), layer)

    def forward(self, x):
        for layer in self._sublayers.values():
            x = layer(x)
        return x

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
            return Sequential(OrderedDict(items[index]))
        if not -len(items) <= index < len(items):
            raise IndexError(f"index {index} is out of range for a Sequential of {len(items)} layers")
        return items[index][1]
