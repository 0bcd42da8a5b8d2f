"""meshccl: connected-component labelling on the GPU (CuPy) and CPU (numba).

``meshccl.label`` labels images, volumes and lattices; ``meshccl.measure``
computes per-label statistics and operations on components;
``meshccl.graph`` labels graphs.  Nothing here compiles or touches a GPU at
import time; kernels are compiled on first use.
"""

from . import measure
from .errors import NotConverged
from .labelling import gpu_available, label

__version__ = "0.1.0"
__all__ = ["label", "measure", "gpu_available", "NotConverged", "__version__"]
