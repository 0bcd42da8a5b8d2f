"""meshccl: connected-component labelling on the GPU (CuPy) and CPU (numba).

Nothing here compiles or touches a GPU at import time; kernels are compiled
on first use.
"""

from .errors import NotConverged
from .labelling import gpu_available, label

__version__ = "0.1.0"
__all__ = ["label", "gpu_available", "NotConverged", "__version__"]
