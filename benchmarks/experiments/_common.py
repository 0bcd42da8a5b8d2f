"""What the experiment scripts share.

Importing it puts ``benchmarks/`` (for ``graph_bench``) and the repository
root (for ``meshccl``) on ``sys.path``; :func:`busy` keeps the GPU busy so
that a timing sees the device work without the host's launch time;
:func:`time_ms` times a call with CUDA events, :func:`device_ms` the same
behind a busy kernel; :func:`labels_agree` labels
cases under each of an experiment's variants and says whether they agree.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (HERE.parent.parent, HERE.parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


def busy(milliseconds: float) -> None:
    """Queue a kernel on the current stream that spins for about this long
    (clock cycles at the device's clock rate), so that the host has issued
    whatever comes next before the GPU gets to it: events around a call
    queued behind it time the GPU work and the gaps between kernels, not
    the host."""
    import cupy
    import numpy as np

    dev = cupy.cuda.Device()
    if not hasattr(busy, "kernel"):
        busy.kernel = cupy.RawKernel(r"""
        extern "C" __global__ void spin(long long cycles) {
            const long long t0 = clock64();
            while (clock64() - t0 < cycles) {}
        }""", "spin")
        busy.khz = {}
    if dev.id not in busy.khz:
        busy.khz[dev.id] = cupy.cuda.runtime.getDeviceProperties(dev.id)["clockRate"]
    busy.kernel((1,), (1,), (np.int64(milliseconds * busy.khz[dev.id]),))


def time_ms(f, reps=50):
    """Median milliseconds of ``f()`` by CUDA events around each call, after
    one call to warm up (capabilities.gpu_time, in milliseconds)."""
    from capabilities import gpu_time

    return gpu_time(f, reps=reps) * 1e3


def wall_ms(f, reps=7):
    """Median wall milliseconds of ``f()`` over ``reps`` calls after one to
    warm up (CPU timings)."""
    import time

    import numpy as np

    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3


def device_ms(f, reps=40):
    """Median milliseconds of ``f()`` by CUDA events around each call, each
    call queued behind a busy kernel (:func:`busy`): the device's time,
    gaps between kernels included, the host's lead-in before the first
    kernel not (after one call to warm up)."""
    import cupy
    import numpy as np

    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    f()
    ts = []
    for _ in range(reps):
        busy(0.3)
        s.record()
        f()
        e.record()
        e.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(s, e))
    return float(np.median(ts))


def labels_agree(cases, variants, use):
    """For each (name, array) case at connectivity 1 and full: label it under
    every variant (``use(variant)`` switches to it) and print whether all
    labels are equal."""
    import cupy

    import meshccl

    for name, a in cases:
        for c in sorted({1, a.ndim}):
            got = []
            for v in variants:
                use(v)
                got.append(meshccl.label(a, connectivity=c))
            same = all(bool(cupy.array_equal(got[0], g)) for g in got[1:])
            print(f"{name} c={c}: labels {'equal' if same else 'DIFFER'}", flush=True)


def alternate(cases, variants, use, conns=None):
    """The A/B loop of the variant experiments: for each (name, array) case
    and connectivity (``conns(array)``; default 1 and full), label it under
    every variant, two rounds, the second in the reverse order, and print
    one row with each variant's event-timed call and device time (ms,
    :func:`time_ms` / :func:`device_ms`).  ``use(variant)`` switches to a
    variant (and should drop cached launch plans).  The labels must be
    equal under every variant: SystemExit otherwise."""
    import meshccl

    order = list(variants)
    for name, x in cases:
        for c in (conns(x) if conns else sorted({1, x.ndim})):
            ref, row = None, []
            for rnd in range(2):
                for v in (order if rnd % 2 == 0 else order[::-1]):
                    use(v)
                    out = meshccl.label(x, connectivity=c)
                    if ref is None:
                        ref = out
                    elif not bool((out == ref).all()):
                        raise SystemExit(f"{name} c={c}: labels differ under {v}")
                    call = time_ms(lambda: meshccl.label(x, connectivity=c))
                    dev = device_ms(lambda: meshccl.label(x, connectivity=c))
                    row.append(f"{v}: {call:.4f}/{dev:.4f}")
            print(f"{name:22s} c={c} (call/device ms) | " + " | ".join(row), flush=True)


def recompile():
    """After an experiment changed what the loader compiles (its ``source``
    or ``kernel_dir``): drop the compiled modules and kernels, the headers'
    digest and this thread's launch plans, so that the next call compiles
    the variant and builds its plans afresh."""
    from meshccl._gpu import loader, plan

    loader.headers_digest.cache_clear()
    loader._module.cache_clear()
    loader._functions.cache_clear()
    plan._local.__dict__.pop("plans", None)


def record_modules(filename):
    """Make the loader keep, in the list returned, every module it compiles
    from ``filename`` (the newest last), so that an experiment can reach a
    patched module's ``__device__`` globals and ``extern "C"`` kernels.
    The wrapper stands in for ``loader._module`` (cache_clear included)
    from then on."""
    from meshccl._gpu import loader

    modules = []
    inner = getattr(loader._module, "inner", loader._module)

    def module(device_id, name, names):
        mod = inner(device_id, name, names)
        if name == filename:
            modules.append(mod)
        return mod

    module.cache_clear, module.inner = inner.cache_clear, inner
    loader._module = module
    return modules


def patched_source(original, filename_to_patch, *pairs):
    """A replacement for ``loader.source`` (``original``: the loader's own)
    that applies text replacements (old, new) to one kernel file, each of
    which must occur exactly once: experiments that switch parts of a
    kernel off."""
    def source(filename):
        text = original(filename)
        if filename == filename_to_patch:
            for old, new in pairs:
                assert text.count(old) == 1, old
                text = text.replace(old, new)
        return text
    return source


def fixed_steps(a, conn, slotted=True):
    """The fixed-geometry path's launches for a (CuPy, one-byte cells,
    background 0) at connectivity ``conn``, in the slot form or not, as
    ``([(name, launch), ...], labels)``: each launch takes no arguments and
    writes into ``labels`` (int32, a's size)."""
    import cupy
    import numpy as np

    from meshccl._gpu import mesh23

    v = a.reshape(-1)
    out = cupy.empty(a.size, dtype=cupy.int32)
    steps = mesh23.steps(v, out, a.shape, conn, True, np.uint8(0),
                         buffers=mesh23.scratch(a.size, out.dtype, a.shape, v.dtype),
                         slot_tiles=slotted)
    return list(steps), out


def tile_ms(a, conn, slotted=False, reps=20):
    """Device ms of the fixed-geometry path's tile kernel alone on a (CuPy,
    one-byte cells, background 0), in the slot form or not (2-D)."""
    steps, _ = fixed_steps(a, conn, slotted)
    return device_ms(dict(steps)["tile"], reps)
