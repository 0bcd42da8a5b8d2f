"""``scipy.ndimage.label``'s interface, computed by meshccl.

:func:`label` takes what ``scipy.ndimage.label`` and
``cupyx.scipy.ndimage.label`` take and returns what they return, value for
value, so that code written for either switches by changing its import.
SciPy's rules, which differ from :func:`meshccl.label`'s (skimage's):

* every non-zero cell is foreground and the zeros are background: cells of
  different non-zero values join (``meshccl.label`` joins equal values);
* the neighbourhood is a ``structure``, a 3 x ... x 3 bool array whose
  centre is ignored, by default ``generate_binary_structure(ndim, 1)``;
* labels are int32 (``intp`` from 2**31 - 2 cells on), 1..N in raster order
  of each feature's first cell -- the same order as ``meshccl.label``.

A structure becomes its half neighbourhood
(:func:`meshccl.neighbourhood.structure_offsets`).  One that a
``connectivity`` (and ``axes``) of ``meshccl.label`` names --
``generate_binary_structure(ndim, c)``, that pattern along a subset of the
axes -- is labelled by ``meshccl.label`` (except, on the GPU, a 3-D
volume's along a subset other than the last one or two axes, which goes
the way of the other structures); any other centrosymmetric one (a
diagonal line, the corners only...) on the GPU by the runs3d-structure
chain in 3-D (:mod:`meshccl._gpu.runs3d_structure`) and the runsnd chain
otherwise (runs of rows, the neighbourhood from a table:
:mod:`meshccl._gpu.runs_nd`),
on the CPU by the per-cell union-find over its offset table; the empty
one gives every
foreground cell its own label.  Structures that are not centrosymmetric
are refused, as SciPy refuses them.

The work is one elementwise pass for the foreground (none for bool input)
and one labelling call.
"""

from __future__ import annotations

import contextlib

import numpy as np

from . import _interop, _validate, labelling, neighbourhood
from .errors import AsymmetricStructure
from .labelling import label as _mesh_label

__all__ = ["label"]

#: float output dtypes SciPy's label writes (float16 and longdouble: TypeError there)
_FLOAT_OUTPUTS = (np.dtype(np.float32), np.dtype(np.float64))


def _is_cupy(a) -> bool:
    return type(a).__module__.partition(".")[0] == "cupy"


def _input_array(input):
    """(xp, array): CuPy arrays as they are, anything else through NumPy."""
    if _is_cupy(input):
        import cupy

        return cupy, input
    return np, np.asarray(input)


def _structure(structure, ndim, size):
    """The half neighbourhood of ``structure`` (None: the default one),
    with SciPy's checks and errors.  As in SciPy, symmetry is checked
    only when there is something to label (a non-empty array of at least
    one axis)."""
    if structure is None:
        return neighbourhood.half_offsets(ndim, 1) if ndim else ()
    s = _interop.as_array(structure, "structure")
    if _is_cupy(s):
        s = s.get()
    s = np.asarray(s, dtype=bool)  # (as SciPy: any non-zero entry is a neighbour)
    if s.ndim != ndim:
        raise RuntimeError(f"structure and input must have equal rank: got a {s.ndim}-D "
                           f"structure (shape {s.shape}) for a {ndim}-D input")
    if any(k != 3 for k in s.shape):
        raise ValueError(f"structure dimensions must be equal to 3, got shape {s.shape}")
    if ndim == 0 or size == 0:
        return ()
    if not np.array_equal(s, s[(slice(None, None, -1),) * ndim]):
        raise AsymmetricStructure(
            "structure must be centrosymmetric (equal to itself reversed along every axis), "
            f"got {s.astype(np.uint8).tolist()}")
    return neighbourhood.structure_offsets(s)


def _check_output_dtype(dtype, name="output"):
    if dtype.kind in "biu" or dtype in _FLOAT_OUTPUTS:
        return dtype
    raise TypeError(f"{name} must have a bool, integer, float32 or float64 dtype (as SciPy's "
                    f"label writes), got {dtype}")


def _output(output, on_gpu, shape):
    """(dtype, array or None) of the ``output`` argument."""
    if output is None:
        return None, None
    if _interop.immutable(output):
        raise ValueError("output must be writeable, got a JAX array (JAX arrays are immutable: "
                         "pass a dtype, or None, and use the returned labels)")
    out = _interop.as_array(output, "output")
    if _interop.is_array(out):
        if _is_cupy(out) != on_gpu:
            raise TypeError(
                f"output must be a {'GPU' if on_gpu else 'host'} array like input, got a "
                f"{'GPU' if _is_cupy(out) else 'host'} array ({type(output).__name__})")
        if tuple(out.shape) != tuple(shape):
            raise ValueError(f"output shape not correct: output has shape {tuple(out.shape)}, "
                             f"input {tuple(shape)}")
        if not on_gpu and not out.flags.writeable:
            raise ValueError("output must be writeable, got a read-only array")
        return _check_output_dtype(out.dtype), out
    try:
        dtype = np.dtype(output)
    except TypeError as exc:
        raise TypeError("output must be None, a dtype or an array of input's shape, got "
                        f"{output!r}") from exc
    return _check_output_dtype(dtype), None


def _check_depth(n, dtype):
    """SciPy's RuntimeError when ``dtype`` cannot hold label ``n``: beyond
    its largest integer, 2**24 / 2**53 for float32 / float64 (the last
    exact integers), 255 for bool (SciPy writes bool output through a uint8
    view; the labels then read as True)."""
    if dtype.kind == "b":
        top = 255
    elif dtype.kind in "iu":
        top = np.iinfo(dtype).max
    else:
        top = 2 ** (np.finfo(dtype).nmant + 1)
    if n > top:
        raise RuntimeError(f"insufficient bit-depth in requested output type: {dtype} holds "
                           f"labels up to {top}, the input has {n} features")


def label(input, structure=None, output=None):
    """Label features in an array, exactly like ``scipy.ndimage.label``.

    Every non-zero cell of ``input`` is a feature cell and the zeros are
    background; feature cells that are neighbours under ``structure`` join.
    Labels run 1..N in raster (C) order of each feature's first cell, as
    SciPy's and CuPy's do.

    Parameters
    ----------
    input : array_like, cupy.ndarray, torch.Tensor or jax.Array
        Bool, integer or float values (NaN counts as non-zero, as in SciPy),
        any number of dimensions (0-d and empty too).  NumPy and
        array-likes are labelled on the CPU, CuPy arrays on their GPU;
        PyTorch tensors and JAX arrays are read without a copy on their
        device and the labels come back as the same kind.
    structure : array_like, optional
        A centrosymmetric 3 x ... x 3 structuring element (non-zero entries
        are neighbours; the centre is ignored), any of them, as SciPy
        takes it.  Default:
        ``scipy.ndimage.generate_binary_structure(input.ndim, 1)``.
    output : dtype or array, optional
        A dtype: the labels' dtype (bool, an integer type, float32 or
        float64).  An array of ``input``'s shape on the same side (host or
        GPU; a PyTorch tensor too, not an immutable JAX array): the labels
        are written into it and only N is returned.  ``output=input``
        labels in place.

    Returns
    -------
    labels : ndarray
        The labels, int32 (int64 from 2**31 - 2 cells on) unless ``output``
        names a dtype; NumPy, CuPy, PyTorch or JAX as ``input``.  Not
        returned when ``output`` is an array.
    num_features : int
        N, the number of features.

    Raises
    ------
    TypeError
        Complex input ("Complex type not supported", as SciPy), another
        non-numeric dtype, an ``output`` that is neither a dtype nor an
        array, an output dtype SciPy does not write (float16, complex...),
        or an output array on the other side (host / GPU) from ``input``.
    RuntimeError
        ``structure`` of a different rank from ``input`` (as SciPy), or an
        output dtype too narrow for N ("insufficient bit-depth in requested
        output type", as SciPy; the output array is then left untouched).
    ValueError
        A structure whose sides are not all 3 (as SciPy), or one that is
        not centrosymmetric (:class:`meshccl.errors.AsymmetricStructure`,
        also an ``AssertionError`` as SciPy's); an output array of another
        shape ("output shape not correct", as SciPy), read-only, or a JAX
        array.

    Notes
    -----
    This function may synchronize the device (to read N).

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl import ndimage
    >>> a = np.array([[0, 0, 1, 1, 0, 0],
    ...               [0, 0, 0, 1, 0, 0],
    ...               [1, 1, 0, 0, 1, 0],
    ...               [0, 0, 0, 1, 0, 0]])
    >>> labels, n = ndimage.label(a)
    >>> n
    4
    >>> labels
    array([[0, 0, 1, 1, 0, 0],
           [0, 0, 0, 1, 0, 0],
           [2, 2, 0, 0, 3, 0],
           [0, 0, 0, 4, 0, 0]], dtype=int32)
    >>> ndimage.label(a, structure=np.ones((3, 3)))[1]   # 8-connectivity
    2
    >>> out = np.zeros(a.shape, np.uint8)
    >>> ndimage.label(a, output=out)                       # filled in place
    4
    >>> ndimage.label(np.array([3, -1, 0, 0.5]))           # every non-zero value joins
    (array([1, 1, 0, 2], dtype=int32), 2)
    >>> ndimage.label(a, structure=np.eye(3))[1]          # one diagonal direction
    5

    CuPy arrays (and CUDA tensors) are labelled on their GPU, as
    ``cupyx.scipy.ndimage.label`` labels them::

        labels, n = ndimage.label(cupy_volume, structure=cupy.ones((3, 3, 3)))
    """
    foreign = _interop.unwrap(input, "input")
    if foreign is not None:  # a PyTorch / JAX / DLPack array: its NumPy or CuPy view, and back
        array, back = foreign
        return _interop.rewrap(label(array, structure, output), back)
    xp, x = _input_array(input)
    if x.dtype.kind == "c":
        raise TypeError(f"Complex type not supported: input has dtype {x.dtype}")
    if x.dtype.kind not in "biuf":
        raise TypeError(f"input must have a bool, integer or float dtype, got {x.dtype}")
    offsets = _structure(structure, x.ndim, x.size)
    dtype, out = _output(output, xp is not np, x.shape)
    work = np.dtype(np.int32) if x.size < 2**31 - 2 else np.dtype(np.intp)
    with x.device if xp is not np else contextlib.nullcontext():
        labels, n = _label(xp, x, offsets, work)
        dtype = work if dtype is None else dtype
        if dtype != work:
            _check_depth(n, dtype)
        if out is None:
            return labels.astype(dtype, copy=False), n
        out[...] = labels
        if xp is not np and out is not output:
            # another framework's memory: the write is done before that framework reads it
            xp.cuda.get_current_stream().synchronize()
    return n


def _label(xp, x, offsets, work):
    """(labels of dtype ``work``, N) of the non-zero cells of ``x`` under
    the half neighbourhood ``offsets``."""
    if x.ndim == 0 or x.size == 0:
        n = int(bool(x != 0)) if x.ndim == 0 else 0
        return xp.full(x.shape, n, dtype=work), n
    if not offsets:  # no neighbours: each feature cell alone, numbered in raster order
        flat = (x != 0).reshape(-1)
        ranks = xp.cumsum(flat, dtype=work)
        return (ranks * flat).reshape(x.shape), int(ranks[-1])
    # (one-byte integers as bool: a non-zero byte is a non-zero value, and
    # the labelling reads every non-zero byte as True -- no copy)
    foreground = x if x.dtype == np.bool_ else x.view(np.bool_) \
        if x.dtype.kind in "iu" and x.dtype.itemsize == 1 else x != 0
    named = neighbourhood.as_connectivity(offsets, x.ndim)
    if named is not None and not (xp is not np and _some_axes_of_a_volume(named[0], x.shape)):
        # a connectivity along some axes: meshccl.label's own paths
        axes, conn = named
        return _mesh_label(foreground, connectivity=conn, dtype=work, return_num=True,
                           axes=None if len(axes) == x.ndim else axes)
    return _label_offsets(xp, foreground, offsets, work)


def _some_axes_of_a_volume(axes, shape) -> bool:
    """Whether a connectivity along ``axes`` of an array of ``shape`` is one
    that the GPU labels faster as an explicit structure: a volume (3 axes
    longer than 1) labelled along some axes that are not the last one or
    two, whose bricks fit a launch.  ``meshccl.label`` stacks those (1-D
    or 2-D images, its run chains) but sends any other subset (the first
    axis only, axes 0 and 2) to its per-cell general chain, where the
    runs3d-structure chain takes the neighbourhood as a structure (H200,
    512^3, p = 0.3: first axis only 6.2 ms through the general chain;
    docs/decisions.md, "structures and bool n-D on runs")."""
    k = len(axes)
    if not (len(shape) == 3 and all(n > 1 for n in shape) and k < 3
            and tuple(axes) != tuple(range(3 - k, 3))):
        return False
    from ._gpu import runs3d_structure

    return runs3d_structure.fits(shape)


def _label_offsets(xp, foreground, offsets, work):
    """(labels, N) of bool ``foreground`` under an explicit neighbourhood:
    the CPU core's lattice labeller (per-cell union-find over its offset
    table) or the GPU's chain for it (runs3d-structure in 3-D, else runsnd),
    through a launch plan where one applies (repeated calls on one shape
    and structure launch packed kernels)."""
    if xp is not np and foreground.flags.c_contiguous:  # a launch plan, kept per shape
        from ._gpu.plan import fast_label

        got = fast_label(foreground, None, None, work, True, offsets=tuple(offsets))
        if got is not None:
            return got[0].reshape(foreground.shape), got[1]
    prob = _validate.prepare(foreground, None, None, work, offsets=offsets)
    info = {"seconds": {}}
    if xp is np:
        labels, n, _ = labelling._label_cpu(prob, "cpu", 1, info)
    else:
        labels, n, _, _ = labelling._label_gpu(prob, "gpu", False, info)
    return labels.reshape(foreground.shape).astype(work, copy=False), int(n)
