"""Exceptions meshccl raises beyond Python's own."""


class NotConverged(RuntimeError):
    """An iterative method (``method='A'``, ``'B'``, ``'C'``, ``'D'``, ``'cpu1'``,
    ``'cpu2'``) used up ``max_iterations`` passes, every one of which still
    changed labels."""
