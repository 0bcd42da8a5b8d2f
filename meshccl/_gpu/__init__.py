"""GPU backend (CuPy): launches the kernels of ``kernels/*.cu``."""
