"""The ``meshccl`` command line: file round trips, errors, outputs, demo, version.

CPU only; every test calls ``meshccl.cli.main`` in-process except the ones
that check the installed ``meshccl`` command and ``python -m meshccl``.
"""

import shutil
import subprocess
import sys
import warnings

import imageio.v3 as iio
import numpy as np
import pytest
import tifffile
from skimage.measure import label as sk_label

import meshccl
from meshccl import cli, patterns


def run(capsys, *argv):
    """Run the CLI in-process; return (exit status, stdout, stderr)."""
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def image2d():
    rng = np.random.default_rng(1)
    return rng.integers(0, 3, size=(37, 41)).astype(np.uint8)


@pytest.fixture
def volume():
    return patterns.blobs((12, 20, 24), sigma=1.5)


# --------------------------------------------------------------------------
# round trips
# --------------------------------------------------------------------------

def test_npy_round_trip(tmp_path, capsys, image2d):
    src, dst = tmp_path / "in.npy", tmp_path / "out.npy"
    np.save(src, image2d)
    rc, out, err = run(capsys, "label", src, dst, "--device", "cpu")
    assert rc == 0, err
    got = np.load(dst)
    want, num = meshccl.label(image2d, return_num=True)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, sk_label(image2d))
    assert got.dtype == want.dtype
    assert f"{num} components" in out
    assert " ms" in out


@pytest.mark.parametrize("connectivity", [1, 2])
@pytest.mark.parametrize("background", ["2", "1.7", "-1"])
def test_npy_connectivity_background(tmp_path, capsys, image2d, connectivity, background):
    src, dst = tmp_path / "in.npy", tmp_path / "out.npy"
    a = image2d.astype(np.int16) if background == "-1" else image2d
    np.save(src, a)
    rc, _, err = run(capsys, "label", src, dst, "--connectivity", connectivity,
                     "--background", background)
    assert rc == 0, err
    bg = float(background) if "." in background else int(background)
    np.testing.assert_array_equal(np.load(dst),
                                  sk_label(a, background=bg, connectivity=connectivity))


def test_float_npy(tmp_path, capsys):
    a = np.array([[0.0, 1.5, 1.2], [2.9, 0.0, 2.1], [0.3, 0.0, 1.0]])
    src, dst = tmp_path / "f.npy", tmp_path / "l.npy"
    np.save(src, a)
    assert run(capsys, "label", src, dst, "-c", 1)[0] == 0
    np.testing.assert_array_equal(np.load(dst), sk_label(a, connectivity=1))


@pytest.mark.parametrize("ext", [".tif", ".tiff"])
def test_tif_2d(tmp_path, capsys, image2d, ext):
    src, dst = tmp_path / f"in{ext}", tmp_path / f"out{ext}"
    tifffile.imwrite(src, image2d)
    rc, _, err = run(capsys, "label", src, dst, "--connectivity", "1")
    assert rc == 0, err
    got = tifffile.imread(dst)
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, sk_label(image2d, connectivity=1))
    np.testing.assert_array_equal(iio.imread(dst), got)


@pytest.mark.parametrize("connectivity", [1, 2, 3])
def test_tif_3d_stack(tmp_path, capsys, volume, connectivity):
    src, dst = tmp_path / "stack.tif", tmp_path / "labels.tif"
    tifffile.imwrite(src, volume, photometric="minisblack")
    rc, out, err = run(capsys, "label", src, dst, "-c", connectivity)
    assert rc == 0, err
    assert "3-D 12 x 20 x 24" in out
    got = tifffile.imread(dst)
    assert got.shape == volume.shape
    want, num = meshccl.label(volume, connectivity=connectivity, return_num=True)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, sk_label(volume, connectivity=connectivity))
    assert f"{num} components" in out


def test_tif_one_page_per_slice(tmp_path, capsys, volume):
    """A stack written page by page (one series per page) is one volume."""
    src, dst = tmp_path / "pages.tif", tmp_path / "labels.npy"
    with tifffile.TiffWriter(src) as tif:
        for plane in volume:
            tif.write(plane)
    rc, _, err = run(capsys, "label", src, dst, "-c", 1)
    assert rc == 0, err
    got = np.load(dst)
    assert got.shape == volume.shape
    np.testing.assert_array_equal(got, sk_label(volume, connectivity=1))


def test_tif_from_1d(tmp_path, capsys):
    """1-D labels go to a TIFF as one row (tifffile needs rows and columns;
    this used to fail with 'tuple index out of range')."""
    a = (np.arange(200) % 7 != 0).astype(np.uint8)
    src, dst = tmp_path / "row.npy", tmp_path / "row.tif"
    np.save(src, a)
    rc, _, err = run(capsys, "label", src, dst)
    assert rc == 0, err
    got = tifffile.imread(dst)
    assert got.shape == (1, 200) and got.dtype == np.uint32
    np.testing.assert_array_equal(got[0], sk_label(a))


def test_png_2d_uint8(tmp_path, capsys, image2d):
    src, dst = tmp_path / "in.png", tmp_path / "out.png"
    iio.imwrite(src, image2d * 100)
    rc, _, err = run(capsys, "label", src, dst)
    assert rc == 0, err
    got = iio.imread(dst)
    want = sk_label(image2d * 100)
    assert want.max() < 256 and got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


def test_png_uint16_when_more_than_255_labels(tmp_path, capsys):
    board = (np.indices((40, 40)).sum(axis=0) % 2).astype(np.uint8)  # 800 isolated 1-cells
    src, dst = tmp_path / "board.npy", tmp_path / "board.png"
    np.save(src, board)
    rc, out, err = run(capsys, "label", src, dst, "-c", 1)
    assert rc == 0, err
    got = iio.imread(dst)
    assert got.dtype == np.uint16 and got.max() == 800
    np.testing.assert_array_equal(got, sk_label(board, connectivity=1))


def test_png_too_many_labels(tmp_path, capsys):
    board = (np.indices((400, 400)).sum(axis=0) % 2).astype(np.uint8)  # 80000 labels
    src, dst = tmp_path / "board.npy", tmp_path / "board.png"
    np.save(src, board)
    rc, _, err = run(capsys, "label", src, dst, "-c", 1)
    assert rc == 2
    assert "80000 labels" in err and ".tif" in err
    assert not dst.exists()


def _packed(rgb):
    """Independent packing: one int64 per pixel from its channels."""
    v = np.zeros(rgb.shape[:-1], dtype=np.int64)
    for k in range(rgb.shape[-1]):
        v = v * 256 + rgb[..., k]
    return v


@pytest.mark.parametrize("channels", [3, 4])
def test_rgb_png_by_colour(tmp_path, capsys, channels):
    palette = np.array([[0, 0, 0, 255], [255, 0, 0, 255], [0, 0, 255, 255],
                        [255, 255, 255, 255], [255, 0, 0, 128]], dtype=np.uint8)[:, :channels]
    rng = np.random.default_rng(5)
    index = rng.integers(0, len(palette), size=(30, 33))
    index[:10, :10] = 1   # a red square next to
    index[:10, 10:20] = 2  # a blue one: different colours, different labels
    rgb = palette[index]
    src, dst = tmp_path / "colours.png", tmp_path / "labels.npy"
    iio.imwrite(src, rgb)
    background = "0x000000FF" if channels == 4 else "0"  # opaque black
    rc, out, err = run(capsys, "label", src, dst, "-c", 1, "--background", background)
    assert rc == 0, err
    assert "packed colours" in out
    got = np.load(dst)
    assert got.shape == (30, 33)
    want = sk_label(_packed(rgb), connectivity=1, background=int(background, 0))
    np.testing.assert_array_equal(got, want)
    assert got[0, 0] != got[0, 10] and got[0, 0] > 0 and got[0, 10] > 0
    assert (got[index == 0] == 0).all()  # black is background


def test_rgb_png_white_background(tmp_path, capsys):
    rgb = np.full((8, 8, 3), 255, dtype=np.uint8)
    rgb[2:4, 2:4] = (10, 20, 30)
    rgb[5:7, 5:7] = (10, 20, 30)
    src, dst = tmp_path / "w.png", tmp_path / "w.png.npy"
    iio.imwrite(src, rgb)
    assert run(capsys, "label", src, dst, "--background", "0xFFFFFF")[0] == 0
    got = np.load(dst)
    assert got.max() == 2 and (got[rgb[..., 0] == 255] == 0).all()


def test_pack_colours():
    rgb = np.array([[[1, 2, 3], [255, 255, 255]]], dtype=np.uint8)
    packed = cli.pack_colours(rgb)
    assert packed.dtype == np.uint32
    assert packed.tolist() == [[0x010203, 0xFFFFFF]]
    rgba16 = np.array([[1, 2, 3, 4]], dtype=np.uint16)
    assert cli.pack_colours(rgba16).tolist() == [0x0001000200030004]


# --------------------------------------------------------------------------
# errors: one line on stderr, exit status 2
# --------------------------------------------------------------------------

def _assert_one_line(err):
    assert err.startswith("meshccl: error: ") and err.count("\n") == 1
    assert "Traceback" not in err


def test_missing_input(tmp_path, capsys):
    missing = tmp_path / "nope.tif"
    rc, _, err = run(capsys, "label", missing, tmp_path / "out.npy")
    assert rc == 2
    assert str(missing) in err
    _assert_one_line(err)


@pytest.mark.parametrize("name, content", [("bad.png", b"not a png"), ("bad.npy", b"nope"),
                                           ("bad.tif", b"II*\x00garbage")])
def test_unreadable_input(tmp_path, capsys, name, content):
    src = tmp_path / name
    src.write_bytes(content)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc, _, err = run(capsys, "label", src, tmp_path / "out.npy")
    assert rc == 2
    assert str(src) in err and "cannot read" in err
    _assert_one_line(err)
    # the reader's own complaints (imageio's legacy plugins) stay out of it
    assert not [w for w in caught if issubclass(w.category, DeprecationWarning)], \
        [str(w.message) for w in caught]


def test_unknown_output_extension(tmp_path, capsys, image2d):
    src = tmp_path / "in.npy"
    np.save(src, image2d)
    rc, _, err = run(capsys, "label", src, tmp_path / "out.jpg")
    assert rc == 2
    assert "out.jpg" in err and ".jpg" in err
    _assert_one_line(err)


def test_unknown_input_extension(tmp_path, capsys):
    src = tmp_path / "in.xyz"
    src.write_bytes(b"")
    rc, _, err = run(capsys, "label", src, tmp_path / "out.npy")
    assert rc == 2 and "in.xyz" in err


def test_missing_output_folder(tmp_path, capsys, image2d):
    src = tmp_path / "in.npy"
    np.save(src, image2d)
    rc, _, err = run(capsys, "label", src, tmp_path / "no" / "such" / "out.npy")
    assert rc == 2 and "does not exist" in err


def test_3d_to_png(tmp_path, capsys, volume):
    src = tmp_path / "v.npy"
    np.save(src, volume)
    rc, _, err = run(capsys, "label", src, tmp_path / "v.png")
    assert rc == 2 and "2-D" in err and "3-D" in err


@pytest.mark.parametrize("k", ["3", "0", "-1", "two"])
def test_bad_connectivity(tmp_path, capsys, image2d, k):
    src = tmp_path / "in.npy"
    np.save(src, image2d)
    rc, _, err = run(capsys, "label", src, tmp_path / "out.npy", "--connectivity", k)
    assert rc == 2
    assert "connectivity" in err
    assert "Traceback" not in err


def test_bad_background(tmp_path, capsys, image2d):
    src = tmp_path / "in.npy"
    np.save(src, image2d)
    rc, _, err = run(capsys, "label", src, tmp_path / "out.npy", "--background", "red")
    assert rc == 2 and "background" in err


def test_unsupported_dtype(tmp_path, capsys):
    src = tmp_path / "c.npy"
    np.save(src, np.ones((3, 3), dtype=complex))
    rc, _, err = run(capsys, "label", src, tmp_path / "out.npy")
    assert rc == 2 and str(src) in err
    _assert_one_line(err)


@pytest.mark.skipif(meshccl.gpu_available(), reason="a GPU is usable here")
def test_gpu_without_gpu(tmp_path, capsys, image2d):
    src = tmp_path / "in.npy"
    np.save(src, image2d)
    rc, _, err = run(capsys, "label", src, tmp_path / "out.npy", "--device", "gpu")
    assert rc == 2 and "--device gpu" in err


def test_no_command(capsys):
    rc, _, err = run(capsys)
    assert rc == 2 and "usage" in err


# --------------------------------------------------------------------------
# demo, version
# --------------------------------------------------------------------------

def test_demo(tmp_path, capsys):
    out_dir = tmp_path / "demo"
    rc, out, err = run(capsys, "demo", "--size", 64, "--device", "cpu", "--out", out_dir)
    assert rc == 0, err
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[0] in ("spiral", "blobs"):
            rows[parts[0], int(parts[1])] = (parts[2], int(parts[3]), float(parts[4]))
    images = {"spiral": patterns.spiral(64), "blobs": patterns.blobs((64, 64))}
    assert set(rows) == {(name, k) for name in images for k in (1, 2)}
    for (name, k), (backend, count, ms) in rows.items():
        assert backend == "cpu" and ms >= 0
        assert count == sk_label(images[name], connectivity=k, return_num=True)[1]
    # The spiral's 1-cells are one wall winding through the whole image.
    assert rows["spiral", 1][1] == 1
    assert str(out_dir.resolve()) in out
    assert sorted(p.name for p in out_dir.iterdir()) == ["blobs.png", "spiral.png"]


def test_demo_pictures_are_readable(tmp_path):
    """Each picture holds the two connectivities side by side, enlarged so a
    1-cell wall is many pixels wide, with the background black and each
    component in one colour."""
    from meshccl import demo

    demo.run_demo(size=128, out_dir=tmp_path, device="cpu", repeats=1, stream=open("/dev/null", "w"))
    spiral = iio.imread(tmp_path / "spiral.png")
    n = demo.PICTURE_SPIRAL
    scale = round(demo.PICTURE_PX / n)
    assert spiral.shape[1] > 2 * n * scale  # two panels side by side
    import inspect
    d = {k: v.default for k, v in inspect.signature(demo.side_by_side).parameters.items()}
    top, left = d["gap"] + d["caption_px"], d["gap"]  # the first panel
    panel = spiral[top:top + n * scale, left:left + n * scale]
    cells = panel[scale // 2::scale, scale // 2::scale]  # one pixel per cell
    wall = patterns.spiral(n) == 1
    assert (cells[~wall] == 0).all()  # corridor (background) black
    colours = {tuple(c) for c in cells[wall]}
    assert len(colours) == 1 and colours != {(0, 0, 0)}  # one component, one colour
    blobs = iio.imread(tmp_path / "blobs.png")
    assert blobs.ndim == 3 and len(np.unique(blobs.reshape(-1, 3), axis=0)) > 10


def test_colourise_gives_distinct_bright_colours_and_black_background():
    from meshccl.demo import colourise
    labels = np.arange(200).reshape(10, 20)
    rgb = colourise(labels, 199)
    assert rgb.shape == (10, 20, 3) and rgb.dtype == np.uint8
    assert (rgb[0, 0] == 0).all()
    assert (rgb.reshape(-1, 3)[1:].max(axis=1) >= 190).all()  # value >= 0.75
    assert len(np.unique(rgb.reshape(-1, 3)[1:], axis=0)) > 190


def test_bench_is_not_a_subcommand(capsys):
    rc, out, err = run(capsys, "bench", "--out", "x")
    assert rc == 2 and out == ""
    _assert_one_line(err)
    assert "python benchmarks/bench.py" in err
    assert "bench" not in cli.build_parser().format_help().split("positional arguments")[-1]


def test_version_in_process(capsys):
    rc, out, _ = run(capsys, "--version")
    assert rc == 0 and out.strip() == f"meshccl {meshccl.__version__}"


def test_version_subprocess():
    exe = shutil.which("meshccl")
    commands = [[sys.executable, "-m", "meshccl", "--version"]]
    if exe is not None:
        commands.append([exe, "--version"])
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"meshccl {meshccl.__version__}"


def test_label_lattice_options(tmp_path):
    """--periodic, --tolerance and --mask reach meshccl.label."""
    from meshccl.cli import main
    ring = np.zeros((5, 6), np.uint8)
    ring[:, 0] = ring[:, 5] = 1
    src = tmp_path / "ring.npy"
    np.save(src, ring)
    out = tmp_path / "out.npy"
    assert main(["label", str(src), str(out), "--periodic", "1", "-c", "1"]) == 0
    np.testing.assert_array_equal(np.load(out), meshccl.label(ring, connectivity=1, periodic=(False, True)))
    assert np.load(out).max() == 1
    assert main(["label", str(src), str(out), "--periodic", "all"]) == 0
    field = np.linspace(0, 1, 30).reshape(5, 6)
    np.save(src, field)
    assert main(["label", str(src), str(out), "--tolerance", "0.05", "-b", "-1"]) == 0
    np.testing.assert_array_equal(np.load(out), meshccl.label(field, tolerance=0.05, background=-1))
    mask = (np.arange(30).reshape(5, 6) % 4 != 0).astype(np.uint8)
    np.save(tmp_path / "mask.npy", mask)
    assert main(["label", str(src), str(out), "--tolerance", "0.05", "-b", "-1",
                 "--mask", str(tmp_path / "mask.npy")]) == 0
    np.testing.assert_array_equal(np.load(out), meshccl.label(field, tolerance=0.05, background=-1,
                                                              mask=mask != 0))


def test_integer_tolerance_stays_exact(tmp_path, capsys):
    """--tolerance 9007199254740993 (2**53 + 1) is not rounded to a float."""
    src, out = tmp_path / "big.npy", tmp_path / "out.npy"
    np.save(src, np.array([0, 2**53 + 1], np.int64))
    rc, _, err = run(capsys, "label", src, out, "--tolerance", 2**53 + 1, "-b", -1)
    assert rc == 0, err
    assert np.load(out).tolist() == [1, 1]
    rc, _, err = run(capsys, "label", src, out, "--tolerance", 2**53, "-b", -1)
    assert rc == 0, err
    assert np.load(out).tolist() == [1, 2]
    rc, _, err = run(capsys, "label", src, out, "--tolerance", "-1")
    assert rc == 2 and "--tolerance" in err and "'-1'" in err


@pytest.mark.parametrize("args, msg", [
    (["--periodic", "x"], "--periodic must be 'all' or axis numbers"),
    (["--periodic", "3"], "--periodic axis 3 is out of range"),
    (["--mask", "MASK"], "has shape"),
])
def test_label_lattice_option_errors(tmp_path, capsys, args, msg):
    from meshccl.cli import main
    src = tmp_path / "a.npy"
    np.save(src, np.ones((4, 4), np.uint8))
    np.save(tmp_path / "m.npy", np.ones((3, 3), np.uint8))
    args = [a.replace("MASK", str(tmp_path / "m.npy")) for a in args]
    assert main(["label", str(src), str(tmp_path / "o.npy")] + args) == 2
    assert msg in capsys.readouterr().err


def test_axes_and_method(tmp_path, capsys, volume):
    src, dst = tmp_path / "stack.npy", tmp_path / "labels.npy"
    np.save(src, volume)
    rc, out, _ = run(capsys, "label", src, dst, "--axes", "1,2", "-c", "1", "--method", "D")
    assert rc == 0 and "along axes 1,2" in out and "method D" in out
    np.testing.assert_array_equal(np.load(dst), meshccl.label(volume, axes=(1, 2), connectivity=1))
    rc, _, err = run(capsys, "label", src, dst, "--axes", "1,x")
    assert rc == 2 and "--axes takes comma-separated axis numbers" in err
    rc, _, err = run(capsys, "label", src, dst, "--axes", "5")
    assert rc == 2 and "axes entry 5 is out of range" in err
    rc, _, err = run(capsys, "label", src, dst, "--axes", "2", "-c", "2")
    assert rc == 2 and "connectivity for labelling along axes=(2,)" in err


# --------------------------------------------------------------------------
# outputs beside the labels: --colour, --stats, --min-size
# --------------------------------------------------------------------------

@pytest.fixture
def speckles():
    """A 2-D binary image with components of many sizes."""
    rng = np.random.default_rng(7)
    return (rng.random((40, 50)) < 0.45).astype(np.uint8)


def test_min_size_removes_small_components_and_renumbers(tmp_path, capsys, speckles):
    src, dst = tmp_path / "in.npy", tmp_path / "out.npy"
    np.save(src, speckles)
    rc, out, err = run(capsys, "label", src, dst, "-c", "1", "--min-size", 4)
    assert rc == 0, err
    got = np.load(dst)
    full = sk_label(speckles, connectivity=1)
    sizes = np.bincount(full.ravel())
    kept = full * (sizes[full] >= 4)  # remove_small_objects(min_size=4), labels unchanged
    np.testing.assert_array_equal(got, sk_label(kept > 0, connectivity=1) * (kept > 0))
    # renumbered 1..M in raster order of first cells
    assert got.max() == len(np.unique(got)) - 1 == (sizes[1:] >= 4).sum()
    first = [np.flatnonzero(got.ravel() == v)[0] for v in range(1, got.max() + 1)]
    assert first == sorted(first)
    removed = (sizes[1:] < 4).sum()
    assert removed > 0 and f"{removed} smaller than 4 cells removed" in out
    assert f"{got.max()} components" in out


def test_remove_small_keeps_dtype_and_empty():
    labels = np.array([[1, 1, 0, 2], [0, 3, 3, 3]], dtype=np.int32)
    out, n = cli.remove_small(labels, 3, 3)
    assert out.dtype == np.int32 and n == 1
    np.testing.assert_array_equal(out, [[0, 0, 0, 0], [0, 1, 1, 1]])
    out, n = cli.remove_small(np.zeros((2, 2), np.int64), 0, 5)
    assert n == 0 and not out.any()


def test_stats_csv(tmp_path, capsys, volume):
    import csv
    from scipy import ndimage
    src, dst, stats = tmp_path / "v.npy", tmp_path / "l.npy", tmp_path / "s.csv"
    np.save(src, volume)
    rc, _, err = run(capsys, "label", src, dst, "-c", "1", "--stats", stats)
    assert rc == 0, err
    labels = np.load(dst)
    rows = list(csv.DictReader(open(stats)))
    assert len(rows) == labels.max() > 1
    assert list(rows[0]) == (["label", "count"] + [f"bbox_min_{a}" for a in range(3)]
                             + [f"bbox_max_{a}" for a in range(3)]
                             + [f"centroid_{a}" for a in range(3)])
    boxes = ndimage.find_objects(labels)
    centroids = ndimage.center_of_mass(labels > 0, labels, range(1, labels.max() + 1))
    for row in rows:
        lab = int(row["label"])
        assert int(row["count"]) == (labels == lab).sum()
        assert [int(row[f"bbox_min_{a}"]) for a in range(3)] == [s.start for s in boxes[lab - 1]]
        assert [int(row[f"bbox_max_{a}"]) for a in range(3)] == [s.stop for s in boxes[lab - 1]]
        np.testing.assert_allclose([float(row[f"centroid_{a}"]) for a in range(3)],
                                   centroids[lab - 1], rtol=1e-5)


def test_colour_preview(tmp_path, capsys, speckles):
    src, dst, png = tmp_path / "in.npy", tmp_path / "out.npy", tmp_path / "c.png"
    np.save(src, speckles)
    rc, _, err = run(capsys, "label", src, dst, "--colour", png, "--min-size", 2)
    assert rc == 0, err
    labels, rgb = np.load(dst), iio.imread(png)
    assert rgb.shape == labels.shape + (3,) and rgb.dtype == np.uint8
    assert (rgb[labels == 0] == 0).all() and (rgb[labels > 0].max(axis=1) > 0).all()
    # one colour per label
    for lab in np.unique(labels)[1:6]:
        assert len(np.unique(rgb[labels == lab], axis=0)) == 1


def test_colour_needs_2d(tmp_path, capsys, volume):
    src = tmp_path / "v.npy"
    np.save(src, volume)
    rc, _, err = run(capsys, "label", src, tmp_path / "l.npy", "--colour", tmp_path / "c.png")
    assert rc == 2 and "2-D labels only" in err and "3-D" in err
    _assert_one_line(err)
    assert not (tmp_path / "l.npy").exists()


# --------------------------------------------------------------------------
# several inputs, IN == OUT, JPEG/BMP, float warning, timing, library errors
# --------------------------------------------------------------------------

def test_several_inputs_one_output_each(tmp_path, capsys, speckles, volume):
    a, b, c = tmp_path / "a.npy", tmp_path / "b.png", tmp_path / "c.bmp"
    np.save(a, volume)
    iio.imwrite(b, speckles * 255)
    iio.imwrite(c, np.stack([speckles * 200] * 3, axis=-1))
    out, stats = tmp_path / "out", tmp_path / "stats"
    rc, text, err = run(capsys, "label", a, b, c, out, "-c", "1", "--stats", stats)
    assert rc == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["a_labels.npy", "b_labels.png", "c_labels.png"]
    assert sorted(p.name for p in stats.iterdir()) == ["a_stats.csv", "b_stats.csv", "c_stats.csv"]
    np.testing.assert_array_equal(np.load(out / "a_labels.npy"), sk_label(volume, connectivity=1))
    want = sk_label(speckles, connectivity=1)
    np.testing.assert_array_equal(iio.imread(out / "b_labels.png"), want)
    np.testing.assert_array_equal(iio.imread(out / "c_labels.png"), want)
    assert text.count(" components ") == 3
    # --out-ext picks the format; one input into an existing folder works the same way
    rc, _, err = run(capsys, "label", b, out, "--out-ext", "tif")
    assert rc == 0, err
    np.testing.assert_array_equal(tifffile.imread(out / "b_labels.tif"), sk_label(speckles))


def test_several_inputs_with_the_same_name(tmp_path, capsys, image2d):
    (tmp_path / "x").mkdir()
    np.save(tmp_path / "a.npy", image2d)
    np.save(tmp_path / "x" / "a.npy", image2d)
    rc, _, err = run(capsys, "label", tmp_path / "a.npy", tmp_path / "x" / "a.npy", tmp_path / "o")
    assert rc == 2 and "would both be written as a_labels" in err
    _assert_one_line(err)


@pytest.mark.parametrize("where", ["labels", "colour", "stats", "folder"])
def test_output_that_is_an_input_is_refused(tmp_path, capsys, image2d, where):
    src = tmp_path / "in.npy"
    np.save(src, image2d)
    before = src.read_bytes()
    if where == "labels":
        args = [src, src]
    elif where == "colour":
        args = [src, tmp_path / "o.npy", "--colour", src]
    elif where == "stats":
        args = [src, tmp_path / "o.npy", "--stats", src]
    else:  # the folder form would write in_labels.npy: refuse an input named so
        np.save(tmp_path / "in_labels.npy", image2d)
        args = [src, tmp_path / "in_labels.npy", str(tmp_path) + "/"]
    rc, _, err = run(capsys, "label", *args)
    assert rc == 2 and "is the input file" in err
    _assert_one_line(err)
    assert src.read_bytes() == before


def test_jpeg_and_bmp_inputs(tmp_path, capsys):
    grey = np.zeros((24, 30), np.uint8)
    grey[2:10, 3:12] = 255
    grey[14:20, 15:28] = 255
    for name in ("g.jpg", "g.jpeg", "g.bmp"):
        src = tmp_path / name
        iio.imwrite(src, grey)
        rc, out, err = run(capsys, "label", src, tmp_path / f"{name}.npy", "--tolerance", 60)
        assert rc == 0, (name, err)
        got = np.load(tmp_path / f"{name}.npy")
        pixels = iio.imread(src)  # (JPEG changes values near edges: compare with what it holds)
        np.testing.assert_array_equal(got, meshccl.label(pixels, tolerance=60))
        if name.endswith(".bmp"):
            np.testing.assert_array_equal(got, sk_label(grey))


def test_float_warning_when_everything_truncates_to_background(tmp_path, capsys):
    field = np.random.default_rng(3).random((8, 9)) * 0.9
    src = tmp_path / "f.npy"
    np.save(src, field)
    rc, out, err = run(capsys, "label", src, tmp_path / "o.npy")
    assert rc == 0 and "0 components" in out
    assert "warning" in err and "--tolerance" in err and "(-1, 1)" in err
    for extra in (["--tolerance", "0.1"], ["-b", "-1"]):  # no warning: the values are used
        rc, _, err = run(capsys, "label", src, tmp_path / "o.npy", *extra)
        assert rc == 0 and "warning" not in err
    np.save(src, field + 1)  # some cells survive truncation
    rc, _, err = run(capsys, "label", src, tmp_path / "o.npy")
    assert rc == 0 and "warning" not in err


def test_reported_time_is_the_label_call_after_a_warm_up(tmp_path, capsys, monkeypatch, image2d):
    """Start-up (kernel compilation on the first call) is not in the time printed."""
    import time as _time
    src = tmp_path / "in.npy"
    np.save(src, image2d)
    real, calls = meshccl.label, []

    def slow_first(image, *a, **k):
        calls.append(image.shape)
        if len(calls) == 1:
            _time.sleep(0.5)  # the first call "compiles"
        return real(image, *a, **k)

    monkeypatch.setattr(meshccl, "label", slow_first)
    rc, out, err = run(capsys, "label", src, tmp_path / "o.npy")
    assert rc == 0, err
    assert calls[0] != image2d.shape and calls[-1] == image2d.shape  # warm-up on a crop
    ms = float(out.split(" in ")[1].split(" ms")[0])
    assert ms < 400


def test_big_endian_npy(tmp_path, capsys):
    a = np.array([[1, 1, 0], [0, 2, 2], [3, 0, 2]], dtype=">i4")
    src = tmp_path / "be.npy"
    np.save(src, a)
    rc, out, err = run(capsys, "label", src, tmp_path / "o.npy")
    assert "Traceback" not in err
    if rc == 0:
        np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), sk_label(a.astype("<i4")))
    else:
        assert rc == 2
        _assert_one_line(err)


@pytest.mark.parametrize("exc", [ValueError("bad\nsecond line"), TypeError("no such dtype")])
def test_library_errors_are_one_line(tmp_path, capsys, monkeypatch, image2d, exc):
    src = tmp_path / "in.npy"
    np.save(src, image2d)

    def fail(*a, **k):
        raise exc

    monkeypatch.setattr(meshccl, "label", fail)
    rc, out, err = run(capsys, "label", src, tmp_path / "o.npy")
    assert rc == 2 and out == ""
    _assert_one_line(err)
    assert str(src) in err and str(exc).splitlines()[0] in err


def test_outputs_are_written_all_or_none(tmp_path, capsys, monkeypatch, image2d):
    """A --colour preview that cannot be written leaves the labels (and the
    stats) unwritten too, and no temporary file behind."""
    src, dst, csv_path = tmp_path / "in.npy", tmp_path / "out.npy", tmp_path / "s.csv"
    np.save(src, image2d)
    (tmp_path / "c.png").mkdir()  # a folder where the preview should go
    rc, _, err = run(capsys, "label", src, dst, "--stats", csv_path, "--colour", tmp_path / "c.png")
    assert rc == 2 and "c.png" in err and "is a folder" in err
    _assert_one_line(err)
    assert not dst.exists() and not csv_path.exists()
    # a failure while writing (the preview's writer raising) leaves nothing either
    dst.write_bytes(b"old")

    def fail(path, labels, num, *, to=None):
        to.write_bytes(b"half")
        raise cli.CLIError(f"cannot write colour preview {path}: disk full")

    with monkeypatch.context() as mp:
        mp.setattr(cli, "write_colour", fail)
        rc, _, err = run(capsys, "label", src, dst, "--stats", csv_path,
                         "--colour", tmp_path / "ok.png")
    assert rc == 2 and "disk full" in err
    assert dst.read_bytes() == b"old" and not csv_path.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.png", "in.npy", "out.npy"]
    rc, _, err = run(capsys, "label", src, dst, "--stats", csv_path, "--colour",
                     tmp_path / "ok.png")
    assert rc == 0, err
    np.testing.assert_array_equal(np.load(dst), sk_label(image2d))
    assert csv_path.exists() and (tmp_path / "ok.png").exists()
    assert not [p for p in tmp_path.iterdir() if "partial" in p.name]


@pytest.mark.parametrize("content, msg", [
    (b"garbage" * 10, "not a NumPy .npy file"),
    (None, "holds a NumPy object array"),
])
def test_corrupt_npy_is_named(tmp_path, capsys, content, msg):
    src = tmp_path / "bad.npy"
    if content is None:
        np.save(src, np.array([1, "a"], dtype=object), allow_pickle=True)
    else:
        src.write_bytes(content)
    rc, _, err = run(capsys, "label", src, tmp_path / "out.npy")
    assert rc == 2 and str(src) in err and msg in err and "pickled" not in err
    _assert_one_line(err)


def test_output_under_a_file(tmp_path, capsys, image2d):
    src = tmp_path / "in.npy"
    np.save(src, image2d)
    rc, _, err = run(capsys, "label", src, tmp_path / "in.npy" / "out.npy")
    assert rc == 2 and "is a file, not a folder" in err and "does not exist" not in err
    rc, _, err = run(capsys, "label", src, tmp_path / "in.npy" / "deeper" / "out.npy")
    assert rc == 2 and f"{src} is a file, not a folder" in err


def test_0d_input_says_one_cell(tmp_path, capsys):
    src, dst = tmp_path / "one.npy", tmp_path / "out.npy"
    np.save(src, np.array(7))
    rc, out, err = run(capsys, "label", src, dst)
    assert rc == 0, err
    assert "connectivity 0" not in out and "1 components (one cell, no neighbours" in out
    assert np.load(dst).tolist() == 1


def test_demo_panels_share_colours_and_captions_say_what_is_drawn(tmp_path, monkeypatch):
    """A component found at both connectivities has one colour in both
    panels, and the blobs' captions count the crop that is drawn."""
    import io

    from meshccl import demo

    img = patterns.blobs((48, 48), sigma=1.0)
    (rgb1, n1), (rgb2, n2) = demo.drawn_labels(img, 1), demo.drawn_labels(img, 2)
    l1, l2 = sk_label(img, connectivity=1), sk_label(img, connectivity=2)
    assert (n1, n2) == (l1.max(), l2.max())
    shared = 0
    for lab in range(1, n2 + 1):
        cells = l2 == lab
        one = l1[cells][0]
        if ((l1 == one) == cells).all():  # the same component at both connectivities
            shared += 1
            assert len(np.unique(rgb1[cells], axis=0)) == 1
            assert (rgb1[cells] == rgb2[cells]).all()
    assert shared > 3
    assert (rgb1[img == 0] == 0).all() and (rgb2[img == 0] == 0).all()

    captions = []
    real = demo.side_by_side
    monkeypatch.setattr(demo, "side_by_side",
                        lambda panels, **kw: (captions.extend(c for _, c in panels),
                                              real(panels, **kw))[1])
    c = demo.PICTURE_CROP
    size = 2 * c
    demo.run_demo(size=size, out_dir=tmp_path, device="cpu", repeats=1, stream=io.StringIO())
    crop = patterns.blobs((size, size))[:c, :c]
    for k, caption in zip((1, 2), captions[2:]):
        n = sk_label(crop, connectivity=k).max()
        assert caption == f"connectivity {k}: {n} components in the top-left {c}x{c} of {size}x{size}"
