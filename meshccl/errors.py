"""Exceptions meshccl raises beyond Python's own."""


class NotConverged(RuntimeError):
    """An iterative method ran out of passes.

    Raised when ``method='A'``, ``'B'``, ``'C'``, ``'D'``, ``'cpu1'`` or
    ``'cpu2'`` used up ``max_iterations`` passes, every one of which still
    changed labels.  A subclass of ``RuntimeError``.

    Examples
    --------
    >>> import numpy as np
    >>> import meshccl
    >>> try:
    ...     meshccl.label(np.ones((1, 50), np.uint8), method="A", max_iterations=3)
    ... except meshccl.NotConverged:
    ...     print("not converged")
    not converged
    """
