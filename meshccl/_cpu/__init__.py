"""CPU backend: the compiled C++ core (``core/``, :mod:`meshccl._cpu._core`) and the Python that prepares its arguments."""
