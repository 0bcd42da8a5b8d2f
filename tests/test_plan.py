"""The low-latency path for repeated CuPy calls (meshccl/_gpu/plan.py) gives
exactly the general path's labels, and steps aside when it does not apply."""

import numpy as np
import pytest

import meshccl
from meshccl import patterns
from conftest import HAVE_GPU

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")]


def general(a, **kw):
    """The general path: return_info=True keeps the plan out of the way."""
    out = meshccl.label(a, return_info=True, **kw)
    return out[:-1] if len(out) > 2 else out[0]


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int16, np.uint32, np.int64])
@pytest.mark.parametrize("shape", [(256, 256), (33, 70), (5, 1, 40), (20, 30, 40), (3000,),
                                   (1100, 1000)])
def test_plan_matches_general_path(dtype, shape):
    import cupy
    from meshccl._gpu.plan import _local
    rng = np.random.default_rng(len(shape) * 7 + np.dtype(dtype).itemsize)
    a = rng.integers(-2 if np.dtype(dtype).kind == "i" else 0, 3, shape).astype(dtype)
    x = cupy.asarray(a)
    for kw in ({}, {"connectivity": 1}, {"background": 1}, {"background": -2}, {"dtype": np.int64}):
        if np.dtype(dtype).kind == "u" and kw.get("background") == -2:
            continue
        want = general(x, **kw)
        for _ in range(3):  # the first call builds the plan, the next ones reuse it
            got = meshccl.label(x, **kw)
            assert got.dtype == want.dtype and got.shape == x.shape
            np.testing.assert_array_equal(got.get(), want.get())
        got, num = meshccl.label(x, return_num=True, **kw)
        np.testing.assert_array_equal(got.get(), want.get())
        assert num == (int(want.max()) if want.size else 0)
        np.testing.assert_array_equal(got.get(), meshccl.label(a, **kw))
    assert 0 < len(_local.plans) <= 16
    small = [p for p in _local.plans.values() if p.n <= 1 << 19 and not p.lattice]
    assert all(p.graph is not None for p in small), "CUDA graph capture failed"


def test_plan_reused_across_inputs_and_streams():
    import cupy
    imgs = [cupy.asarray(patterns.blobs((128, 96), seed=s)) for s in range(5)]
    wants = [meshccl.label(i.get()) for i in imgs]
    for _ in range(2):
        for img, want in zip(imgs, wants):
            np.testing.assert_array_equal(meshccl.label(img).get(), want)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        outs = [meshccl.label(img) for img in imgs]
    stream.synchronize()
    for out, want in zip(outs, wants):
        np.testing.assert_array_equal(out.get(), want)


def test_plan_steps_aside():
    """Floats, non-contiguous views, (a, b, 1) volumes and empty arrays take
    the general path and still give skimage's labels."""
    import cupy
    from skimage.measure import label as sk_label
    a = patterns.potts((30, 40), seed=1)
    for x in (cupy.asarray(a.astype(np.float32) + 0.5), cupy.asarray(a)[:, ::2],
              cupy.asarray(a)[::-1], cupy.asarray(a[:6, :7, None]), cupy.zeros((0, 4), cupy.uint8)):
        np.testing.assert_array_equal(meshccl.label(x).get(), sk_label(x.get()))


def test_plan_keeps_errors_clear():
    import cupy
    x = cupy.ones((8, 8), cupy.uint8)
    with pytest.raises(ValueError, match="connectivity"):
        meshccl.label(x, connectivity=3)
    with pytest.raises(TypeError, match="connectivity must be a number"):
        meshccl.label(x, connectivity="2")
    want = meshccl.label(x, connectivity=2).get()  # a plan for connectivity 2 exists now ...
    with pytest.raises(TypeError, match="connectivity must be a number"):
        meshccl.label(x, connectivity="2")  # ... and "2" still does not pass
    # skimage's reals: 2.0 and 1.5 (floored) are accepted, through the plan or not
    np.testing.assert_array_equal(meshccl.label(x, connectivity=2.0).get(), want)
    np.testing.assert_array_equal(meshccl.label(x, connectivity=1.5).get(),
                                  meshccl.label(x, connectivity=1).get())
    with pytest.raises(ValueError, match="cannot hold"):
        meshccl.label(cupy.asarray(np.eye(300, dtype=np.uint8)), connectivity=1, dtype=np.uint8)


@pytest.mark.parametrize("shape,dtype", [((1100, 1000), np.uint8), ((700, 1024), np.bool_),
                                         ((64, 96, 100), np.uint8), ((64, 96, 100), np.uint16)])
def test_plan_same_labels_with_and_without_dependent_launch(shape, dtype):
    """The numbering chain's kernels may start early (_tuning.LAUNCH_PDL,
    where the GPU has it) or be launched the ordinary way: same labels,
    large enough that the plan launches its kernels one by one (no CUDA
    graph)."""
    import cupy
    from meshccl import _tuning
    rng = np.random.default_rng(3)
    for c in (1, len(shape)):
        x = cupy.asarray((rng.random(shape) < 0.45).astype(dtype) * rng.integers(1, 3, shape)
                         .astype(dtype))
        got = {}
        for on in (False, True):
            with _tuning.override(LAUNCH_PDL=on):
                got[on] = [meshccl.label(x, connectivity=c).get() for _ in range(2)]
        want = meshccl.label(x.get(), connectivity=c)
        for labels in got[False] + got[True]:
            np.testing.assert_array_equal(labels, want)


@pytest.mark.parametrize("shape,dtype", [((256, 256), np.uint8), ((1100, 1000), np.bool_),
                                         ((64, 96, 100), np.uint16), ((3000,), np.int32)])
def test_plan_graphs_at_addresses(shape, dtype):
    """A loop on one input whose results are dropped replays a graph recorded
    at the input's and the labels' addresses: the labels follow the input's
    contents as they are when the call runs (changed in place), return_num
    and an output dtype work, and results kept alive (new label addresses
    each call) take the ordinary launches with the same labels."""
    import cupy
    from meshccl._gpu import plan
    plan._local.__dict__.pop("plans", None)
    rng = np.random.default_rng(11)
    a = [(rng.random(shape) < p).astype(dtype) for p in (0.45, 0.6, 0.3)]
    x = cupy.asarray(a[0])
    ptr = x.data.ptr
    for c in (1, len(shape)):
        want = [meshccl.label(b, connectivity=c) for b in a]
        for k in range(3):
            x[...] = cupy.asarray(a[k])  # same address, new contents
            assert x.data.ptr == ptr
            for _ in range(4):
                np.testing.assert_array_equal(meshccl.label(x, connectivity=c).get(), want[k])
            got, num = meshccl.label(x, connectivity=c, return_num=True)
            np.testing.assert_array_equal(got.get(), want[k])
            assert num == int(want[k].max())
            got = meshccl.label(x, connectivity=c, dtype=np.int64)
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got.get(), want[k])
        kept = [meshccl.label(x, connectivity=c) for _ in range(6)]  # all alive: new addresses
        for out in kept:
            np.testing.assert_array_equal(out.get(), want[2])
    plans = list(plan._local.plans.values())
    assert plans and all(p.at for p in plans), "no graph was recorded at the call's addresses"
    assert all(len(p.at) <= plan.MAX_GRAPHS and len(p.seen) <= plan.MAX_SEEN for p in plans)


def test_plan_graphs_at_addresses_switch_off():
    """PLAN_GRAPH_AFTER = 0: no graphs at addresses, the same labels."""
    import cupy
    from meshccl import _tuning
    from meshccl._gpu import plan
    x = cupy.asarray(patterns.blobs((700, 900), seed=4))
    want = meshccl.label(x.get(), connectivity=2)
    with _tuning.override(PLAN_GRAPH_AFTER=0):
        for _ in range(4):
            np.testing.assert_array_equal(meshccl.label(x, connectivity=2).get(), want)
        assert not any(p.at for p in plan._local.plans.values())


@pytest.mark.parametrize("connectivity", [1, 2])
def test_plan_picks_tile_kernel_by_count(connectivity):
    """Plain 2-D images: the border kernel writes how many tiles fitted
    their run starts in their slots to host memory, and the plan's next
    call takes the tile kernel with slots or the one without
    (_tuning.RUNS_2D_SLOTS_SHARE).  A constant image: every tile fits (32 run
    starts); bytes all different along the rows: none does (1024) but a
    tile of at most as many cells as slots (the corner); labels
    as skimage's, call after call, under either kernel, in either order,
    and through the graphs at the call's addresses."""
    from meshccl import _tuning
    # (not the graph on the plan's own buffers)
    with _tuning.override(PLAN_GRAPH_CELLS=0):
        _picks_tile_kernel_by_count(connectivity)


def _picks_tile_kernel_by_count(connectivity):
    import cupy
    from meshccl import _tuning
    from meshccl._gpu import image_plain, plan
    shape = (296, 325)
    tiles = -(-shape[0] // 32) * -(-shape[1] // 32)
    rng = np.random.default_rng(5)
    ones = np.ones(shape, np.uint8)
    noise = (np.arange(shape[1]) % 256).astype(np.uint8)[None, :].repeat(shape[0], 0)
    noise[::2] = rng.integers(0, 256, (shape[0] // 2, shape[1]))
    # noise: only tiles of at most as many cells as slots fit (the corner's 8 x 5)
    small = sum(min(32, shape[0] - y) * min(32, shape[1] - x) <= _tuning.RUNS_2D_SLOTS
                for y in range(0, shape[0], 32) for x in range(0, shape[1], 32))
    assert small == 1
    mixed = noise.copy()
    mixed[:, 200:] = 1
    x = cupy.empty(shape, np.uint8)
    taken = set()
    for sequence in ((ones, noise, mixed, ones), (noise, ones, noise, mixed)):
        for a in sequence:
            x[...] = cupy.asarray(a)
            want = meshccl.label(a, connectivity=connectivity)
            for k in range(4):
                np.testing.assert_array_equal(meshccl.label(x, connectivity=connectivity).get(),
                                              want)
                cupy.cuda.Device().synchronize()
                p = next(q for q in plan._local.plans.values() if q.report is not None)
                fitted = int(p.report[0])
                if a is ones:
                    assert fitted == tiles
                elif a is noise:
                    assert fitted == small
                else:
                    assert 0 < fitted < tiles
                if k:  # the call before this one had this image's count
                    assert p.slot_tiles == (fitted >= image_plain.slots_threshold(shape, connectivity))
                taken.add(p.slot_tiles)
    assert taken == {True, False}


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int16, np.int64])
@pytest.mark.parametrize("shape", [(300, 700), (33, 70), (1, 500), (3000,)])
def test_lattice_plan_matches_general_path(dtype, shape):
    """1-D / 2-D calls with lattice features take a plan (the lattice form
    of the 2-D chain): same labels as the general path and the CPU, call
    after call, with a new mask and new bonds each call (bool arrays whose
    bytes are not all 0 / 1 among them)."""
    import cupy
    from meshccl.neighbourhood import half_offsets
    from meshccl._gpu.plan import _local
    rng = np.random.default_rng(sum(shape) + np.dtype(dtype).itemsize)
    a = (rng.random(shape) < 0.6).astype(dtype)
    if dtype is not np.bool_:
        a = a * rng.integers(1, 3, shape).astype(dtype)
    x = cupy.asarray(a)
    ndim = len(shape)
    for conn in range(1, ndim + 1):
        k = len(half_offsets(ndim, conn))
        for feature in ("periodic", "mask", "bonds", "tolerance", "all"):
            for _ in range(3):
                kw = {"connectivity": conn}
                if feature in ("periodic", "all"):
                    kw["periodic"] = True if feature == "periodic" else [True] + [False] * (ndim - 1)
                if feature in ("mask", "all"):
                    m = (rng.random(shape) < 0.8).view(np.uint8) * np.uint8(rng.integers(1, 255))
                    kw["mask"] = m.view(np.bool_)  # non-zero bytes other than 1 are True
                if feature in ("bonds", "all"):
                    kw["bonds"] = rng.random((k,) + shape) < 0.7
                if feature in ("tolerance", "all") and dtype is not np.bool_:
                    kw["tolerance"] = 1
                dev = {key: (cupy.asarray(v) if isinstance(v, np.ndarray) else v)
                       for key, v in kw.items()}
                got, num = meshccl.label(x, return_num=True, **dev)
                want = general(x, **dev)
                np.testing.assert_array_equal(got.get(), want.get(), err_msg=str(sorted(kw)))
                np.testing.assert_array_equal(got.get(), meshccl.label(a, **kw))
                assert num == int(want.max())
    assert any(p.program is not None for p in _local.plans.values())


def test_lattice_plan_steps_aside():
    """Feature arrays the plan cannot take as they are (NumPy, not bool, not
    contiguous) go the general way, with the same labels and the same
    errors."""
    import cupy
    rng = np.random.default_rng(5)
    a = cupy.asarray((rng.random((40, 50)) < 0.5).astype(np.uint8))
    m = rng.random((40, 50)) < 0.8
    want = meshccl.label(a.get(), mask=m, periodic=True)
    for mask in (m, m.astype(np.uint8) != 0, cupy.asarray(m), cupy.asarray(m.T).T):
        got = meshccl.label(a, mask=mask, periodic=True)
        np.testing.assert_array_equal(cupy.asnumpy(got), want)
    with pytest.raises(ValueError, match="mask must have shape"):
        meshccl.label(a, mask=cupy.ones((40, 51), bool))
    with pytest.raises(ValueError, match="tolerance"):
        meshccl.label(a, tolerance=-1)
    v = cupy.asarray((rng.random((20, 30, 40)) < 0.5).astype(np.uint8))
    np.testing.assert_array_equal(meshccl.label(v, periodic=True).get(),
                                  meshccl.label(v.get(), periodic=True))


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int16])
@pytest.mark.parametrize("shape, axes", [((6, 64, 96), (1, 2)), ((9, 37, 50), (1, 2)),
                                         ((40, 1, 300), (1, 2)), ((7, 5, 300), (2,)),
                                         ((2, 3, 37, 50), (2, 3)), ((5, 70, 40), (0, 1))])
def test_stack_plan_matches_general_path(dtype, shape, axes):
    """Stacks of images (axes= the last one or two axes) take a plan of
    their tall 2-D image, plain or with lattice features: the same labels
    as the general path and the CPU, call after call; other axes step
    aside (the general chain)."""
    import cupy
    from meshccl._gpu.plan import _local
    rng = np.random.default_rng(sum(shape) + np.dtype(dtype).itemsize)
    a = (rng.random(shape) < 0.6).astype(dtype)
    if dtype is not np.bool_:
        a = a * rng.integers(1, 3, shape).astype(dtype)
    x = cupy.asarray(a)
    _local.plans = None
    for kw in ({}, {"connectivity": 1}, {"periodic": True}, {"numbering": "first-cell"},
               {"mask": rng.random(shape) < 0.8}, {"tolerance": 1}, {"dtype": np.int64}):
        if "tolerance" in kw and dtype is np.bool_:
            continue
        kw = dict(kw, axes=axes)
        dev = {key: (cupy.asarray(v) if isinstance(v, np.ndarray) else v) for key, v in kw.items()}
        want = general(x, **dev)
        for _ in range(3):
            got, num = meshccl.label(x, return_num=True, **dev)
            np.testing.assert_array_equal(got.get(), want.get(), err_msg=str(sorted(kw)))
            np.testing.assert_array_equal(got.get(), meshccl.label(a, **kw))
    plans = list((_local.plans or {}).values())
    assert bool(plans) == (axes != (0, 1))
    with pytest.raises(ValueError, match="bonds cannot be combined with axes"):
        meshccl.label(x, axes=axes, bonds=cupy.ones((2,) + shape, bool))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_input_plans(dtype):
    """Float input takes a plan (float16, which needs a copy to float32, the
    general way), with no check on the host: NaN, inf and values beyond
    int64 are one key on the device, as skimage's cast reads them; with a
    tolerance they join nothing.  Same labels as the general path and the
    CPU, call after call."""
    import warnings

    import cupy
    from meshccl._gpu.plan import _local

    rng = np.random.default_rng(11)
    getattr(_local, "plans", {}).clear()  # (12 plans below: none dropped)
    for shape in ((70, 90), (9, 20, 30), (500,)):
        a = (rng.integers(0, 3, shape) + rng.random(shape) * 0.9).astype(dtype)
        flat = a.reshape(-1)
        flat[rng.integers(0, a.size, 12)] = np.nan
        flat[rng.integers(0, a.size, 5)] = np.inf
        if dtype != np.float16:
            flat[rng.integers(0, a.size, 5)] = -1e30
        x = cupy.asarray(a)
        for kw in ({}, {"connectivity": 1}, {"tolerance": 0.5}, {"background": 1}):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = meshccl.label(a, **kw)
            before = len(getattr(_local, "plans", {}))
            for _ in range(3):
                got = meshccl.label(x, **kw)
                np.testing.assert_array_equal(got.get(), want)
            np.testing.assert_array_equal(general(x, **kw).get(), want)
            planned = len(getattr(_local, "plans", {})) > before
            assert planned == (dtype != np.float16)

