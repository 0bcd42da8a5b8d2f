"""``meshccl demo``: label two generated patterns, time it, draw the labels.

The patterns are Hawick's spiral (:func:`meshccl.patterns.spiral`), whose
1-cells form a single wall winding through the whole image -- the worst case
for label propagation -- and a Cahn-Hilliard-like field of bicontinuous blobs
(:func:`meshccl.patterns.blobs`).  Both are labelled on the GPU when one is
usable (CuPy arrays) and on the CPU otherwise, at connectivity 1 and 2.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import meshccl
from meshccl import patterns

#: Connectivities the demo labels at.
CONNECTIVITIES = (1, 2)


@dataclass
class DemoResult:
    """One row of the demo's table."""

    pattern: str
    connectivity: int
    backend: str
    components: int
    ms: float
    picture: Path


def make_patterns(size, xp=np):
    """Build the demo's patterns.

    Parameters
    ----------
    size : int
        Side length of the square images.
    xp : module, optional
        ``numpy`` or ``cupy``: where the arrays live.

    Returns
    -------
    dict of str to ndarray
        ``{'spiral': ..., 'blobs': ...}``, uint8 images of 0 and 1.
    """
    return {
        "spiral": patterns.spiral(size, xp=xp),
        "blobs": patterns.blobs((size, size), xp=xp),
    }


def _synchronize(xp):
    if xp is not np:
        xp.cuda.runtime.deviceSynchronize()


def time_label(image, connectivity, repeats=5):
    """Label ``image`` once to warm up, then time ``repeats`` more calls.

    Parameters
    ----------
    image : numpy.ndarray or cupy.ndarray
        The image; CuPy input is labelled on its GPU.
    connectivity : int
        Passed to :func:`meshccl.label`.
    repeats : int, optional
        Number of timed calls (default 5).

    Returns
    -------
    labels : numpy.ndarray or cupy.ndarray
        The labels of the warm-up call.
    num : int
        Number of components.
    ms : float
        Median wall time of the timed calls in milliseconds; on the GPU the
        device is synchronized before and after each call.
    """
    xp = np if isinstance(image, np.ndarray) else sys.modules["cupy"]
    # The warm-up compiles the kernels (numba or CUDA) and gives the result.
    labels, num = meshccl.label(image, connectivity=connectivity, return_num=True)
    times = []
    for _ in range(repeats):
        _synchronize(xp)
        start = time.perf_counter()
        meshccl.label(image, connectivity=connectivity)
        _synchronize(xp)
        times.append(time.perf_counter() - start)
    return labels, num, statistics.median(times) * 1e3


def colourise(labels, num, seed=0):
    """Draw labels as an RGB picture: a random colour per label, background black.

    Parameters
    ----------
    labels : numpy.ndarray
        2-D labels 0..num.
    num : int
        The largest label.
    seed : int, optional
        Seed of the colour table.

    Returns
    -------
    numpy.ndarray
        uint8 array of shape ``labels.shape + (3,)``.
    """
    rng = np.random.default_rng(seed)
    lut = rng.integers(48, 256, size=(num + 1, 3), dtype=np.uint8)
    lut[0] = 0
    return lut[labels]


def run_demo(size=1024, out_dir="meshccl-demo", device="auto", repeats=5, stream=None):
    """Label, time and draw the demo patterns, printing a table.

    Parameters
    ----------
    size : int, optional
        Side length of the images (default 1024).
    out_dir : str or pathlib.Path, optional
        Folder for the PNG pictures, created if missing (default
        ``./meshccl-demo``).  One picture per pattern and connectivity,
        named ``<pattern>_conn<k>.png``.
    device : {'auto', 'cpu', 'gpu'}, optional
        ``'auto'`` uses the GPU when :func:`meshccl.gpu_available` is true.
    repeats : int, optional
        Timed calls per case; the table shows their median.
    stream : file-like, optional
        Where to print (default ``sys.stdout``).

    Returns
    -------
    list of DemoResult
        One per pattern and connectivity.

    Raises
    ------
    RuntimeError
        If ``device='gpu'`` but no CUDA GPU is usable.
    """
    import imageio.v3 as iio

    stream = sys.stdout if stream is None else stream
    if device == "auto":
        device = "gpu" if meshccl.gpu_available() else "cpu"
    if device == "gpu":
        if not meshccl.gpu_available():
            raise RuntimeError("device='gpu' was asked for, but no CUDA GPU is usable")
        import cupy as xp

        backend = "gpu"
        props = xp.cuda.runtime.getDeviceProperties(xp.cuda.Device().id)
        where = f"GPU ({props['name'].decode()}, CuPy)"
    elif device == "cpu":
        xp, backend, where = np, "cpu", "CPU (numba)"
    else:
        raise ValueError(f"device must be 'auto', 'cpu' or 'gpu', got {device!r}")

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"meshccl demo: {size} x {size} cells on the {where}; "
          f"median of {repeats} calls after a warm-up", file=stream)
    print(f"{'pattern':<8} {'connectivity':>12} {'backend':>8} {'components':>11} {'ms':>10}",
          file=stream)

    results = []
    for name, image in make_patterns(size, xp).items():
        for k in CONNECTIVITIES:
            labels, num, ms = time_label(image, k, repeats)
            host = labels.get() if xp is not np else labels
            picture = out_dir / f"{name}_conn{k}.png"
            iio.imwrite(picture, colourise(host, num))
            results.append(DemoResult(name, k, backend, num, ms, picture))
            print(f"{name:<8} {k:>12} {backend:>8} {num:>11} {ms:>10.2f}", file=stream)

    print(f"pictures: {out_dir.resolve()}/ ("
          + ", ".join(r.picture.name for r in results) + ")", file=stream)
    return results
