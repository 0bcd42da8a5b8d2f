"""``meshccl demo``: label two generated patterns, time it, draw the labels.

The patterns are Hawick's spiral (:func:`meshccl.patterns.spiral`), whose
1-cells form a single wall winding through the whole image -- the worst case
for label propagation -- and a Cahn-Hilliard-like field of bicontinuous blobs
(:func:`meshccl.patterns.blobs`).  Both are labelled on the GPU when one is
usable (CuPy arrays) and on the CPU otherwise, at connectivity 1 and 2.

The timings are for images of ``size`` x ``size`` cells; the pictures are
drawn to be read: one PNG per pattern with connectivity 1 and 2 side by
side, each component in its own colour, the background black.  The spiral
is drawn at :data:`PICTURE_SPIRAL` cells (at 1024 cells its 1-cell walls
would only show a moire pattern), the blobs as the top-left crop of the
timed image (at most :data:`PICTURE_CROP` cells a side, its caption
counting the components of the crop), both enlarged to about
:data:`PICTURE_PX` pixels a panel.  A component's colour follows its first
cell (:func:`drawn_labels`), so a component found at both connectivities
has the same colour in both panels.
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
#: Side of the spiral drawn in the picture, in cells.
PICTURE_SPIRAL = 40
#: Largest crop of the blob labels drawn, in cells.
PICTURE_CROP = 256
#: About this many pixels a panel side.
PICTURE_PX = 480


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
    # The warm-up compiles the CUDA kernels (the CPU ones are built with the
    # package) and gives the result.
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
    """Draw labels as an RGB picture: a random bright colour per label, background black.

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
    # Saturated colours: a random hue, saturation 0.55-1, value 0.75-1 (HSV to RGB).
    h = rng.random(num + 1) * 6
    sat = rng.uniform(0.55, 1.0, num + 1)
    val = rng.uniform(0.75, 1.0, num + 1)
    f = h - np.floor(h)
    p, q, t = val * (1 - sat), val * (1 - sat * f), val * (1 - sat * (1 - f))
    sector = h.astype(np.int64) % 6
    table = np.array([[val, t, p], [q, val, p], [p, val, t],
                      [p, q, val], [t, p, val], [val, p, q]])  # (sector, channel, label)
    rgb = table[sector, :, np.arange(num + 1)]  # (label, channel)
    lut = np.round(rgb * 255).astype(np.uint8)
    lut[0] = 0
    return lut[labels]


def drawn_labels(image, connectivity):
    """The labels of a picture's panel, coloured, and their number.

    Labels by first cell (``numbering='first-cell'``) are coloured through
    :func:`colourise`, so a component's colour depends only on its first
    cell: the panels of one image at different connectivities give a
    component they share one colour.

    Parameters
    ----------
    image : numpy.ndarray
        The 2-D image drawn.
    connectivity : int
        Its connectivity, 1 or 2.

    Returns
    -------
    rgb : numpy.ndarray
        uint8 array of shape ``image.shape + (3,)``, background black.
    num : int
        The number of components.
    """
    first, num = meshccl.label(image, connectivity=connectivity, numbering="first-cell",
                               return_num=True)
    return colourise(first, image.size), num


def run_demo(size=1024, out_dir="meshccl-demo", device="auto", repeats=5, stream=None):
    """Label, time and draw the demo patterns, printing a table.

    Parameters
    ----------
    size : int, optional
        Side length of the images (default 1024).
    out_dir : str or pathlib.Path, optional
        Folder for the PNG pictures, created if missing (default
        ``./meshccl-demo``).  One picture per pattern, ``<pattern>.png``,
        with the connectivities side by side.
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
        xp, backend, where = np, "cpu", "CPU (compiled C++)"
    else:
        raise ValueError(f"device must be 'auto', 'cpu' or 'gpu', got {device!r}")

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"meshccl demo: {size} x {size} cells on the {where}; "
          f"median of {repeats} calls after a warm-up", file=stream)
    print(f"{'pattern':<8} {'connectivity':>12} {'backend':>8} {'components':>11} {'ms':>10}",
          file=stream)

    results = []
    pictures = []
    for name, image in make_patterns(size, xp).items():
        panels = []
        picture = out_dir / f"{name}.png"
        for k in CONNECTIVITIES:
            labels, num, ms = time_label(image, k, repeats)
            results.append(DemoResult(name, k, backend, num, ms, picture))
            print(f"{name:<8} {k:>12} {backend:>8} {num:>11} {ms:>10.2f}", file=stream)
            if name == "spiral":
                small = patterns.spiral(min(size, PICTURE_SPIRAL))
                rgb, shown_num = drawn_labels(small, k)
                caption = (f"connectivity {k}: {_components(shown_num)} "
                           f"(drawn at {small.shape[0]}x{small.shape[1]})")
            else:
                crop = min(size, PICTURE_CROP)
                image_host = image.get() if xp is not np else image
                rgb, shown_num = drawn_labels(np.ascontiguousarray(image_host[:crop, :crop]), k)
                where = (f"{size}x{size}" if crop == size
                         else f"the top-left {crop}x{crop} of {size}x{size}")
                caption = f"connectivity {k}: {_components(shown_num)} in {where}"
            panels.append((rgb, caption))
        iio.imwrite(picture, side_by_side(panels))
        pictures.append(picture)

    print(f"pictures: {out_dir.resolve()}/ ("
          + ", ".join(p.name for p in pictures) + ")", file=stream)
    return results


def _components(n):
    return f"{n} component" + ("" if n == 1 else "s")


def side_by_side(panels, px=PICTURE_PX, gap=16, caption_px=28):
    """Enlarge RGB panels (nearest neighbour) and put them side by side, captioned.

    Parameters
    ----------
    panels : list of (numpy.ndarray, str)
        ``(rgb image, caption)``; images of one shape.
    px : int, optional
        About this many pixels on a panel's longer side (enlarged by a
        whole factor, at least 1).
    gap : int, optional
        White pixels between and around the panels.
    caption_px : int, optional
        Height of the caption strip above each panel.

    Returns
    -------
    numpy.ndarray
        uint8 RGB picture.
    """
    from PIL import Image, ImageDraw

    h, w = panels[0][0].shape[:2]
    scale = max(1, round(px / max(h, w)))
    H, W = h * scale, w * scale
    out = np.full((gap + caption_px + H + gap, gap + len(panels) * (W + gap), 3), 255, np.uint8)
    for i, (rgb, _) in enumerate(panels):
        x = gap + i * (W + gap)
        out[gap + caption_px:gap + caption_px + H, x:x + W] = \
            np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)
    picture = Image.fromarray(out)
    draw = ImageDraw.Draw(picture)
    for i, (_, caption) in enumerate(panels):
        draw.text((gap + i * (W + gap), gap + 4), caption, fill=(0, 0, 0))
    return np.asarray(picture)
