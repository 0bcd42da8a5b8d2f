"""``meshccl.label``: the public entry point for images, volumes and lattices.

Data flows one way: PyTorch / JAX input to its NumPy or CuPy view
(:mod:`._interop`) -> validate (:mod:`._validate`) -> dispatch (the table in
:func:`_backend_for`) -> backend (``_gpu`` or ``_cpu``) -> the one relabel
path -> result on the input's device (and back to the input's framework).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time

import numpy as np

# (_tuning: the constants every backend reads, loaded with the package so that
# a first call does not pay for them; the backends themselves load on first use)
from . import _interop, _tuning, _validate  # noqa: F401
from ._validate import CPU_ONLY, METHODS  # noqa: F401  (the CLI lists METHODS)


def gpu_available() -> bool:
    """Whether the GPU backend can run here.

    Returns
    -------
    bool
        True when CuPy imports and sees at least one CUDA device; then CuPy
        input is labelled on its GPU and ``device='gpu'`` works.

    Examples
    --------
    >>> import meshccl
    >>> isinstance(meshccl.gpu_available(), bool)
    True
    """
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@functools.cache
def _planner():
    """:func:`meshccl._gpu.plan.fast_label`, imported on the first CuPy call
    (importing meshccl loads no GPU module; a cached call costs less than
    an import statement)."""
    from ._gpu.plan import fast_label

    return fast_label


def _other_gpu(label_image):
    """The input's ``cupy.cuda.Device`` when it is a CuPy array on a GPU other
    than the current one (the call then runs inside it), else None."""
    if not type(label_image).__module__.startswith("cupy"):
        return None
    import cupy

    device = label_image.data.device_id
    return None if device == cupy.cuda.runtime.getDevice() else cupy.cuda.Device(device)


def _backend_for(xp, device, method):
    """Dispatch table: (array kind, device request, method) -> backend name."""
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'gpu', got {device!r}")
    if method in CPU_ONLY:
        if device == "gpu":
            raise ValueError(f"method={method!r} is a CPU method (Hawick et al.'s CPU "
                             f"{'I' if method == 'cpu1' else 'II'}); it cannot run with device='gpu'")
        return "cpu" if xp is np else "cpu-from-gpu"
    if xp is np:
        if device == "gpu":
            if not gpu_available():
                raise RuntimeError("device='gpu' was asked for, but no CUDA GPU is usable (CuPy missing or no device)")
            return "gpu-from-host"
        return "cpu"
    if device == "cpu":
        return "cpu-from-gpu"
    return "gpu"


def label(label_image, background=None, return_num=False, connectivity=None, *,
          dtype=None, method="auto", device="auto", periodic=False, mask=None,
          tolerance=None, bonds=None, axes=None, return_counts=False, return_info=False,
          cpu_threads=1, max_iterations=None, numbering="raster", return_statistics=False):
    r"""Label connected regions of equal value, exactly like ``skimage.measure.label``.

    Two cells are connected when they are neighbours and have the same value.
    Labels run 1..N in raster (C) order of each component's first cell, so
    the result equals skimage's, value for value, for every dtype skimage
    accepts -- and for any number of dimensions.

    Parameters
    ----------
    label_image : numpy.ndarray, cupy.ndarray, torch.Tensor or jax.Array
        Image, volume or lattice of bool, integer or float dtype, any number
        of dimensions (0-d and empty arrays too).  Floats are truncated to
        integers first, as skimage does; NaN, inf and values beyond int64
        are read as skimage's cast reads them on x86-64 (the int64 minimum:
        one value; with a warning on NumPy input, without a check that
        would wait for the GPU on CuPy input).  With a ``tolerance`` the
        values are not truncated, and NaN and inf cells join no neighbour.
        PyTorch tensors and JAX arrays (CPU or CUDA; any object exposing
        ``__dlpack__`` or ``__cuda_array_interface__``) are read without a
        copy, as NumPy (host) or CuPy (GPU) arrays.
    background : int, float or bool, optional
        Cells of this value get label 0 (default 0).  As in skimage, a
        float is truncated towards zero (2.7 means 2), and 0-d arrays are
        taken; NaN, or a value outside int64, is refused.  For bool input, as
        in skimage, ``background=1`` labels the False cells and any other
        value labels the True cells.
    return_num : bool, optional
        Also return the number of labels (any value is read for its truth,
        as skimage does).  On the GPU this is the only thing
        that makes the call wait for the device.
    connectivity : int, optional
        Maximum number of orthogonal hops between neighbours, 1..ndim
        (default ndim: 8-connectivity in 2-D, 26 in 3-D).  As in skimage,
        any real number in that range is taken (a fraction is floored:
        1.5 means 1; ``True`` means 1; 0-d arrays too).
    dtype : dtype, optional
        Integer dtype of the result.  Default: like skimage on NumPy (int64;
        int32 for bool), int32 on CuPy (int64 for 2**31 cells or more).  A
        narrower dtype is checked to hold the largest label.
    method : {'auto', 'unionfind', 'A', 'B', 'C', 'D', 'cpu1', 'cpu2'}, optional
        Algorithm.  'auto' (the default) is the one-pass union-find.  The
        others are Hawick, Leist and Playne's iterative methods, repeated
        until a pass changes nothing: A neighbour propagation, B local
        propagation inside tiles, C directional sweeps, D label equivalence
        (each on the GPU and the CPU), and the serial cpu1 (CPU I,
        alternating raster scans) and cpu2 (CPU II, label equivalence),
        which always run on the CPU (CuPy input is copied there and back).
        All give the same labels; they differ in time and passes.
    device : {'auto', 'cpu', 'gpu'}, optional
        Where to compute.  'auto' follows the input (NumPy on the CPU, CuPy
        on its GPU); the result always comes back as the input's array type.
    periodic : bool or sequence of bool, optional
        Wrap-around neighbours (a torus), for all axes or per axis; any
        connectivity, any ndim.  Labels stay in raster order of first cells.
    mask : bool array, optional
        Same shape as ``label_image``; cells where it is False are background
        (Hawick's predicate: "need to be green").
    tolerance : int or float, optional
        Join neighbours whose values differ by at most this much (continuous
        fields).  Values are compared as they are (floats are not truncated),
        and the background matches exactly.  Integer input is compared
        exactly, whatever its size: the tolerance is floored to an integer
        (``|a - b| <= 1.5`` holds for integers exactly when ``|a - b| <= 1``),
        and an integer tolerance is used as it is, beyond 2**53 too.
        Default: equal values join.
    bonds : bool array, optional
        Per-bond open/closed flags, shape ``(K,) + label_image.shape`` with
        ``K = len(meshccl.neighbourhood.half_offsets(ndim, connectivity))``:
        ``bonds[k][x]`` opens the bond between cell ``x`` and cell
        ``x + half_offsets(ndim, connectivity)[k]`` (wrapped when
        ``periodic``; ignored off a non-periodic edge).  Neighbours join when
        their values join *and* their bond is open: bond percolation and
        Swendsen-Wang clusters.
    cpu_threads : int, optional
        Threads for the CPU backend's default method (compiled C++ on its
        own threads): 1 (default) runs serially, 0 uses every core the
        process may run on, N asks for N.  Plain calls (no mask, bonds,
        tolerance or ``axes``) cut the array into slabs along axis 0, at
        most one per 4 096 cells (``CPU_SLAB_MIN_CELLS``) and one per
        plane of axis 0, so arrays under 8 192 cells, 1-D arrays and arrays
        with a length-1 axis 0 run serially; calls with a mask, bonds, a
        tolerance or ``axes`` label chunks of rows, at most one thread per
        16 384 cells (``CPU_CHUNK_MIN_CELLS``), so serially under 32 768
        cells.  Periodic lattices and the iterative methods always run
        serially.  The labels are the same.
    axes : int or sequence of int, optional
        Label along these axes only (default: all): cells that differ in any
        other axis are never neighbours, so every slice across the other
        axes -- e.g. each image of a ``(batch, height, width)`` stack with
        ``axes=(1, 2)`` -- is labelled on its own, all in one call.  Labels
        stay unique and in raster order of first cells over the whole
        array (the first image gets 1..n0, the next n0+1.., and so on).
        ``connectivity`` then counts hops along these axes (default: all of
        them).  Not combinable with ``bonds``.
    numbering : {'raster', 'first-cell'}, optional
        'raster' (the default): labels 1..N in raster order of each
        component's first cell, skimage's values.  'first-cell': a
        partition-only labelling for code that needs to know which cells
        belong together but not a consecutive numbering (cluster flips,
        masks per component, ``numpy.unique`` afterwards): each component
        gets 1 + the flat (C-order) index of its first cell, background 0.
        Equal labels mean the same component, exactly as with 'raster', but
        the numbers have gaps and reach the number of cells, so ``dtype``
        must hold it (the default does).  On the GPU it skips the ranking
        of the roots (what it saves: ``docs/performance.md``, "First-cell
        labels"); on the CPU, whose labellers number as they go, it costs
        one more pass.  Not with ``return_counts``; ``return_num`` still
        gives N, the number of components.
    max_iterations : int, optional
        For the iterative methods: give up after this many passes that all
        changed labels and raise :class:`meshccl.NotConverged` (default: no
        limit).  Ignored by the one-pass methods.
    return_counts : bool, optional
        Also return the number of cells of each label: an int64 array
        ``counts`` of length N + 1, ``counts[0]`` the background cells, equal
        to ``numpy.bincount(labels.ravel(), minlength=N + 1)`` and to
        ``meshccl.measure.statistics(labels)['voxel_counts']``, on the
        labels' device (NumPy or CuPy).  The counts are taken in the pass
        that writes the labels, not by a pass over them afterwards (what
        that costs: ``docs/measure.md``, "Counts while labelling").  On the
        GPU it makes the call wait for the device once, as ``return_num``
        does (the two together wait once), and repeated calls take a launch
        plan as calls without counts do; the plan keeps a table of 8 bytes
        a cell.  Any value is read for its truth.
    return_statistics : bool, optional
        Also return the labels' statistics: the dict of
        :func:`meshccl.measure.statistics` (``voxel_counts``,
        ``bounding_boxes`` in cc3d's layout, ``centroids``; row 0 the
        background), periodic along the labelled axes that wrap.  On the GPU
        the run chains (1-D, 2-D and 3-D images and stacks of them, with or
        without a mask, bonds or tolerance in 1-D and 2-D)
        fill the table in the pass that writes the labels, so the labels are
        not read again (what that saves: ``docs/measure.md``, "Statistics
        while labelling"); periodic axes, the other chains and the CPU
        measure the labels after labelling them.  Not with
        ``numbering='first-cell'``.  The call waits for the device once.
    return_info : bool, optional
        Also return a dict: ``method``, ``backend``, ``iterations`` (passes,
        counting the last one, which changes nothing; 1 for the one-pass
        union-find) and ``seconds`` per phase: ``prepare`` (validation),
        ``label`` (labelling and numbering, wall time, waiting for the GPU)
        and the time of each phase: on the GPU every kernel phase measured
        with CUDA events (``tile``, ``union``, ``flatten``, ``scan``,
        ``relabel`` for the union-find; ``init``, then ``pass`` for A and
        B, ``sweep 0+``, ``sweep 0-``, ... for C, ``scanning``,
        ``analysis``, ``labelling`` for D, then the relabel phases); on the
        CPU ``init``, ``pass`` (or D's three phases) and ``relabel`` for the
        iterative methods.  On the GPU also ``gpu_memory``: ``peak_bytes``
        taken from CuPy's memory pool during the call, ``labels_bytes`` of
        the int32/int64 label array among them, and ``extra_bytes``, the
        rest (scratch, and a copy of the input if it was not C-contiguous
        or was on the host).  On the GPU this makes the call wait for the
        device.

    Returns
    -------
    labels : ndarray
        Same shape as ``label_image``; NumPy in gives NumPy out, CuPy in gives
        CuPy out, a PyTorch tensor a tensor on its device, a JAX array a JAX
        array (``counts`` too).
    num : int, optional
        Number of labels (the largest label), if ``return_num``.
    counts : ndarray, optional
        Cells per label, int64, length ``num + 1`` (row 0: the background),
        if ``return_counts``; on the labels' device.
    statistics : dict, optional
        If ``return_statistics``: as :func:`meshccl.measure.statistics`
        gives them for ``labels``, on the labels' device.
    info : dict, optional
        If ``return_info``.  The results come in this order: ``labels``,
        then those asked for of ``num``, ``counts``, ``statistics``,
        ``info``.

    Raises
    ------
    TypeError
        Not an array, an unsupported dtype (complex, object, strings), a
        background / connectivity / tolerance / periodic of the wrong type,
        or a mask / bonds array that is not bool.
    ValueError
        Connectivity out of range, a NaN background, a return_num with no
        truth value,
        a dtype too narrow for the labels, a mask / bonds of the wrong
        shape, a negative or NaN tolerance, a periodic of the wrong length.
    OverflowError
        A background outside int64 (for non-bool input without a
        tolerance), as in skimage.
    MemoryError
        Not enough GPU memory (the message says how much the labels need).
    RuntimeError
        ``device='gpu'`` without a usable GPU.
    NotConverged
        An iterative method used up ``max_iterations`` passes.

    Examples
    --------
    >>> import numpy as np
    >>> import meshccl
    >>> x = np.array([[1, 0, 0],
    ...               [1, 1, 5],
    ...               [0, 0, 0]])
    >>> meshccl.label(x)
    array([[1, 0, 0],
           [1, 1, 2],
           [0, 0, 0]])
    >>> meshccl.label(np.eye(3, dtype=bool), connectivity=1, return_num=True)
    (array([[1, 0, 0],
           [0, 2, 0],
           [0, 0, 3]], dtype=int32), 3)
    >>> meshccl.label(np.array([1, 0, 0, 1]), periodic=True)  # a ring
    array([1, 0, 0, 1])
    >>> meshccl.label(np.array([0.1, 0.3, 0.9]), tolerance=0.25, background=-1)
    array([1, 1, 2])

    Counts of cells per label (row 0: background) from the same pass:

    >>> labels, n, counts = meshccl.label(x, return_num=True, return_counts=True)
    >>> n, counts
    (2, array([5, 3, 1]))
    >>> bool((counts == np.bincount(labels.ravel())).all())
    True

    A partition without the numbering: each component labelled by its first
    cell's flat index + 1:

    >>> meshccl.label(x, numbering="first-cell")
    array([[1, 0, 0],
           [1, 1, 6],
           [0, 0, 0]])

    On the GPU the same call takes and returns CuPy arrays::

        labels = meshccl.label(cupy_volume, connectivity=1)

    PyTorch tensors and JAX arrays come back as their own type, on their
    device::

        labels = meshccl.label(torch_volume.cuda(), connectivity=1)   # a CUDA tensor
        labels = meshccl.label(jax_volume, connectivity=1)            # a jax.Array
    """
    if (type(label_image).__module__.startswith("cupy") and method == "auto"
            and device == "auto" and return_info is False and max_iterations is None
            and type(cpu_threads) is int and cpu_threads == 1
            and (return_num is False or return_num is True)
            and (return_counts is False or return_counts is True)
            and return_statistics is False):
        # repeated calls on same-shaped CuPy arrays: a cached launch plan
        # (_gpu/plan.py), first and with no other checks: the other arguments
        # are their defaults, and every microsecond here comes before the
        # first kernel starts.  None: no plan serves the call.
        with _gpu_memory_errors(label_image.shape, None):
            out = _planner()(label_image, background, connectivity, dtype, return_num,
                             periodic, mask, tolerance, bonds, numbering, axes, return_counts)
        if out is not None:
            return out
    if (type(label_image) is _validate.PackedSpins and background is None and dtype is None
            and method == "auto" and device == "auto" and return_info is False
            and max_iterations is None and mask is None and tolerance is None
            and bonds is None and axes is None and numbering == "raster"
            and return_statistics is False and (return_num is False or return_num is True)
            and (return_counts is False or return_counts is True)):
        # the labelling hooks' packed spins, through a plan as the arrays above
        from ._gpu.plan import fast_label_packed

        out = fast_label_packed(label_image, connectivity, return_num, periodic,
                                return_counts) if type(periodic) is bool else None
        if out is not None:
            return out
    args = dict(dtype=dtype, method=method, device=device, periodic=periodic, mask=mask,
                tolerance=tolerance, bonds=bonds, axes=axes, return_counts=return_counts,
                return_info=return_info, cpu_threads=cpu_threads,
                max_iterations=max_iterations, numbering=numbering,
                return_statistics=return_statistics)
    foreign = _interop.unwrap(label_image, "label_image")
    if foreign is not None:  # a PyTorch / JAX / DLPack array: its NumPy or CuPy view, and back
        array, back = foreign
        return _interop.rewrap(label(array, background, return_num, connectivity, **args), back)
    gpu = _other_gpu(label_image)
    if gpu is not None:  # a CuPy array on a GPU that is not the current one: run on its GPU
        with gpu:
            return label(label_image, background, return_num, connectivity, **args)
    return_num = _validate._truth(return_num, "return_num")
    if (isinstance(cpu_threads, (bool, np.bool_)) or not isinstance(cpu_threads, (int, np.integer))
            or cpu_threads < 0):
        raise ValueError(f"cpu_threads must be an int >= 0 (0: all cores), got {cpu_threads!r}")
    t0 = time.perf_counter()
    with _gpu_memory_errors(getattr(label_image, "shape", ()), None):
        prob = _validate.prepare(
            label_image, background, connectivity, dtype, periodic=periodic,
            mask=_interop.as_array(mask, "mask"), tolerance=tolerance,
            bonds=_interop.as_array(bonds, "bonds"), axes=axes, numbering=numbering,
            return_counts=return_counts, method=method, max_iterations=max_iterations,
            return_statistics=return_statistics)
    backend = _backend_for(prob.xp, device, prob.method)
    if prob.packed_flip is not None and backend != "gpu":
        raise ValueError(f"packed spins are labelled on their GPU, got device={device!r}")
    info = {"method": "unionfind" if method == "auto" else method, "backend": backend,
            "iterations": 0, "seconds": {"prepare": time.perf_counter() - t0}}
    if prob.size == 0:
        info["seconds"]["label"] = 0.0
        counts = prob.xp.zeros(1, dtype=np.int64) if prob.counts else None
        labels = prob.xp.zeros(prob.out_shape, dtype=prob.out_dtype)
        stats = _statistics(labels, None, periodic, axes, cpu_threads) if prob.statistics \
            else None
        return _result(labels, 0, info, return_num, return_info, counts, stats)
    table = None
    if backend.startswith("cpu"):
        labels, count, counts = _label_cpu(prob, backend, cpu_threads, info)
    else:
        labels, count, counts, table = _label_gpu(prob, backend, return_info, info)
    labels, count = _to_dtype(labels, count, prob.out_dtype, return_num)
    if prob.swapped:
        a, b, c = prob.out_shape
        labels = prob.xp.ascontiguousarray(labels.reshape(c, b, a).swapaxes(0, 2))
    labels = labels.reshape(prob.out_shape)
    stats = _statistics(labels, table, periodic, axes, cpu_threads) if prob.statistics \
        else None
    return _result(labels, count, info, return_num, return_info, counts, stats)


def _statistics(labels, table, periodic, axes, cpu_threads):
    """``return_statistics``'s dict: from the table the GPU's label pass
    filled (``table``), or by :func:`meshccl.measure.statistics` on the
    labels (every other chain, and the CPU), periodic along the labelled
    axes that wrap."""
    from . import measure

    if table is None:
        ndim = labels.ndim
        along = _validate._axes(axes, ndim)
        per = tuple(p and k in along for k, p in enumerate(_validate._periodic(periodic, ndim)))
        return measure.statistics(labels, periodic=per, cpu_threads=cpu_threads)
    return {"voxel_counts": table["count"], "bounding_boxes": table["box"],
            "centroids": table["centroid"]}


def _label_cpu(prob, backend, cpu_threads, info):
    """The CPU backend on ``prob`` (``backend`` 'cpu-from-gpu': CuPy input,
    copied to the host and the labels back): (labels, N, counts or None)."""
    from ._cpu.mesh import label_problem

    host = backend != "cpu"
    if host:
        values = prob.values.get()
        if prob.binary:  # (CuPy bool bytes may be as given: the CPU takes them as 0 / 1)
            values = _validate._bool_bytes(np, values)
        prob = dataclasses.replace(prob, values=values, mask=_host(prob.mask),
                                   bonds=_host(prob.bonds))
    t1 = time.perf_counter()
    P, num, counts, report = label_problem(prob, cpu_threads)
    info["seconds"].update(report.pop("seconds", {}))
    info.update(report)
    info["seconds"]["label"] = time.perf_counter() - t1
    if not host:
        return P, num, counts
    return prob.xp.asarray(P), num, None if counts is None else prob.xp.asarray(counts)


def _host(a):
    return None if a is None else a.get()


def _label_gpu(prob, backend, return_info, info):
    """The GPU backend on ``prob`` (``backend`` 'gpu-from-host': NumPy input,
    copied to the GPU and the labels back): the chain
    :func:`meshccl._gpu.chains.select` names, launched step by step
    (timed with ``return_info``): (labels, N, counts or None)."""
    import cupy

    from ._gpu import chains
    from ._gpu.timing import PeakMemory, PhaseTimer

    timer = PhaseTimer() if return_info else None
    memory = PeakMemory() if return_info else contextlib.nullcontext()
    t1 = time.perf_counter()
    with _gpu_memory_errors(prob.out_shape, prob.work_dtype), memory:
        if backend != "gpu":
            prob = dataclasses.replace(
                prob, values=cupy.asarray(prob.values),
                mask=None if prob.mask is None else cupy.asarray(prob.mask),
                bonds=None if prob.bonds is None else cupy.asarray(prob.bonds))
        P = cupy.empty(prob.size, dtype=prob.work_dtype)
        result = chains.label(prob, P, timer)
        # (a host copy of the table for NumPy input, as of the labels)
        table = result.statistics
        if table is not None and backend != "gpu":
            table = {k: table[k].get() for k in ("count", "box", "centroid")}
    info["iterations"] = result.iterations
    if return_info:
        info["seconds"].update(timer.seconds())
        info["seconds"]["label"] = time.perf_counter() - t1
        info["gpu_memory"] = {"peak_bytes": memory.peak, "labels_bytes": P.nbytes,
                              "extra_bytes": memory.peak - P.nbytes}
    count, counts = result.count, result.counts
    if backend == "gpu":
        return P, count, counts, table
    return P.get(), int(count), None if counts is None else counts.get(), table


def _result(labels, count, info, return_num, return_info, counts=None, stats=None):
    """(labels, [num], [counts], [statistics], [info]): those asked for, in this order."""
    out = (labels,)
    if return_num:
        out += (int(count),)
    if counts is not None:
        out += (counts,)
    if stats is not None:
        out += (stats,)
    if return_info:
        out += (info,)
    return out if len(out) > 1 else labels


def _out_of_memory(exc, shape, work_dtype):
    """CuPy's out-of-memory error ``exc`` as a MemoryError that says what was
    asked; None for any other error."""
    if type(exc).__name__ != "OutOfMemoryError":
        return None
    n = int(np.prod(shape, dtype=np.float64))
    itemsize = 4 if work_dtype is None else np.dtype(work_dtype).itemsize
    need = n * itemsize + n // 4
    return MemoryError(
        f"not enough GPU memory to label label_image of shape {tuple(shape)}: a C-order "
        f"copy of the input (if it is not one) plus about {need / 2**30:.3g} GiB for the "
        f"labels and root masks; CuPy said: {exc}")


@contextlib.contextmanager
def _gpu_memory_errors(shape, work_dtype):
    """Turn CuPy's out-of-memory error into a MemoryError that says what was asked."""
    try:
        yield
    except Exception as exc:
        err = _out_of_memory(exc, shape, work_dtype)
        if err is None:
            raise
        raise err from exc


def _to_dtype(labels, count, out_dtype, return_num):
    """Cast the work array to the output dtype, checking it holds every label."""
    if labels.dtype == out_dtype:
        return labels, count
    info = np.iinfo(out_dtype)
    if info.max < np.iinfo(labels.dtype).max and int(count) > info.max:
        raise ValueError(
            f"dtype={out_dtype} cannot hold {int(count)} labels (largest value {info.max})"
        )
    if labels.dtype.itemsize == info.bits // 8:  # (never negative: the same bits, no copy)
        return labels.view(out_dtype), count
    return labels.astype(out_dtype), count
