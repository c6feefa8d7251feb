"""Every workload the runner knows: the micro-benchmarks (W1-W6, R5) and the real models (R1-R7)."""
from .models import MODEL_LABELS, MODEL_WORKLOADS
from .workloads import GPU_WORKLOADS as _GPU_MICRO, LABELS, WORKLOADS

ALL = {**WORKLOADS, **MODEL_WORKLOADS}
GPU_WORKLOADS = (*_GPU_MICRO, *MODEL_WORKLOADS)     # what `--device gpu` runs, each against hand-written CuPy
ALL_LABELS = {**LABELS, **MODEL_LABELS}
__all__ = ["ALL", "ALL_LABELS", "GPU_WORKLOADS", "MODEL_WORKLOADS"]
