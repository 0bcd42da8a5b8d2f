"""Small CuPy arrays to the host and a result back, through one page-locked buffer.

Some calls read small device arrays on the host and write a small result
back: the host route of strong components
(:func:`meshccl.graph._dispatch.strong_on_host`) copies a graph of at most
a few hundred thousand vertices and edges down, searches it on the host
and copies the labels up.  What such a call pays is its copies, not its
work.  ``ndarray.get`` copies into fresh pageable memory, which the driver
stages and the host waits for, once per array; ``cupy.asarray`` allocates
a staging buffer and copies again.  On an H200 those copies were about
60 µs of a 100 µs call at 10^3 edges whose search took 4 µs.

Here each device keeps one page-locked buffer (grown to the largest call
it has seen, kept for the process).  The inputs go into it by
asynchronous copies on the current stream and the host waits once; the
work writes its int32 result into the same buffer, and that goes up by
one asynchronous copy, after which an event is recorded.  The next call
on that device makes its stream wait for the event before its own copies
overwrite the buffer (a larger buffer replaces it only once the event has
completed), and a lock per device keeps two threads off one buffer.
"""

from __future__ import annotations

import threading

import numpy as np

_ALIGN = 256  # bytes between the arrays in the buffer
_MIN_BYTES = 1 << 16
_buffers_lock = threading.Lock()
_buffers = {}  # device id -> _Buffer


class _Buffer:
    """One device's page-locked buffer, its lock and the event recorded
    after the last copy that reads it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.memory = None
        self.nbytes = 0
        self.read_until = None  # recorded on the stream self.read_on
        self.read_on = None

    def reserve(self, nbytes, stream):
        """The buffer, at least ``nbytes`` long, free for ``stream`` to write
        (copies on the stream that last read it follow that read anyway)."""
        import cupy

        if nbytes > self.nbytes:
            if self.read_on is not None:
                self.read_until.synchronize()  # (the old memory goes back to CuPy's pool)
            self.nbytes = max(nbytes, 2 * self.nbytes, _MIN_BYTES)
            self.memory = cupy.cuda.alloc_pinned_memory(self.nbytes)
            self.read_on = None
        elif self.read_on is not None and self.read_on != stream.ptr:
            stream.wait_event(self.read_until)
        return self.memory

    def read_by(self, stream):
        """Note that ``stream`` now reads the buffer (an upward copy)."""
        import cupy

        if self.read_until is None:
            self.read_until = cupy.cuda.Event(disable_timing=True)
        self.read_until.record(stream)
        self.read_on = stream.ptr


def _aligned(nbytes):
    return -(-nbytes // _ALIGN) * _ALIGN


def round_trip(inputs, out_size, work):
    """``work``'s int32 result on host copies of ``inputs``, as a CuPy array.

    Parameters
    ----------
    inputs : sequence of 1-D CuPy arrays
        Copied to the host (made contiguous first where they are not) on
        the current stream; the host waits once for all of them.
    out_size : int or None
        Elements of the int32 output ``work`` may write in the buffer
        (None: no room made; ``work`` returns an array of its own).
    work : callable
        ``work(views, out)`` with ``views`` NumPy views of the copies
        (valid during the call only) and ``out`` an int32 view of
        ``out_size`` elements (or None); returns None, or ``(value,
        labels)`` with ``labels`` a NumPy int32 array, ``out`` or its own.

    Returns
    -------
    None where ``work`` returned None, else ``(value, labels)`` with the
    labels a CuPy int32 array on the inputs' device (copied up
    asynchronously on the current stream).

    Examples
    --------
    >>> import cupy                                        # doctest: +SKIP
    >>> x = cupy.arange(5, dtype=cupy.int32)               # doctest: +SKIP
    >>> round_trip([x], 5, lambda v, out: (1, np.subtract(4, v[0], out=out)))  # doctest: +SKIP
    (1, array([4, 3, 2, 1, 0], dtype=int32))
    """
    import cupy

    inputs = [cupy.ascontiguousarray(a) for a in inputs]
    offsets, end = [], 0
    for a in inputs:
        offsets.append(end)
        end += _aligned(a.nbytes)
    out_bytes = 4 * (out_size or 0)
    device_id = inputs[0].device.id if inputs else cupy.cuda.Device().id
    with _buffers_lock:
        buffer = _buffers.setdefault(device_id, _Buffer())
    stream = cupy.cuda.get_current_stream()
    with buffer.lock:
        memory = buffer.reserve(end + out_bytes, stream)
        for a, offset in zip(inputs, offsets):
            if a.nbytes:
                a.data.copy_to_host_async(memory.ptr + offset, a.nbytes, stream)
        stream.synchronize()
        views = [np.frombuffer(memory, a.dtype, a.size, offset) for a, offset in zip(inputs, offsets)]
        out = None if out_size is None else np.frombuffer(memory, np.int32, out_size, end)
        result = work(views, out)
        if result is None:
            return None
        value, labels = result
        if labels is not out:
            return value, cupy.asarray(labels)
        up = cupy.empty(out_size, np.int32)
        if out_bytes:
            up.data.copy_from_host_async(memory.ptr + end, out_bytes, stream)
            buffer.read_by(stream)
        return value, up


def release():
    """Let every device's buffer go, each once its last copy has completed
    (tests that swap CuPy for a stand-in call it before and after)."""
    with _buffers_lock:
        buffers = list(_buffers.values())
        _buffers.clear()
    for buffer in buffers:
        with buffer.lock:
            if buffer.read_on is not None:
                buffer.read_until.synchronize()
            buffer.memory, buffer.nbytes, buffer.read_on = None, 0, None
