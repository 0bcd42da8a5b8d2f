"""The ``meshccl`` command line.

Subcommands::

    meshccl label IN OUT [--connectivity K] [--background V] [--device D]
    meshccl demo [--size N] [--out DIR] [--device D]
    meshccl bench [ARGS...]
    meshccl --version

``python -m meshccl`` runs the same program.  Usage errors (a missing or
unreadable file, an unknown extension, a connectivity out of range, ...)
print one line to stderr and give exit status 2.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import meshccl

#: File types ``meshccl label`` reads and writes, by extension.
EXTENSIONS = (".npy", ".png", ".tif", ".tiff")

_LABEL_HELP = """\
Label the connected components of an image or volume, like
skimage.measure.label, and write the labels (0 = background, 1..N).

Input (IN):
  .npy         any NumPy array (bool, integer or float; any number of axes)
  .tif .tiff   a 2-D image or a 3-D (or N-D) stack; a file holding one page per
               slice is read as one volume
  .png         a 2-D image

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


def _positive_int(text):
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
    if ext not in EXTENSIONS:
        raise CLIError(
            f"{role} file {path}: unknown extension {ext or '(none)'!r}; "
            f"use one of {', '.join(EXTENSIONS)}"
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


def read_image(path):
    """Read a ``.npy``, ``.png`` or ``.tif``/``.tiff`` file for labelling.

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
            image, colour = np.load(path, allow_pickle=False), False
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
        raise CLIError(f"output file {path}: folder {parent} does not exist")
    if ext == ".png" and ndim != 2:
        raise CLIError(
            f"output file {path}: PNG holds only 2-D images, these labels are {ndim}-D; "
            "write .tif or .npy instead"
        )


def write_labels(path, labels, num):
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
    try:
        if ext == ".npy":
            np.save(path, labels)
            return labels.dtype
        if ext in (".tif", ".tiff"):
            import tifffile

            out = labels.astype(np.uint32 if num < 2**32 else np.uint64, copy=False)
            if out.ndim < 2:  # (a TIFF page has rows and columns: one row)
                out = out.reshape(1, -1)
            tifffile.imwrite(path, out, photometric="minisblack")
            return out.dtype
        import imageio.v3 as iio

        out = labels.astype(_png_dtype(num, path), copy=False)
        iio.imwrite(path, out, extension=".png")
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


def cmd_label(args):
    """Run ``meshccl label``; see ``meshccl label --help``.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments: ``input``, ``output``, ``connectivity``,
        ``background``, ``device``, ``periodic``, ``tolerance``, ``mask``.

    Returns
    -------
    int
        Exit status (0).
    """
    out_ext = _extension(args.output, "output")
    image, colour = read_image(args.input)
    _check_output(args.output, out_ext, image.ndim)
    k = args.connectivity
    axes = _axes_option(args.axes)
    if k is not None and axes is None and not 1 <= k <= max(image.ndim, 1):
        raise CLIError(
            f"--connectivity {k} is out of range for the {image.ndim}-D image in "
            f"{args.input} (use 1..{max(image.ndim, 1)})"
        )
    device = resolve_device(args.device)
    lattice = _lattice_options(args, image)

    start = time.perf_counter()
    try:
        labels, num = meshccl.label(image, background=args.background, return_num=True,
                                    connectivity=k, device=device, method=args.method,
                                    axes=axes, **lattice)
    except (TypeError, ValueError) as exc:
        raise CLIError(f"cannot label {args.input}: {_first_line(exc)}") from None
    ms = (time.perf_counter() - start) * 1e3

    written = write_labels(args.output, labels, num)
    kind = ", packed colours" if colour else ""
    conn = k if k is not None else (image.ndim if axes is None else len(axes))
    along = "" if axes is None else f", along axes {','.join(str(a) for a in axes)}"
    how = "" if args.method == "auto" else f", method {args.method}"
    print(f"{args.input}: {_describe(image)}{kind}")
    print(f"{num} components (connectivity {conn}{along}{how}, {device}) in {ms:.1f} ms")
    print(f"wrote {args.output} ({np.dtype(written).name})")
    return 0


def _axes_option(text):
    """--axes '1,2' as a tuple of ints (None when absent)."""
    if text is None:
        return None
    try:
        return tuple(int(a) for a in text.split(","))
    except ValueError:
        raise CLIError(f"--axes takes comma-separated axis numbers (e.g. 1,2), got {text!r}") from None


def _lattice_options(args, image):
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
                               f"image in {args.input}")
            out["periodic"] = tuple(a in axes for a in range(image.ndim))
    if args.tolerance is not None:
        out["tolerance"] = args.tolerance
    if args.mask is not None:
        mask, _ = read_image(args.mask)
        if mask.shape != image.shape:
            raise CLIError(f"--mask {args.mask} has shape {mask.shape}, but {args.input} has "
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


def bench_script():
    """Path of ``benchmarks/bench.py`` in the source checkout meshccl runs from.

    Returns
    -------
    pathlib.Path
        The path, whether or not it exists.
    """
    return Path(meshccl.__file__).resolve().parents[1] / "benchmarks" / "bench.py"


def cmd_bench(bench_args):
    """Run ``benchmarks/bench.py`` with ``bench_args`` in a child Python.

    Parameters
    ----------
    bench_args : list of str
        Arguments forwarded unchanged (``--help`` included).

    Returns
    -------
    int
        The benchmark's exit status.

    Raises
    ------
    CLIError
        If the script is missing, as in an installed wheel without the
        source repository.
    """
    script = bench_script()
    if not script.is_file():
        raise CLIError(
            f"benchmark script {script} not found; 'meshccl bench' needs a source "
            "checkout of meshccl (benchmarks/ is not part of the installed package)"
        )
    return subprocess.run([sys.executable, str(script), *bench_args]).returncode


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
        description="Connected-component labelling on the GPU (CuPy) and CPU (numba), "
                    "a drop-in for skimage.measure.label.",
    )
    parser.add_argument("--version", action="version", version=f"meshccl {meshccl.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    devices = ("auto", "cpu", "gpu")

    p = sub.add_parser("label", help="label an image or volume file",
                       description=_LABEL_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", metavar="IN", help="input file: .npy, .png, .tif or .tiff")
    p.add_argument("output", metavar="OUT", help="output file: .npy, .png, .tif or .tiff")
    p.add_argument("-c", "--connectivity", type=_positive_int, default=None, metavar="K",
                   help="maximum number of orthogonal hops between neighbours, 1..ndim "
                        "(default ndim: 8-connected in 2-D, 26 in 3-D)")
    p.add_argument("-b", "--background", type=parse_background, default=None, metavar="V",
                   help="value that gets label 0: int (0x.. hex allowed) or float (default 0)")
    p.add_argument("--device", choices=devices, default="auto",
                   help="where to label (default auto: the GPU when one is usable)")
    p.add_argument("--periodic", default=None, metavar="AXES",
                   help="wrap around: 'all', or comma-separated axis numbers (e.g. 0,1)")
    p.add_argument("--tolerance", type=float, default=None, metavar="T",
                   help="join neighbours whose values differ by at most T (continuous fields)")
    p.add_argument("--mask", default=None, metavar="FILE",
                   help="image of the same shape; its zero cells are background")
    p.add_argument("--axes", default=None, metavar="AXES",
                   help="label along these axes only, comma-separated (e.g. 1,2: every image "
                        "of a stack on its own)")
    p.add_argument("--method", choices=meshccl.labelling.METHODS, default="auto",
                   help="algorithm (default auto: the one-pass union-find)")

    p = sub.add_parser("demo", help="label Hawick's spiral and a blob field, time it, draw it",
                       description="Label Hawick's spiral and a Cahn-Hilliard-like blob field "
                                   "of N x N cells at connectivity 1 and 2, print timings and "
                                   "write PNG pictures of the labels.")
    p.add_argument("--size", type=_positive_int, default=1024, metavar="N",
                   help="image side length (default 1024)")
    p.add_argument("--out", default="meshccl-demo", metavar="DIR",
                   help="folder for the pictures (default ./meshccl-demo)")
    p.add_argument("--device", choices=devices, default="auto",
                   help="where to label (default auto: the GPU when one is usable)")

    sub.add_parser("bench", add_help=False, help="run benchmarks/bench.py (source checkout "
                   "only); all further arguments go to it")
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
            # Forward everything, options included, untouched.
            return cmd_bench(argv[1:])
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
