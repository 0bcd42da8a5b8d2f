"""Kernel launches whose arguments are fixed but for the input and the labels.

The plain 1-D / 2-D / 3-D chains (image_plain.py) work out its launches once per shape
and dtype: each is a :class:`Launch` holding the kernel, grid, block, shared
memory and every argument, with the placeholders :data:`VALUES` and
:data:`LABELS` where the call's input and label array go.  Called as
``launch(values, P)`` it goes through CuPy's kernel call, which converts
every argument each time: about 10 µs of host time per launch.

A launch plan (plan.py) labels arrays of one shape again and again, so it
takes :meth:`Launch.packed` instead: the arguments are written once into a
buffer of 8-byte slots laid out for ``cuLaunchKernel``, and a call only
stores the two device pointers into their slots and calls the driver.  The
host then reaches the first kernel sooner (a single call's time, as the
benchmark measures it with CUDA events, includes everything before it) and
spends less per call in a loop.  ``cuLaunchKernel`` copies the arguments
when it is called, so the slots can be rewritten for the next call at once.

On Hopper and later GPUs a plan launches the kernels its program marks
``early`` (image_plain.py: the numbering chain) with the attribute
"programmatic stream serialization", through
``cuLaunchKernelEx`` (called with ctypes: CuPy has no binding for it): the
GPU may then send a kernel's blocks out while the kernel before it drains,
and they wait on the device, in ``grid_entry()`` (kernels/launch.cuh), until
its writes are visible.  Each boundary of the chain then costs less than a
full launch; the labels are the same (``_tuning.LAUNCH_PDL`` off: the
ordinary launch).
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import _tuning

#: Placeholders in a :class:`Launch`'s arguments: the call's flat input
#: values and its label array, (lattice chains) its mask and bonds, and
#: (counted chains) its count table, which is made once N is known.
VALUES = object()
LABELS = object()
MASK = object()
BONDS = object()
COUNTS = object()


def tolerance_arg(value_dtype, tolerance):
    """The tolerance as the kernels' ``double tol`` parameter takes it.

    Float values: the tolerance as a double.  Integer values (bool as
    uint8): the 64 bits of the exact integer tolerance (an int, as
    ``_validate.prepare`` leaves it; saturated at 2**64 - 1), reinterpreted
    as a double in the same slot -- lattice.cuh's ``Rule`` reads them back
    as an unsigned 64-bit integer.  No tolerance: 0.0.
    """
    if tolerance is None:
        return np.float64(0.0)
    if np.dtype(value_dtype).kind == "f":
        return np.float64(tolerance)
    t = min(int(tolerance), 2**64 - 1)  # (int() floors a float tolerance >= 0)
    return np.array(t, dtype=np.uint64).view(np.float64)[()]


class _Attribute(ctypes.Structure):
    """CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value union."""
    _fields_ = [("id", ctypes.c_uint), ("pad", ctypes.c_char * 4), ("value", ctypes.c_char * 64)]


class _Config(ctypes.Structure):
    """CUlaunchConfig (cuda.h)."""
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared_mem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_Attribute)), ("num_attrs", ctypes.c_uint)]


#: CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (cuda.h)
_PROGRAMMATIC_STREAM_SERIALIZATION = 6


def _launch_kernel_ex():
    """The driver's ``cuLaunchKernelEx`` through ctypes (None without it)."""
    if not hasattr(_launch_kernel_ex, "fn"):
        try:
            fn = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
            fn.argtypes = [ctypes.POINTER(_Config), ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_void_p]
            fn.restype = ctypes.c_int
        except (OSError, AttributeError):
            fn = None
        _launch_kernel_ex.fn = fn
    return _launch_kernel_ex.fn


def pdl_available() -> bool:
    """True when the current device and driver take programmatic dependent
    launches (and ``_tuning.LAUNCH_PDL`` is on)."""
    if not _tuning.LAUNCH_PDL:
        return False
    import cupy

    major = cupy.cuda.Device().compute_capability[:-1]
    return int(major or 0) >= 9 and _launch_kernel_ex() is not None


def pack_arguments(args):
    """Kernel arguments as 8-byte slots for ``cuLaunchKernel``: returns
    (slots, the indices of :data:`VALUES`, those of :data:`LABELS`, those
    of :data:`MASK`, those of :data:`BONDS`).  A CuPy
    array gives its device address; a NumPy scalar (bool, integer or float,
    up to 8 bytes) its bytes, little-endian and zero-padded, from which the
    kernel reads as many as its parameter has (as CuPy passes them).
    Anything else raises TypeError (the caller then launches through CuPy).
    """
    slots = np.zeros(max(1, len(args)), dtype=np.uint64)
    iv, ip, im, ib = [], [], [], []
    for k, a in enumerate(args):
        if a is VALUES:
            iv.append(k)
        elif a is LABELS:
            ip.append(k)
        elif a is MASK:
            im.append(k)
        elif a is BONDS:
            ib.append(k)
        elif hasattr(a, "data") and hasattr(a.data, "ptr"):  # a CuPy array
            slots[k] = a.data.ptr
        elif isinstance(a, np.generic) and a.dtype.itemsize <= 8 and a.dtype.kind in "biuf":
            slots[k] = int.from_bytes(a.tobytes().ljust(8, b"\0"), "little")
        else:  # (every argument of the programs is one of the above)
            raise TypeError(f"cannot pack kernel argument {a!r} of type {type(a).__name__}")
    return slots, tuple(iv), tuple(ip), tuple(im), tuple(ib)


def slot_launcher(kernel, grid, block, slots, shared_mem=0, follows=False):
    """``launch(stream_ptr)``: launches ``kernel`` (a CuPy RawKernel) through the
    driver with the 8-byte argument slots ``slots`` (:func:`pack_arguments`) as
    they hold at that call; the caller may rewrite slots between calls
    (``cuLaunchKernel`` copies them).  ``follows``: the kernel comes right after
    another kernel of the same chain and may start while that one drains (where
    :func:`pdl_available`; the kernel calls ``grid_entry()``).  The launcher keeps
    what the driver reads through addresses alive in ``launch.keep``."""
    from cupy.cuda import driver

    ptrs = slots.ctypes.data + 8 * np.arange(len(slots), dtype=np.uint64)
    fn = getattr(kernel, "kernel", kernel).ptr  # RawKernel -> its CUDA function
    (gx, gy, gz), (bx, by, bz) = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
    smem, params, launch_kernel = int(shared_mem), ptrs.ctypes.data, driver.launchKernel
    keep = [slots, ptrs]
    if follows and pdl_available():
        attr = _Attribute(id=_PROGRAMMATIC_STREAM_SERIALIZATION)
        attr.value = (1).to_bytes(4, "little")  # programmaticStreamSerializationAllowed
        config = _Config((gx, gy, gz), (bx, by, bz), smem, None, ctypes.pointer(attr), 1)
        config_ref, launch_ex = ctypes.byref(config), _launch_kernel_ex()
        keep += [attr, config]

        def launch(stream):
            config.stream = stream
            err = launch_ex(config_ref, fn, params, None)
            if err:
                raise driver.CUDADriverError(err)
    else:
        def launch(stream):
            launch_kernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, 0)

    launch.keep = keep
    return launch


class Launch:
    """One kernel launch: ``launch(values, P)`` runs it and returns
    ``result`` (the program's last launch returns N, a 0-d CuPy array).
    ``early``: packed after another kernel, it may start while that one
    drains (see the module's text; the program decides where that paid)."""

    __slots__ = ("fn", "grid", "block", "args", "shared_mem", "result", "early")

    def __init__(self, fn, grid, block, args, shared_mem=0, result=None, early=True):
        self.fn, self.grid, self.block = fn, tuple(grid), tuple(block)
        self.args, self.shared_mem, self.result = tuple(args), int(shared_mem), result
        self.early = bool(early)

    def __call__(self, values, P, mask=None, bonds=None, counts=None):
        args = tuple(values if a is VALUES else P if a is LABELS else mask if a is MASK
                     else bonds if a is BONDS else counts if a is COUNTS else a
                     for a in self.args)
        self.fn(self.grid, self.block, args, shared_mem=self.shared_mem)
        return self.result

    def packed(self, follows=False):
        """``launch(values_ptr, labels_ptr, stream_ptr[, mask_ptr, bonds_ptr,
        counts_ptr])`` through the driver, the arguments packed once (see the
        module's text).  ``follows``: the kernel comes right after another
        kernel of the same chain, and may start while that one drains (where
        :func:`pdl_available`)."""
        ic = tuple(k for k, a in enumerate(self.args) if a is COUNTS)
        slots, iv, ip, im, ib = pack_arguments(
            tuple(np.uintp(0) if a is COUNTS else a for a in self.args))
        send = slot_launcher(self.fn, self.grid, self.block, slots, self.shared_mem, follows)
        result = self.result

        def launch(vptr, pptr, stream, mptr=0, bptr=0, cptr=0):
            for k in iv:
                slots[k] = vptr
            for k in ip:
                slots[k] = pptr
            for k in im:
                slots[k] = mptr
            for k in ib:
                slots[k] = bptr
            for k in ic:
                slots[k] = cptr
            send(stream)
            return result

        launch.keep = send.keep
        return launch


def pack_chain(program):
    """A chain ``[(name, launch), ...]`` of :class:`Launch` and
    :class:`Memset` objects, each packed (``packed()``); a kernel right
    after a kernel ``packed(follows=True)`` where its ``early`` says so."""
    out, before = [], None
    for _, launch in program:
        follows = isinstance(launch, Launch) and isinstance(before, Launch) and launch.early
        out.append(launch.packed(follows=True) if follows else launch.packed())
        before = launch
    return tuple(out)


class Memset:
    """Zero a CuPy array before a launch that ORs bits into it."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __call__(self, values, P, mask=None, bonds=None, counts=None):
        import cupy

        cupy.cuda.runtime.memsetAsync(self.array.data.ptr, 0, self.array.nbytes,
                                      cupy.cuda.get_current_stream().ptr)

    def packed(self):
        from cupy.cuda import runtime

        # (the plan keeps this object, and so the array, alive)
        ptr, nbytes, memset = self.array.data.ptr, self.array.nbytes, runtime.memsetAsync

        def launch(vptr, pptr, stream, mptr=0, bptr=0, cptr=0):
            memset(ptr, 0, nbytes, stream)

        return launch
