"""meshccl: connected-component labelling on the GPU (CuPy) and CPU (compiled C++).

``meshccl.label`` labels images, volumes and lattices (as
``skimage.measure.label``); ``meshccl.ndimage.label`` is
``scipy.ndimage.label``'s interface; ``meshccl.measure`` computes per-label
statistics and operations on components; ``meshccl.graph`` labels graphs.
PyTorch tensors and JAX arrays are taken wherever NumPy and CuPy arrays
are (neither is imported here).  Nothing here compiles or touches a GPU at
import time; kernels are compiled on first use.
"""

from . import measure, ndimage
from .errors import NotConverged
from .labelling import gpu_available, label

__version__ = "0.1.0"
__all__ = ["label", "measure", "ndimage", "gpu_available", "NotConverged", "__version__"]
