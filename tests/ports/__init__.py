"""PyTorch model files kept as their authors wrote them (see README.md), and `load`, which imports one
with only its `torch` imports changed to `runtime` (or as it is, for torch)."""
import importlib.util
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).parent

_IMPORTS = [   # each PyTorch import line and the same line for runtime
    (re.compile(r"^import torch$", re.M), "import runtime as torch"),
    (re.compile(r"^import torch\.nn as nn$", re.M), "import runtime.nn as nn"),
    (re.compile(r"^import torch\.nn\.functional as F$", re.M), "import runtime.nn.functional as F"),
    (re.compile(r"^import torch\.optim as optim$", re.M), "import runtime.optim as optim"),
    (re.compile(r"^from torch\.optim\.lr_scheduler import (.+)$", re.M), r"from runtime.optim.lr_scheduler import \1"),
    (re.compile(r"^from torch\.utils\.data import (.+)$", re.M), r"from runtime.utils.data import \1"),
    (re.compile(r"^from torch\.nn import functional as F$", re.M), "from runtime.nn import functional as F"),
    (re.compile(r"^from torch\.nn\.functional import (.+)$", re.M), r"from runtime.nn.functional import \1"),
    (re.compile(r"^from torch import (\w+(?:, \w+)*)$", re.M), r"from runtime import \1"),
]


def port_source(text):
    """The file's text with its torch imports changed to runtime's, and nothing else."""
    for pattern, replacement in _IMPORTS:
        text = pattern.sub(replacement, text)
    return text


def load(name, tmp_path, backend="runtime"):
    """Import ports/NAME.py: with backend "torch" as it is, with "runtime" from a copy under tmp_path whose
    imports are changed (a file, so to_static can read the source)."""
    source = (HERE / f"{name}.py").read_text()
    if backend == "runtime":
        path = tmp_path / f"{name}_ported.py"
        path.write_text(port_source(source))
        module_name = f"ports_{name}_ported_{abs(hash(str(tmp_path)))}"
    else:
        path = HERE / f"{name}.py"
        module_name = f"ports_{name}_torch"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module       # dataclasses read their module's globals from sys.modules
    spec.loader.exec_module(module)
    return module
