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


class AsymmetricStructure(ValueError, AssertionError):
    """A structuring element that is not centrosymmetric.

    Raised by :func:`meshccl.ndimage.label` for a ``structure`` that is not
    equal to itself reversed along every axis, which
    ``scipy.ndimage.label`` refuses with an ``AssertionError``.  A
    subclass of both ``ValueError`` and ``AssertionError``, so code written
    for either catches it.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl import ndimage
    >>> try:
    ...     ndimage.label(np.ones((3, 3)), structure=[[1, 0, 0], [0, 1, 0], [0, 0, 0]])
    ... except AssertionError:
    ...     print("refused")
    refused
    """
