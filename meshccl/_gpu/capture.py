"""Recording CUDA graphs, and when meshccl may record one.

meshccl records some of its launches as CUDA graphs on its own, to replay
them with one host call: a launch plan's chain on small images or at a
pair of addresses (``plan.py``), a graph call at a buffer (``graph_plan.py``),
a batch of alike passes (``passes.BatchGraphs``).

A stream capture is not private to the thread that opens it.  While any
stream of a GPU is capturing, whatever the capture mode and even on a
non-blocking stream, a synchronisation that another thread of the process
issues on that GPU -- ``cudaDeviceSynchronize``, a stream or event wait, a
``cudaFree`` (which waits for the device), a synchronous copy -- is refused
(``cudaErrorStreamCaptureUnsupported`` / ``...Implicit``) and invalidates
the capture.  The other thread's call is the one that fails, inside code
meshccl never sees: a user's ``cupy.random`` call reports it as
``CURAND_STATUS_LAUNCH_FAILURE``, a copy to the host as a CUDA runtime
error.  Under Dask's threaded scheduler, a chunk labelled in one thread
while another thread draws or copies its chunk meets exactly that.

There is no way to know which other threads use the GPU.  meshccl records
a graph only from the process's main thread (:func:`may_record`), never
from a worker thread: Dask's threaded scheduler and ``distributed``'s
workers run every task in worker threads, beside other tasks that draw,
copy and wait, while the loops that gain from graphs (a simulation
labelling its lattice, a benchmark) run in the main thread.  Elsewhere the
kernels are launched one by one, which gives the same results and costs
only host time.  A main thread that labels while threads of its own wait
for the same GPU can still meet the failure (docs/limits.md).
"""

from __future__ import annotations

import threading


def may_record() -> bool:
    """True in the process's main thread, the one thread where meshccl
    records graphs."""
    return threading.current_thread() is threading.main_thread()


def record(stream, launch):
    """``launch()`` recorded on ``stream`` (a CuPy stream, made current for
    the recording; nothing runs): returns ``(graph, launch()'s result)``.
    The capture is closed whatever ``launch`` raises."""
    with stream:
        stream.begin_capture()
        try:
            out = launch()
        finally:
            graph = stream.end_capture()
    return graph, out
