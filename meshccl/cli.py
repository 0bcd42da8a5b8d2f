"""The ``meshccl`` command line.

Subcommands::

    meshccl label IN OUT [--connectivity K] [--background V] [--device D]
                  [--min-size N] [--colour PNG] [--stats CSV] ...
    meshccl label IN [IN ...] DIR      (several inputs: one output each)
    meshccl demo [--size N] [--out DIR] [--device D]
    meshccl --version

``python -m meshccl`` runs the same program.  Usage errors (a missing or
unreadable file, an unknown extension, a connectivity out of range, an
error raised by :func:`meshccl.label`, ...) print one line to stderr and
give exit status 2, never a traceback.

The benchmarks are not part of the installed command: run
``python benchmarks/bench.py`` from a source checkout.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import numpy as np

import meshccl

#: File types ``meshccl label`` writes, by extension.
EXTENSIONS = (".npy", ".png", ".tif", ".tiff")
#: File types ``meshccl label`` reads: those, and lossy or 8-bit picture
#: formats read through imageio (Pillow).
INPUT_EXTENSIONS = EXTENSIONS + (".jpg", ".jpeg", ".bmp")

_LABEL_HELP = """\
Label the connected components of an image or volume, like
skimage.measure.label, and write the labels (0 = background, 1..N).

Input (IN):
  .npy         any NumPy array (bool, integer or float; any number of axes)
  .tif .tiff   a 2-D image or a 3-D (or N-D) stack; a file holding one page per
               slice is read as one volume
  .png .jpg .jpeg .bmp
               a 2-D image (JPEG is lossy: neighbouring pixels of one colour
               rarely stay equal, so label JPEGs with --tolerance)

Colour images (a PNG with channels, or an RGB TIFF) are labelled as 2-D
images by exact colour: the channels of each pixel are packed into one
integer, first channel in the highest bits -- 0xRRGGBB for RGB, 0xRRGGBBAA
for RGBA, 0xLLAA for grey+alpha (16-bit channels take 16 bits each).  The
background is compared with that packed value: the default 0 is black
(transparent black for RGBA); use e.g. --background 0xFFFFFF for white.

Output (OUT), chosen by extension:
  .npy         the labels as returned by meshccl.label (int64, int32 for bool)
  .tif .tiff   uint32 (uint64 beyond 2**32 - 1 labels), any number of axes
               (1-D labels as a single row)
  .png         2-D only; uint8 below 256 labels, uint16 below 65536,
               otherwise write .tif or .npy instead

Several inputs:  meshccl label a.png b.png c.tif DIR
  DIR is a folder (created if missing; also used for one input when OUT is
  an existing folder or ends with '/').  Each input NAME.EXT is written as
  DIR/NAME_labels.EXT, where .jpg/.jpeg/.bmp inputs give .png (or pick the
  format with --out-ext).  --colour and --stats then name folders too, and
  get NAME_colour.png and NAME_stats.csv.  Inputs must have different NAMEs.

No output may be one of the inputs (or the mask).

Float input without --tolerance is truncated to integers first, as skimage
does: values in (-1, 1) all become 0, the background.  A warning says so.

The time printed is that of the label call alone, after a warm-up call on a
small crop (which compiles the kernels); reading and writing are not in it.
"""


class CLIError(Exception):
    """A usage error: reported as one line on stderr, exit status 2."""


# --------------------------------------------------------------------------
# argument types
# --------------------------------------------------------------------------

def parse_background(text):
    """Parse ``--background``: an int (decimal, or ``0x..`` hex) or a float.

    Parameters
    ----------
    text : str
        The argument as typed.

    Returns
    -------
    int or float

    Raises
    ------
    argparse.ArgumentTypeError
        If ``text`` is neither an integer nor a finite float.
    """
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int or a float, got {text!r}") from None
    if not np.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _tolerance(text):
    """``--tolerance``: a number >= 0; an integer stays exact (integer input
    is compared exactly, beyond the 2**53 that a float holds)."""
    value = parse_background(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def positive_int(text):
    """An argument that must be a whole number of at least 1, as an int
    (else :class:`argparse.ArgumentTypeError`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def resolve_device(device):
    """Turn a ``--device`` choice into ``'cpu'`` or ``'gpu'``.

    Parameters
    ----------
    device : {'auto', 'cpu', 'gpu'}
        ``'auto'`` picks the GPU when :func:`meshccl.gpu_available` is true.

    Returns
    -------
    str
        ``'cpu'`` or ``'gpu'``.

    Raises
    ------
    CLIError
        If ``'gpu'`` is asked for but no CUDA GPU is usable.
    """
    if device == "auto":
        return "gpu" if meshccl.gpu_available() else "cpu"
    if device == "gpu" and not meshccl.gpu_available():
        raise CLIError("--device gpu: no CUDA GPU is usable (CuPy missing or no device)")
    return device


# --------------------------------------------------------------------------
# reading and writing
# --------------------------------------------------------------------------

def _extension(path, role):
    ext = Path(path).suffix.lower()
    allowed = INPUT_EXTENSIONS if role == "input" else EXTENSIONS
    if ext not in allowed:
        hint = ""
        if role == "output" and ext in INPUT_EXTENSIONS:
            hint = " (labels need a lossless format of 16 bits or more)"
        raise CLIError(
            f"{role} file {path}: unknown extension {ext or '(none)'!r}{hint}; "
            f"use one of {', '.join(allowed)}"
        )
    return ext


def _first_line(exc):
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def pack_colours(image):
    """Pack the channels (last axis) of a colour image into one integer per pixel.

    The first channel goes to the highest bits, so an 8-bit RGB pixel
    ``(r, g, b)`` becomes ``0xRRGGBB`` and RGBA becomes ``0xRRGGBBAA``.  Two
    pixels get the same value exactly when all their channels are equal.

    Parameters
    ----------
    image : numpy.ndarray
        Unsigned-integer (or bool) array whose last axis holds the channels.

    Returns
    -------
    numpy.ndarray
        Unsigned array of ``image.shape[:-1]``, wide enough for all channels.

    Raises
    ------
    CLIError
        If the channels are not unsigned integers or need more than 64 bits.
    """
    if image.dtype == bool:
        image = image.astype(np.uint8)
    if image.dtype.kind != "u":
        raise CLIError(f"colour images must have unsigned integer channels, got {image.dtype}")
    channels = image.shape[-1]
    bits = image.dtype.itemsize * 8
    total = bits * channels
    if total > 64:
        raise CLIError(f"{channels} channels of {bits} bits do not fit in 64 bits")
    out_dtype = next(np.dtype(f"uint{w}") for w in (8, 16, 32, 64) if w >= total)
    shift = out_dtype.type(bits)
    packed = np.zeros(image.shape[:-1], dtype=out_dtype)
    for k in range(channels):
        packed <<= shift
        packed |= image[..., k].astype(out_dtype)
    return packed


def _read_tiff(path):
    """Read every series of a TIFF; return (array, has_colour_axis)."""
    import tifffile

    with tifffile.TiffFile(path) as tif:
        series = list(tif.series)
        if not series:
            raise CLIError(f"cannot read input file {path}: it holds no images")
        first = series[0]
        if len(series) == 1:
            data = first.asarray()
        elif all(s.shape == first.shape and s.dtype == first.dtype for s in series):
            # One page per slice, written as separate series: stack them.
            data = np.stack([s.asarray() for s in series])
        else:
            print(f"meshccl: warning: {path} holds {len(series)} series of different "
                  f"shapes; labelling only the first, {first.shape}", file=sys.stderr)
            data = first.asarray()
        colour = first.axes.endswith("S") and data.shape[-1] > 1
    return data, colour


def _read_npy(path):
    """A ``.npy`` file's array; a CLIError for a file that is not one, or
    that holds Python objects (never unpickled: a file may run code)."""
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic != b"\x93NUMPY":
        raise CLIError(f"cannot read input file {path}: not a NumPy .npy file (it does not "
                       "start with the .npy header)")
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "Object arrays" not in str(exc):
            raise
    raise CLIError(f"cannot read input file {path}: it holds a NumPy object array (Python "
                   "objects, not numbers); save a bool, integer or float array")


def read_image(path):
    """Read a ``.npy``, ``.tif``/``.tiff``, ``.png``, ``.jpg``/``.jpeg`` or
    ``.bmp`` file for labelling.

    Colour images are packed with :func:`pack_colours`, so they come back as
    2-D arrays of one integer per pixel.

    Parameters
    ----------
    path : str or pathlib.Path
        The input file.

    Returns
    -------
    image : numpy.ndarray
        The values to label.
    colour : bool
        True when the file was a colour image and was packed.

    Raises
    ------
    CLIError
        For an unknown extension, or a missing or unreadable file.
    """
    ext = _extension(path, "input")
    if not Path(path).is_file():
        raise CLIError(f"input file {path} does not exist" if not Path(path).exists()
                       else f"input file {path} is not a file")
    try:
        if ext == ".npy":
            image, colour = _read_npy(path), False
        elif ext in (".tif", ".tiff"):
            image, colour = _read_tiff(path)
        else:
            import imageio.v3 as iio

            # (Pillow only: without a plugin, imageio tries every plugin on a
            # file Pillow cannot read, legacy ones too, and warns about them.)
            image = np.asarray(iio.imread(path, plugin="pillow"))
            colour = image.ndim == 3
    except CLIError:
        raise
    except Exception as exc:  # any reader failure means "unreadable"
        raise CLIError(f"cannot read input file {path}: {_first_line(exc)}") from None
    if colour:
        image = pack_colours(image)
    return image, colour


def _png_dtype(num, path):
    if num < 256:
        return np.uint8
    if num < 65536:
        return np.uint16
    raise CLIError(
        f"output file {path}: {num} labels do not fit in a 16-bit PNG; write .tif or .npy instead"
    )


def _check_output(path, ext, ndim):
    """Checks that need no labels: the folder exists, PNG gets a 2-D image."""
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        above = next(p for p in (parent, *parent.parents) if p.exists())
        if not above.is_dir():
            raise CLIError(f"output file {path}: {above} is a file, not a folder")
        raise CLIError(f"output file {path}: folder {parent} does not exist")
    if Path(path).is_dir():
        raise CLIError(f"output file {path} is a folder; name a file")
    if ext == ".png" and ndim != 2:
        raise CLIError(
            f"output file {path}: PNG holds only 2-D images, these labels are {ndim}-D; "
            "write .tif or .npy instead"
        )


def write_labels(path, labels, num, *, to=None):
    """Write a label array to ``path``; the extension picks the format.

    Parameters
    ----------
    path : str or pathlib.Path
        ``.npy``, ``.tif``/``.tiff`` (1-D labels as a single row) or
        ``.png`` (2-D only).
    labels : numpy.ndarray
        Labels 0..num.
    num : int
        The largest label.
    to : str or pathlib.Path, optional
        Write there instead, in ``path``'s format (a temporary file that
        then replaces ``path``: :func:`write_together`); messages name
        ``path``.

    Returns
    -------
    numpy.dtype
        The dtype written.

    Raises
    ------
    CLIError
        For an unknown extension, a PNG that cannot hold the labels, or a
        file that cannot be written.
    """
    ext = _extension(path, "output")
    _check_output(path, ext, labels.ndim)
    target = path if to is None else to
    try:
        if ext == ".npy":
            with open(target, "wb") as f:  # (np.save would add .npy to another name)
                np.save(f, labels)
            return labels.dtype
        if ext in (".tif", ".tiff"):
            import tifffile

            out = labels.astype(np.uint32 if num < 2**32 else np.uint64, copy=False)
            if out.ndim < 2:  # (a TIFF page has rows and columns: one row)
                out = out.reshape(1, -1)
            tifffile.imwrite(target, out, photometric="minisblack")
            return out.dtype
        import imageio.v3 as iio

        out = labels.astype(_png_dtype(num, path), copy=False)
        iio.imwrite(target, out, extension=".png")
        return out.dtype
    except CLIError:
        raise
    except Exception as exc:
        raise CLIError(f"cannot write output file {path}: {_first_line(exc)}") from None


# --------------------------------------------------------------------------
# subcommands
# --------------------------------------------------------------------------

def _describe(image):
    dims = " x ".join(str(s) for s in image.shape) or "scalar"
    return f"{image.ndim}-D {dims} {image.dtype}"


def _is_folder_arg(path):
    """An output argument that names a folder: an existing one, or ends with '/'."""
    text = str(path)
    return Path(text).is_dir() or text.endswith(("/", "\\"))


def plan_outputs(inputs, out, colour=None, stats=None, out_ext=None):
    """Decide the files ``meshccl label`` writes for each input.

    One input and an ``out`` that is not a folder: ``out`` itself (and
    ``colour`` / ``stats`` as given).  Otherwise ``out`` is a folder and the
    input ``NAME.EXT`` is written as ``out/NAME_labels.EXT`` (``.png`` for
    ``.jpg``/``.jpeg``/``.bmp`` inputs, or ``out_ext``), with
    ``colour/NAME_colour.png`` and ``stats/NAME_stats.csv``.

    Parameters
    ----------
    inputs : list of str
        Input files.
    out : str
        The output file, or folder.
    colour, stats : str, optional
        ``--colour`` and ``--stats`` arguments.
    out_ext : str, optional
        Output extension for the folder form (e.g. ``'.npy'``).

    Returns
    -------
    list of (str, str, str or None, str or None)
        ``(input, labels file, colour file, stats file)`` per input.

    Raises
    ------
    CLIError
        For names that collide, or an output that is one of the inputs.
    """
    several = len(inputs) > 1 or _is_folder_arg(out)
    if out_ext is not None and not out_ext.startswith("."):
        out_ext = "." + out_ext
    if out_ext is not None and out_ext.lower() not in EXTENSIONS:
        raise CLIError(f"--out-ext {out_ext}: use one of {', '.join(EXTENSIONS)}")
    plans = []
    if not several:
        plans.append((inputs[0], out, colour, stats))
    else:
        stems = {}
        for path in inputs:
            stem = Path(path).stem
            if stem in stems:
                raise CLIError(f"inputs {stems[stem]} and {path} would both be written as "
                               f"{stem}_labels.*; rename one or label them separately")
            stems[stem] = path
        for folder, opt in ((out, "OUT"), (colour, "--colour"), (stats, "--stats")):
            if folder is not None and Path(folder).exists() and not Path(folder).is_dir():
                raise CLIError(f"{opt} {folder}: with several inputs this must be a folder")
        for path in inputs:
            stem, ext = Path(path).stem, Path(path).suffix.lower()
            ext = out_ext or (ext if ext in EXTENSIONS else ".png")
            plans.append((path, str(Path(out) / f"{stem}_labels{ext}"),
                          None if colour is None else str(Path(colour) / f"{stem}_colour.png"),
                          None if stats is None else str(Path(stats) / f"{stem}_stats.csv")))
    sources = {Path(p).resolve(): p for p in inputs}
    for _, *written in plans:
        for w in written:
            if w is not None and Path(w).resolve() in sources:
                raise CLIError(f"output file {w} is the input file {sources[Path(w).resolve()]}; "
                               "write the labels somewhere else")
    return plans


def remove_small(labels, num, min_size):
    """Remove components of fewer than ``min_size`` cells; renumber the rest.

    Like ``skimage.morphology.remove_small_objects`` followed by a
    renumbering: the kept components keep their order (raster order of
    their first cells) and are numbered 1..M.

    Parameters
    ----------
    labels : numpy.ndarray
        Labels 0..num in raster order of first cells.
    num : int
        The largest label.
    min_size : int
        Components smaller than this become background (0).

    Returns
    -------
    labels : numpy.ndarray
        New labels, same dtype.
    num : int
        The number of components kept.
    """
    counts = np.bincount(labels.ravel(), minlength=num + 1)
    keep = counts >= min_size
    keep[0] = False
    lut = np.zeros(num + 1, dtype=labels.dtype)
    lut[keep] = np.arange(1, int(keep.sum()) + 1, dtype=labels.dtype)
    return lut[labels], int(keep.sum())


def component_stats(labels, num):
    """Per-label cell count, bounding box and centroid.

    Parameters
    ----------
    labels : numpy.ndarray
        Labels 0..num.
    num : int
        The largest label.

    Returns
    -------
    header : list of str
        ``label, count, bbox_min_0.., bbox_max_0.., centroid_0..``; the
        bounding box ends are exclusive (as ``skimage.measure.regionprops``'
        ``bbox``), coordinates are array indices along axis 0, 1, ...
    rows : list of list
        One row per label 1..num (a label without cells has count 0 and
        empty box and centroid).
    """
    from .measure import statistics

    ndim = labels.ndim
    stats = statistics(labels)  # rows 0..largest label, boxes [min0, max0, min1, ...] inclusive
    counts, boxes, centroids = stats["voxel_counts"], stats["bounding_boxes"], stats["centroids"]
    header = (["label", "count"] + [f"bbox_min_{a}" for a in range(ndim)]
              + [f"bbox_max_{a}" for a in range(ndim)] + [f"centroid_{a}" for a in range(ndim)])
    rows = []
    for lab in range(1, num + 1):
        if lab >= len(counts) or counts[lab] == 0:
            rows.append([lab, 0] + [""] * (3 * ndim))
            continue
        box = boxes[lab]
        rows.append([lab, int(counts[lab])] + [int(box[2 * a]) for a in range(ndim)]
                    + [int(box[2 * a + 1]) + 1 for a in range(ndim)]
                    + [f"{centroids[lab, a]:.6g}" for a in range(ndim)])
    return header, rows


def write_stats(path, labels, num, *, to=None):
    """Write :func:`component_stats` as CSV to ``path`` (or ``to``, as
    :func:`write_labels` takes it)."""
    header, rows = component_stats(labels, num)
    try:
        with open(path if to is None else to, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
    except OSError as exc:
        raise CLIError(f"cannot write stats file {path}: {_first_line(exc)}") from None


def write_colour(path, labels, num, *, to=None):
    """Write a PNG preview of 2-D labels: one random colour per label,
    background black (to ``to`` instead, as :func:`write_labels` takes it)."""
    from .demo import colourise

    import imageio.v3 as iio

    try:
        iio.imwrite(path if to is None else to, colourise(labels, num), extension=".png")
    except Exception as exc:
        raise CLIError(f"cannot write colour preview {path}: {_first_line(exc)}") from None


def write_together(writes):
    """Write every output or none of them.

    Each output is first written to a temporary file beside it (same
    folder, same extension); only when all were written do the temporaries
    replace the outputs.  If one fails, the temporaries are removed and
    no output is touched.

    Parameters
    ----------
    writes : list of (str, callable)
        ``(path, write)``: ``write(to)`` writes the output meant for
        ``path`` to the file ``to``.

    Returns
    -------
    list
        What each ``write`` returned.
    """
    temps, results = [], []
    try:
        for path, write in writes:
            p = Path(path)
            tmp = p.with_name(f".{p.stem}.{os.getpid()}-{len(temps)}.partial{p.suffix}")
            temps.append(tmp)
            results.append(write(tmp))
        for (path, _), tmp in zip(writes, temps):
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise CLIError(f"cannot write output file {path}: {_first_line(exc)}") from None
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
    return results


def _warn_float_truncation(image, args, path):
    """Float input without --tolerance that truncation turns into background only."""
    if image.dtype.kind != "f" or args.tolerance is not None or image.size == 0:
        return
    background = 0 if args.background is None else args.background
    if int(background) != 0 or not np.isfinite(image).all():
        return
    if np.abs(image).max() < 1 and image.any():
        print(f"meshccl: warning: {path}: every value lies in (-1, 1); without --tolerance floats "
              "are truncated to integers (as skimage does), so every cell becomes background 0. "
              "Use --tolerance T to label a continuous field.", file=sys.stderr)


def _warm_up(image, kwargs):
    """Label a small crop with the same options, so the timed call compiles nothing."""
    crop = tuple(slice(0, min(s, 4)) for s in image.shape)
    small = dict(kwargs)
    if "mask" in small:
        small["mask"] = np.ascontiguousarray(small["mask"][crop])
    try:
        meshccl.label(np.ascontiguousarray(image[crop]), **small)
    except Exception:  # the real call reports any error
        pass


def _label_one(args, src, out, colour_path, stats_path, axes, device):
    """Label one input file and write what was asked for."""
    out_ext = _extension(out, "output")
    image, colour = read_image(src)
    _check_output(out, out_ext, image.ndim)
    if colour_path is not None:
        if Path(colour_path).suffix.lower() != ".png":
            raise CLIError(f"--colour {colour_path}: the preview is a .png file")
        if image.ndim != 2:
            raise CLIError(f"--colour {colour_path}: the preview is drawn for 2-D labels only; "
                           f"{src} is {image.ndim}-D")
        _check_output(colour_path, ".png", 2)
    if stats_path is not None:
        _check_output(stats_path, ".csv", image.ndim)
    k = args.connectivity
    if k is not None and axes is None and not 1 <= k <= max(image.ndim, 1):
        raise CLIError(
            f"--connectivity {k} is out of range for the {image.ndim}-D image in "
            f"{src} (use 1..{max(image.ndim, 1)})"
        )
    lattice = _lattice_options(args, image, src)
    _warn_float_truncation(image, args, src)
    kwargs = dict(background=args.background, connectivity=k, device=device,
                  method=args.method, axes=axes, **lattice)

    _warm_up(image, kwargs)
    try:
        start = time.perf_counter()
        labels, num = meshccl.label(image, return_num=True, **kwargs)
        ms = (time.perf_counter() - start) * 1e3
    except (TypeError, ValueError, NotImplementedError, MemoryError) as exc:
        raise CLIError(f"cannot label {src}: {_first_line(exc)}") from None
    removed = ""
    if args.min_size is not None:
        before = num
        labels, num = remove_small(labels, num, args.min_size)
        removed = f"; {before - num} smaller than {args.min_size} cells removed"

    writes = [(out, lambda to: write_labels(out, labels, num, to=to))]
    if colour_path is not None:
        writes.append((colour_path, lambda to: write_colour(colour_path, labels, num, to=to)))
    if stats_path is not None:
        writes.append((stats_path, lambda to: write_stats(stats_path, labels, num, to=to)))
    written = write_together(writes)[0]
    kind = ", packed colours" if colour else ""
    conn = k if k is not None else (image.ndim if axes is None else len(axes))
    along = "" if axes is None else f", along axes {','.join(str(a) for a in axes)}"
    how = "" if args.method == "auto" else f", method {args.method}"
    # (a 0-d image is one cell with no neighbours: no connectivity to speak of)
    joined = "one cell, no neighbours" if image.ndim == 0 else f"connectivity {conn}"
    print(f"{src}: {_describe(image)}{kind}")
    print(f"{num} components ({joined}{along}{how}, {device}) "
          f"in {ms:.1f} ms (label call){removed}")
    print(f"wrote {out} ({np.dtype(written).name})"
          + (f", {colour_path}" if colour_path else "") + (f", {stats_path}" if stats_path else ""))


def cmd_label(args):
    """Run ``meshccl label``; see ``meshccl label --help``.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments: ``paths`` (inputs, then the output), ``connectivity``,
        ``background``, ``device``, ``periodic``, ``tolerance``, ``mask``,
        ``axes``, ``method``, ``min_size``, ``colour``, ``stats``, ``out_ext``.

    Returns
    -------
    int
        Exit status (0).
    """
    if len(args.paths) < 2:
        raise CLIError("label needs an input and an output: meshccl label IN OUT "
                       "(or IN [IN ...] DIR)")
    inputs, out = args.paths[:-1], args.paths[-1]
    for src in inputs:
        _extension(src, "input")
    plans = plan_outputs(inputs, out, args.colour, args.stats, args.out_ext)
    if args.mask is not None:
        mask = Path(args.mask).resolve()
        for _, *written in plans:
            if any(w is not None and Path(w).resolve() == mask for w in written):
                raise CLIError(f"an output file is the mask file {args.mask}; "
                               "write the labels somewhere else")
    if len(plans) > 1 or _is_folder_arg(out):
        for folder in (out, args.colour, args.stats):
            if folder is not None:
                try:
                    Path(folder).mkdir(exist_ok=True)
                except OSError as exc:
                    raise CLIError(f"cannot create folder {folder}: {_first_line(exc)}") from None
    axes = _axes_option(args.axes)
    device = resolve_device(args.device)
    for src, dst, colour_path, stats_path in plans:
        _label_one(args, src, dst, colour_path, stats_path, axes, device)
    return 0


def _axes_option(text):
    """--axes '1,2' as a tuple of ints (None when absent)."""
    if text is None:
        return None
    try:
        return tuple(int(a) for a in text.split(","))
    except ValueError:
        raise CLIError(f"--axes takes comma-separated axis numbers (e.g. 1,2), got {text!r}") from None


def _lattice_options(args, image, src):
    """--periodic / --tolerance / --mask as keyword arguments of meshccl.label."""
    out = {}
    if args.periodic is not None:
        if args.periodic.strip().lower() == "all":
            out["periodic"] = True
        else:
            try:
                axes = {int(a) for a in args.periodic.split(",") if a.strip()}
            except ValueError:
                raise CLIError(f"--periodic must be 'all' or axis numbers like 0,1; got "
                               f"{args.periodic!r}") from None
            bad = sorted(a for a in axes if not 0 <= a < image.ndim)
            if bad:
                raise CLIError(f"--periodic axis {bad[0]} is out of range for the {image.ndim}-D "
                               f"image in {src}")
            out["periodic"] = tuple(a in axes for a in range(image.ndim))
    if args.tolerance is not None:
        out["tolerance"] = args.tolerance
    if args.mask is not None:
        mask, _ = read_image(args.mask)
        if mask.shape != image.shape:
            raise CLIError(f"--mask {args.mask} has shape {mask.shape}, but {src} has "
                           f"shape {image.shape}")
        out["mask"] = mask != 0
    return out


def cmd_demo(args):
    """Run ``meshccl demo``; see :func:`meshccl.demo.run_demo`.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments: ``size``, ``out``, ``device``.

    Returns
    -------
    int
        Exit status (0).
    """
    from .demo import run_demo

    device = resolve_device(args.device)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {out}: exists and is not a folder")
    run_demo(size=args.size, out_dir=out, device=device)
    return 0


# --------------------------------------------------------------------------
# parser and entry point
# --------------------------------------------------------------------------

def build_parser():
    """Build the ``meshccl`` argument parser.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog="meshccl",
        description="Connected-component labelling on the GPU (CuPy) and CPU (C++), "
                    "a drop-in for skimage.measure.label.",
    )
    parser.add_argument("--version", action="version", version=f"meshccl {meshccl.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    devices = ("auto", "cpu", "gpu")

    p = sub.add_parser("label", help="label an image or volume file",
                       description=_LABEL_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="IN [IN ...] OUT: input files (.npy, .tif, .tiff, .png, .jpg, .jpeg, .bmp), then the "
                        "output file (.npy, .tif, .tiff, .png) or, for several inputs, a folder")
    p.add_argument("-c", "--connectivity", type=positive_int, default=None, metavar="K",
                   help="maximum number of orthogonal hops between neighbours, 1..ndim "
                        "(default ndim: 8-connected in 2-D, 26 in 3-D)")
    p.add_argument("-b", "--background", type=parse_background, default=None, metavar="V",
                   help="value that gets label 0: int (0x.. hex allowed) or float (default 0)")
    p.add_argument("--device", choices=devices, default="auto",
                   help="where to label (default auto: the GPU when one is usable)")
    p.add_argument("--periodic", default=None, metavar="AXES",
                   help="wrap around: 'all', or comma-separated axis numbers (e.g. 0,1)")
    p.add_argument("--tolerance", type=_tolerance, default=None, metavar="T",
                   help="join neighbours whose values differ by at most T (continuous fields)")
    p.add_argument("--mask", default=None, metavar="FILE",
                   help="image of the same shape; its zero cells are background")
    p.add_argument("--axes", default=None, metavar="AXES",
                   help="label along these axes only, comma-separated (e.g. 1,2: every image "
                        "of a stack on its own)")
    p.add_argument("--method", choices=meshccl.labelling.METHODS, default="auto",
                   help="algorithm (default auto: the one-pass union-find)")
    p.add_argument("--min-size", type=positive_int, default=None, metavar="N",
                   help="remove components of fewer than N cells, then renumber the rest "
                        "1..M in raster order (like skimage's remove_small_objects)")
    p.add_argument("--colour", "--color", default=None, metavar="PNG",
                   help="also write a coloured preview of the 2-D labels (a random colour "
                        "per label, background black)")
    p.add_argument("--stats", default=None, metavar="CSV",
                   help="also write per-label cell count, bounding box (end exclusive) "
                        "and centroid as CSV")
    p.add_argument("--out-ext", default=None, metavar="EXT",
                   help="with an output folder: the output format (.npy, .tif, .tiff, .png; "
                        "default: the input's, .png for .jpg/.bmp)")

    p = sub.add_parser("demo", help="label Hawick's spiral and a blob field, time it, draw it",
                       description="Label Hawick's spiral and a Cahn-Hilliard-like blob field "
                                   "of N x N cells at connectivity 1 and 2, print timings and "
                                   "write PNG pictures of the labels.")
    p.add_argument("--size", type=positive_int, default=1024, metavar="N",
                   help="image side length (default 1024)")
    p.add_argument("--out", default="meshccl-demo", metavar="DIR",
                   help="folder for the pictures (default ./meshccl-demo)")
    p.add_argument("--device", choices=devices, default="auto",
                   help="where to label (default auto: the GPU when one is usable)")
    return parser


def main(argv=None):
    """Entry point of the ``meshccl`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success, 2 on a usage error (missing or unreadable
        file, unknown extension, bad argument), otherwise what the command
        returned.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["bench"]:
            raise CLIError("'meshccl bench' was removed; run 'python benchmarks/bench.py' "
                           "from a source checkout (see benchmarks/README.md)")
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version, argparse errors
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        if args.command == "label":
            return cmd_label(args)
        return cmd_demo(args)
    except CLIError as exc:
        print(f"meshccl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("meshccl: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
