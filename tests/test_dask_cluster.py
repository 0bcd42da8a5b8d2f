"""meshccl.dask.label on a cluster: what its tasks read from other chunks
(only layers, ids and small tables, never a chunk's labels), a
``distributed.LocalCluster`` and a ``dask_cuda.LocalCUDACluster`` run equal
to the whole-array call, ``persist`` on the cluster, and Dask's progress
bar on the threaded scheduler."""

import collections
import io
import re
from itertools import product

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402
from dask.core import get_dependencies  # noqa: E402

import meshccl  # noqa: E402
import meshccl.dask as mdask  # noqa: E402
from meshccl import _tuning  # noqa: E402

from conftest import HAVE_GPU  # noqa: E402

#: the kinds of key whose result is of a chunk's size (its labels)
CHUNK_SIZED = ("chunk", "local")
#: the kinds of key that tasks of other chunks (faces) or of many chunks
#: (the prefixes, the gathering of labels) may read
SMALL = ("layers", "summary", "counted", "asked", "moved", "face-pairs", "solve", "prefix",
         "offsets", "roots", "resolve", "reps", "number", "table")


def _kind(key):
    name = key[0] if isinstance(key, tuple) else key
    m = re.match(r"meshccl-([a-z-]+)-[0-9a-f]+$", str(name))
    return m.group(1) if m else None


def _block(key):
    return tuple(key[1:]) if isinstance(key, tuple) else ()


def _blobs(shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.random(shape) < 0.45).astype(np.uint8)


@pytest.mark.parametrize("keys", ["fine", "coarse", "auto"])
@pytest.mark.parametrize("numbering", ["raster", "sequential"])
@pytest.mark.parametrize("connectivity", [1, 3])
def test_tasks_of_other_chunks_read_no_chunk(numbering, connectivity, keys):
    distributed = pytest.importorskip("distributed")
    x = da.from_array(_blobs((12, 10, 9), 1), chunks=(4, 5, 3))
    # in one process the parts are taken inside the reading tasks: no keys
    # of their own
    with _tuning.override(DASK_CLUSTER_KEYS=keys):
        alone = mdask.label(x, connectivity=connectivity, numbering=numbering)
    assert not {"layers", "counted", "asked"} & {_kind(k) for k in dict(alone.dask)}
    # a graph built while a distributed client is the default scheduler
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=None), _tuning.override(DASK_CLUSTER_KEYS=keys):
        labels, n, counts = mdask.label(x, connectivity=connectivity, numbering=numbering,
                                        return_num=True, return_counts=True)
    dsk = dict(dask.base.collections_to_expr([labels, n, counts]).__dask_graph__())
    kinds = {k: _kind(k) for k in dsk}
    per_chunk = collections.Counter(kinds.values())
    if keys == "fine":
        assert {"chunk", "local", "layers", "face-pairs", "counted", "asked"} <= set(
            kinds.values())
        assert per_chunk["layers"] == x.ndim * x.npartitions
    else:
        # ('auto' for NumPy chunks:) no keys for the layers and the local labels; the counts of the
        # levels but the last in one key a chunk
        assert not {"local", "layers"} & set(kinds.values())
        assert {"chunk", "summary", "face-pairs", "counted", "asked"} <= set(kinds.values())
        levels = x.ndim if numbering == "raster" else 1
        assert per_chunk["counted"] == min(levels, 2) * x.npartitions
    for key, task in dsk.items():
        kind = kinds[key]
        if kind is None:
            continue
        for dep in get_dependencies(dsk, key):
            dkind = kinds.get(dep)
            if dkind in CHUNK_SIZED:
                # a chunk's labels are read by tasks of that chunk only
                assert kind in ("summary", "local", "layers", "label"), (key, dep)
                assert _block(dep) == _block(key)[:x.ndim], (key, dep)
            if kind in ("prefix", "offsets", "resolve"):
                # tasks over many chunks read small keys split beside each chunk
                assert dkind in ("counted", "asked", "moved", "number"), (key, dep)
            if kind == "face-pairs" and dkind == "layers":
                # a face reads its neighbours' layers along one axis
                assert dep[-1] in range(x.ndim)
            if kind == "face-pairs":
                assert dkind in ("layers", "summary"), (key, dep)
    got, n, counts = dask.compute(labels, n, counts, scheduler="threads")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=None), _tuning.override(DASK_CLUSTER_KEYS="some"):
        with pytest.raises(ValueError, match="DASK_CLUSTER_KEYS.*'some'"):
            mdask.label(x)
    want, n_want, c_want = meshccl.label(x.compute(), connectivity=connectivity,
                                         return_num=True, return_counts=True)
    if numbering == "raster":
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(counts, c_want)
    assert int(n) == n_want


@pytest.mark.parametrize("keys", ["fine", "coarse"])
def test_local_cluster_equals_whole_array_and_persists(keys, local_cluster):
    distributed = pytest.importorskip("distributed")
    x = _blobs((30, 26, 22), 2)
    client = local_cluster
    image = client.persist(da.from_array(x, chunks=(10, 13, 8)))
    for connectivity in (1, 3):
        with _tuning.override(DASK_CLUSTER_KEYS=keys):
            labels, n = mdask.label(image, connectivity=connectivity, return_num=True)
        labels, n = client.persist([labels, n])
        distributed.wait([labels, n])
        want, n_want = meshccl.label(x, connectivity=connectivity, return_num=True)
        np.testing.assert_array_equal(labels.compute(), want)
        assert int(n.compute()) == n_want
        # the persisted labels live on the workers, one future a chunk
        assert len(client.who_has(labels)) == labels.npartitions
        del labels, n
    labels = mdask.label(image, numbering="sequential").persist()
    got = labels.compute()
    want = meshccl.label(x)
    assert np.array_equal(got == 0, want == 0)
    assert np.unique(got[got > 0] * (want.max() + 1) + want[got > 0]).size == want.max()


def test_progress_bar_on_the_threaded_scheduler():
    from dask.diagnostics import ProgressBar

    x = da.from_array(_blobs((20, 18, 16), 3), chunks=6)
    buf = io.StringIO()
    with ProgressBar(out=buf, dt=0.001):
        got = mdask.label(x).compute(scheduler="threads")
    np.testing.assert_array_equal(got, meshccl.label(x.compute()))
    assert "100%" in buf.getvalue()


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_dask_cuda_cluster_every_gpu_input_in_slabs(cuda_cluster):
    distributed = pytest.importorskip("distributed")
    import cupy

    x = _blobs((96, 80, 72), 4)
    client = cuda_cluster
    workers = sorted(client.scheduler_info()["workers"])
    # the input on the workers in slabs along axis 0, one a worker, so
    # that faces join chunks of different GPUs
    rows = [r for r in np.array_split(np.arange(4), len(workers)) if r.size]
    parts = [client.persist(
        da.from_array(x[24 * r[0]:24 * (r[-1] + 1)], chunks=(24, 40, 36))
        .map_blocks(cupy.asarray), workers=[w]) for r, w in zip(rows, workers)]
    image = da.concatenate(parts, axis=0)
    for connectivity, numbering, keys in product((1, 3), ("raster", "sequential"),
                                                 ("fine", "coarse")):
        with _tuning.override(DASK_CLUSTER_KEYS=keys):
            labels, n = mdask.label(image, connectivity=connectivity, return_num=True,
                                    numbering=numbering)
        labels, n = client.persist([labels, n])
        distributed.wait([labels, n])
        want, n_want = meshccl.label(x, connectivity=connectivity, return_num=True)
        got = labels.compute()
        assert type(got).__module__.startswith("cupy")
        got = got.get()
        if numbering == "raster":
            np.testing.assert_array_equal(got, want)
        else:
            assert np.array_equal(got == 0, want == 0)
            fg = want > 0
            assert np.unique(got[fg] * (n_want + 1) + want[fg]).size == n_want
        assert int(n.compute()) == n_want
        del labels, n
