"""Peak device memory of a GPU labelling call (issue 56): at most 1.25 times
its label output, plus the other arrays it returns (counts, statistics).

The count is the one ``benchmarks/bench.py`` reports: the bytes a call
holds from CuPy's memory pool at its high-water mark, counting only the
blocks it takes during the call (the input, made before, is not counted;
the labels, still held at the end, are).  Each call builds its launch
plan anew (``_tuning.override()`` drops the plans), so what a plan keeps
for later calls counts too.  The arrays are large enough (4 M cells and
more) that the few small arrays of a call (kernel arguments, N) do not
matter.  Known above the bound, and not tested here: the rows in bold in
docs/performance.md.
"""

import numpy as np
import pytest

import meshccl
from meshccl import _tuning, patterns
from conftest import HAVE_GPU

pytestmark = pytest.mark.skipif(not HAVE_GPU, reason="needs a CUDA GPU and CuPy")

#: issue 56's bound: peak / (label output + the other outputs)
BOUND = 1.25


def _peak(call):
    """(result, peak bytes) of ``call()`` with fresh launch plans."""
    import cupy

    from meshccl._gpu.timing import PeakMemory

    cupy.cuda.Device().synchronize()
    with PeakMemory() as held, _tuning.override():
        out = call()
        cupy.cuda.Device().synchronize()
    return out, held.peak


def _outputs(out):
    """The bytes of every array a call returned (labels, counts, statistics)."""
    arrays = []
    for item in out if isinstance(out, tuple) else (out,):
        if isinstance(item, dict):
            if "seconds" in item:  # return_info's dict
                continue
            arrays += list(item.values())
        elif hasattr(item, "nbytes"):
            arrays.append(item)
    seen, total = set(), 0
    for a in arrays:  # (statistics' columns can be views of one array)
        base = a if a.base is None else a.base
        if id(base) not in seen:
            seen.add(id(base))
            total += base.nbytes
    return total


def _image(shape, connectivity, dtype=np.uint8, pattern="percolation"):
    import cupy

    if pattern == "potts":
        x = patterns.potts(shape, q=4, xp=cupy)
    else:
        p = patterns.PERCOLATION_THRESHOLD.get((len(shape), connectivity), 0.2)
        x = patterns.percolation(shape, p, xp=cupy)
    return x.astype(dtype)


SHAPES = [((2048, 2048), 1), ((2048, 2048), 2), ((160, 160, 160), 1), ((160, 160, 160), 3),
          ((250_000, 64), 1), ((33, 2000, 61), 3)]


def _check(x, **kw):
    out, peak = _peak(lambda: meshccl.label(x, **kw))
    labels = out[0] if isinstance(out, tuple) else out
    total = _outputs(out)
    assert peak <= BOUND * total, (
        f"{x.shape} {x.dtype} {kw}: peak {peak / 1e6:.1f} MB = {peak / total:.3f} x the "
        f"outputs ({total / 1e6:.1f} MB; labels {labels.nbytes / 1e6:.1f} MB)")
    return out


@pytest.mark.parametrize("shape,connectivity", SHAPES)
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.bool_])
def test_plain_chains(shape, connectivity, dtype):
    """The plain 1-D / 2-D / 3-D chains, through a launch plan and without
    one (return_info), and first-cell labels; bool input read as it is
    (no 0 / 1 copy)."""
    x = _image(shape, connectivity, dtype, "potts" if dtype == np.int32 else "percolation")
    _check(x, connectivity=connectivity)
    _check(x, connectivity=connectivity, return_info=True)
    _check(x, connectivity=connectivity, numbering="first-cell")


@pytest.mark.parametrize("shape,connectivity", SHAPES)
def test_counts_sized_by_labels(shape, connectivity):
    """return_counts: the count table has N + 1 rows (it is the counts
    returned), not a row per cell; through a plan and without one."""
    x = _image(shape, connectivity)
    for info in (False, True):
        out = _check(x, connectivity=connectivity, return_num=True, return_counts=True,
                     return_info=info)
        labels, num, counts = out[:3]
        assert counts.shape == (num + 1,)
        want = np.bincount(labels.get().ravel(), minlength=num + 1)
        np.testing.assert_array_equal(counts.get(), want)


@pytest.mark.parametrize("shape,connectivity", [((2048, 2048), 1), ((160, 160, 160), 1)])
def test_statistics(shape, connectivity):
    """return_statistics: the table, of N + 1 rows, is output."""
    _check(_image(shape, connectivity), connectivity=connectivity, return_statistics=True)


LATTICE = [dict(periodic=True), dict(periodic=(True, False)), dict(mask="random"),
           dict(bonds="random"), dict(tolerance=1)]


def _features(shape, kw):
    """``kw`` with its periodic axes for ``shape`` and its "random" mask
    and bonds made."""
    import cupy

    from meshccl.neighbourhood import half_offsets

    kw = dict(kw)
    if kw.get("periodic") is not True and "periodic" in kw:
        kw["periodic"] = kw["periodic"] + (False,) * (len(shape) - 2)
    rng = cupy.random.default_rng(1)
    if kw.get("mask") == "random":
        kw["mask"] = rng.random(shape, dtype=cupy.float32) < 0.9
    if kw.get("bonds") == "random":
        k = len(half_offsets(len(shape), 1))
        kw["bonds"] = rng.random((k,) + shape, dtype=cupy.float32) < 0.6
    return kw


@pytest.mark.parametrize("kw", LATTICE, ids=str)
@pytest.mark.parametrize("shape", [(2048, 2048), (160, 160, 160)])
def test_lattice_chains(shape, kw):
    """The lattice features, 2-D and 3-D, background -1 (both spins
    clusters, as a simulation labels them), with counts and without."""
    import cupy

    x = patterns.percolation(shape, 0.5, xp=cupy)
    kw = _features(shape, kw)
    _check(x, background=-1, connectivity=1, **kw)
    _check(x, background=-1, connectivity=1, return_counts=True, **kw)


@pytest.mark.parametrize("kw", LATTICE, ids=str)
@pytest.mark.parametrize("shape", [(2048, 2048), (160, 160, 160)])
def test_bool_lattice_chains(shape, kw):
    """Bool input with periodic axes or lattice features, background False
    and True: its bytes read as they are, no 0 / 1 copy first."""
    x = _image(shape, 1, np.bool_)
    kw = _features(shape, kw)
    for background in (None, 1):
        _check(x, background=background, connectivity=1, **kw)


@pytest.mark.parametrize("shape", [(40, 40, 40, 40), (64, 64, 1024)])
def test_bool_background_true_on_runsnd(shape):
    """Bool input at background True on the runsnd chain (4-D) and on the
    plain 3-D chain: no 0 / 1 copy first."""
    x = _image(shape, 1, np.bool_)
    _check(x, background=1, connectivity=1)
    _check(x, background=1, connectivity=len(shape))


@pytest.mark.parametrize("shape,kw", [((40, 40, 40, 40), dict(connectivity=1)),
                                      ((40, 40, 40, 40), dict(connectivity=4)),
                                      ((160, 160, 160), dict(axes=(0, 2))),
                                      ((16, 512, 512), dict(axes=(1, 2)))], ids=str)
def test_general_chain_and_stacks(shape, kw):
    """The general chain (4-D values, axes that are not a stack) and a
    stack of images, with counts and without."""
    x = _image(shape, 1)
    _check(x, **kw)
    _check(x, return_counts=True, **kw)
