"""CPU backend (numba): the same algorithms as the GPU kernels, run serially."""
