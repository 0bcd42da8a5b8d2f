"""CPU backend: the compiled C++ core (``core/``) and the numba paths not moved yet."""
