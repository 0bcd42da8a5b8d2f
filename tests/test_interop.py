"""PyTorch tensors, JAX arrays, other DLPack producers and NetworkX graphs
at meshccl's entry points (meshccl/_interop.py): the same values as NumPy /
CuPy input, the result in the input's framework, on its device.

PyTorch and JAX are optional: their tests skip where they are not
installed (CI installs ``.[test]`` only); the GPU tests need them with CUDA.
"""

import os

import numpy as np
import pytest
import scipy.ndimage as ndi
import scipy.sparse as sp
import scipy.sparse.csgraph as csg

import meshccl
from meshccl import ndimage
from meshccl.graph import Edges, connected_components
from conftest import HAVE_GPU

# JAX takes 75 % of the GPU's memory at its first GPU array unless told not to
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

gpu = pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")


def _image(seed=0, shape=(23, 31), dtype=np.uint8):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 3, shape) * (rng.random(shape) < 0.6)).astype(dtype)


def _graph(seed=0, n=40):
    return sp.random(n, n, density=2.0 / n, random_state=seed, format="csr")


# ---------------------------------------------------------------- NetworkX

def test_networkx_graphs_equal_scipy():
    nx = pytest.importorskip("networkx")
    for G in (nx.gnp_random_graph(70, 0.02, seed=1),
              nx.gnp_random_graph(70, 0.02, seed=2, directed=True),
              nx.MultiGraph([(0, 1), (0, 1), (5, 6), (3, 3)]),
              nx.path_graph(["x", "b", "a"])):
        n, labels = connected_components(G)
        ref_n, ref = csg.connected_components(nx.to_scipy_sparse_array(G, nodelist=list(G)),
                                              directed=G.is_directed(), connection="weak")
        assert n == ref_n
        np.testing.assert_array_equal(labels, ref)
        assert labels.dtype == np.int32
        want = (nx.number_weakly_connected_components(G) if G.is_directed()
                else nx.number_connected_components(G))
        assert n == want


def test_networkx_node_order_and_directions():
    nx = pytest.importorskip("networkx")
    G = nx.Graph()
    G.add_nodes_from(["z", "y", "x", "w"])  # isolated at first, insertion order kept
    G.add_edge("w", "z")
    n, labels = connected_components(G)
    assert n == 3 and dict(zip(G, labels.tolist())) == {"z": 0, "y": 1, "x": 2, "w": 0}
    # undirected: connection='strong' is allowed and gives the same components
    assert connected_components(G, connection="strong")[0] == 3
    D = nx.DiGraph([(0, 1), (2, 1)])  # weakly one component, strongly three
    assert connected_components(D)[0] == 1
    assert connected_components(D, directed=False)[0] == 1
    n, labels = connected_components(D, connection="strong")  # a DiGraph keeps its directions
    assert n == 3 and len(set(labels.tolist())) == 3
    assert connected_components(nx.Graph(), return_labels=False) == 0
    # edge weights play no part (a zero weight is still an edge)
    W = nx.Graph()
    W.add_edge(0, 1, weight=0)
    assert connected_components(W)[0] == 1


# ----------------------------------------------------------- DLPack, plain

class _Producer:
    """A minimal DLPack producer over a NumPy array (neither PyTorch nor JAX)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_other_dlpack_producers_give_numpy():
    a = _image(1)
    labels = meshccl.label(_Producer(a), connectivity=1)
    assert isinstance(labels, np.ndarray)
    np.testing.assert_array_equal(labels, meshccl.label(a, connectivity=1))
    _ref = ndi.label(a)
    got = ndimage.label(_Producer(a))
    assert got[1] == _ref[1]
    np.testing.assert_array_equal(got[0], _ref[0])
    g = _graph(1)
    ref = csg.connected_components(g)[1]
    n, lab = connected_components(_Producer(g.toarray()))
    np.testing.assert_array_equal(lab, ref)
    n, lab = connected_components((_Producer(g.indptr), _Producer(g.indices)))
    assert isinstance(lab, np.ndarray)
    np.testing.assert_array_equal(lab, ref)


# ----------------------------------------------------------- PyTorch, CPU

def test_torch_cpu_label():
    torch = pytest.importorskip("torch")
    a = _image(2)
    for t in (torch.from_numpy(a), torch.from_numpy(a != 0), torch.from_numpy(a).to(torch.int32),
              torch.from_numpy(a.astype(np.float32)).requires_grad_(),
              torch.from_numpy(np.ascontiguousarray(a.T)).T):
        labels, n, counts = meshccl.label(t, connectivity=1, return_num=True, return_counts=True)
        ref, ref_n, ref_counts = meshccl.label(t.detach().numpy(), connectivity=1,
                                               return_num=True, return_counts=True)
        assert isinstance(labels, torch.Tensor) and labels.device.type == "cpu"
        assert isinstance(counts, torch.Tensor) and isinstance(n, int) and n == ref_n
        np.testing.assert_array_equal(labels.numpy(), ref)
        np.testing.assert_array_equal(counts.numpy(), ref_counts)
    mask = torch.from_numpy(a > 1)
    np.testing.assert_array_equal(meshccl.label(torch.from_numpy(a), mask=mask).numpy(),
                                  meshccl.label(a, mask=a > 1))
    labels, info = meshccl.label(torch.from_numpy(a), return_info=True)
    assert isinstance(labels, torch.Tensor) and info["backend"] == "cpu"
    first = meshccl.label(torch.from_numpy(a), numbering="first-cell")  # every option passes on
    np.testing.assert_array_equal(first.numpy(), meshccl.label(a, numbering="first-cell"))


def test_torch_cpu_ndimage():
    torch = pytest.importorskip("torch")
    a = _image(3, (12, 9, 7))
    s = ndi.generate_binary_structure(3, 2)
    labels, n = ndimage.label(torch.from_numpy(a), torch.from_numpy(s))
    ref, ref_n = ndi.label(a, s)
    assert isinstance(labels, torch.Tensor) and labels.dtype == torch.int32 and n == ref_n
    np.testing.assert_array_equal(labels.numpy(), ref)
    out = torch.zeros(a.shape, dtype=torch.int64)
    assert ndimage.label(torch.from_numpy(a), s, output=out) == ref_n
    np.testing.assert_array_equal(out.numpy(), ref)
    labels, _ = ndimage.label(torch.from_numpy(a), output=np.uint16)
    assert labels.dtype == torch.uint16


def test_torch_cpu_graphs():
    torch = pytest.importorskip("torch")
    g = _graph(4)
    ref_n, ref = csg.connected_components(g)
    dense = torch.from_numpy(g.toarray())
    coo = g.tocoo()
    for graph in (dense, (torch.from_numpy(g.indptr), torch.from_numpy(g.indices)),
                  Edges(torch.from_numpy(coo.row), torch.from_numpy(coo.col), g.shape[0]),
                  (torch.from_numpy(g.indptr), g.indices),  # one tensor is enough
                  dense.to_sparse(), dense.to_sparse_csr(), dense.to_sparse_csc()):
        n, labels = connected_components(graph)
        assert isinstance(labels, torch.Tensor) and n == ref_n, type(graph)
        np.testing.assert_array_equal(labels.numpy(), ref)
    assert connected_components(dense, return_labels=False) == ref_n
    n, labels, info = connected_components(dense, return_info=True)
    assert isinstance(labels, torch.Tensor) and info["backend"] == "cpu"


def test_torch_cpu_spanning_forest_and_list_rank():
    torch = pytest.importorskip("torch")
    from meshccl.graph import list_rank, spanning_forest

    g = _graph(6)
    forest = spanning_forest(torch.from_numpy(g.toarray()))
    ref = spanning_forest(g.toarray())
    assert isinstance(forest.src, torch.Tensor) and forest.n_vertices == ref.n_vertices
    np.testing.assert_array_equal(forest.src.numpy(), ref.src)
    np.testing.assert_array_equal(forest.dst.numpy(), ref.dst)
    succ = np.array([2, 1, 4, 3, 1])
    rank, tails = list_rank(torch.from_numpy(succ), return_tails=True)
    assert isinstance(rank, torch.Tensor) and isinstance(tails, torch.Tensor)
    assert rank.tolist() == [3, 0, 2, 0, 1] and tails.tolist() == [1, 1, 1, 3, 1]


def test_torch_errors():
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"csgraph must be a square \(N, N\) matrix, got shape "
                                         r"\(3, 4\)"):
        connected_components(torch.ones(3, 4).to_sparse())
    with pytest.raises(TypeError, match="label_image must be a CPU or CUDA tensor, got a tensor "
                                        "on meta"):
        meshccl.label(torch.ones(3, 3, device="meta"))
    with pytest.raises(TypeError, match="input has dtype torch.bfloat16, which has no NumPy"):
        ndimage.label(torch.ones(3, 3, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="label_image must be a dense"):
        meshccl.label(torch.ones(3, 3).to_sparse())


# ---------------------------------------------------------------- JAX, CPU

def test_jax_cpu():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    a = _image(5)
    labels = meshccl.label(jnp.asarray(a), connectivity=1)
    assert isinstance(labels, jax.Array)
    np.testing.assert_array_equal(np.asarray(labels), meshccl.label(a, connectivity=1))
    labels, n = ndimage.label(jnp.asarray(a))
    ref, ref_n = ndi.label(a)
    assert isinstance(labels, jax.Array) and n == ref_n
    np.testing.assert_array_equal(np.asarray(labels), ref)
    g = _graph(5).toarray()
    n, labels = connected_components(jnp.asarray(g))
    assert isinstance(labels, jax.Array)
    np.testing.assert_array_equal(np.asarray(labels), csg.connected_components(g)[1])
    with pytest.raises(ValueError, match="output must be writeable, got a JAX array"):
        ndimage.label(a, output=jnp.zeros(a.shape, jnp.int32))
    with pytest.raises(TypeError, match="label_image is a traced JAX value"):
        jax.jit(lambda x: meshccl.label(x))(jnp.asarray(a))


# --------------------------------------------------------------------- GPU

def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


def _jax_gpu():
    jax = pytest.importorskip("jax")
    try:
        return jax, jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX without a GPU backend")


@pytest.mark.gpu
@gpu
def test_torch_cuda_label_and_ndimage():
    torch = _torch_cuda()
    import cupy
    import cupyx.scipy.ndimage as cndi

    a = _image(6, (257, 190))
    for t in (torch.from_numpy(a).cuda(), torch.from_numpy(a != 0).cuda(),
              torch.from_numpy(a.astype(np.float32)).cuda().requires_grad_(),
              torch.from_numpy(np.ascontiguousarray(a.T)).cuda().T):
        labels, n, counts = meshccl.label(t, connectivity=1, return_num=True, return_counts=True)
        ref, ref_n, ref_counts = meshccl.label(a if t.dtype != torch.bool else a != 0,
                                               connectivity=1, return_num=True,
                                               return_counts=True)
        assert isinstance(labels, torch.Tensor) and labels.device == t.device
        assert labels.dtype == torch.int32 and n == ref_n
        np.testing.assert_array_equal(labels.cpu().numpy(), ref)
        np.testing.assert_array_equal(counts.cpu().numpy(), ref_counts)
    t = torch.from_numpy(a).cuda()
    labels = meshccl.label(t, mask=t > 1)
    np.testing.assert_array_equal(labels.cpu().numpy(), meshccl.label(a, mask=a > 1))
    # ndimage.label on a CUDA tensor = cupyx.scipy.ndimage.label on the same memory
    s = ndi.generate_binary_structure(2, 2)
    labels, n = ndimage.label(t, s)
    ref, ref_n = cndi.label(cupy.from_dlpack(t), s)
    assert isinstance(labels, torch.Tensor) and labels.is_cuda and n == ref_n
    cupy.testing.assert_array_equal(cupy.from_dlpack(labels), ref)
    out = torch.zeros(a.shape, dtype=torch.int64, device=t.device)
    assert ndimage.label(t, s, output=out) == ref_n
    np.testing.assert_array_equal(out.cpu().numpy(), ref.get())
    with pytest.raises(TypeError, match="output must be a GPU array like input"):
        ndimage.label(t, output=torch.zeros(a.shape, dtype=torch.int32))


@pytest.mark.gpu
@gpu
def test_torch_cuda_graphs():
    torch = _torch_cuda()
    g = _graph(7, 300)
    ref_n, ref = csg.connected_components(g)
    dense = torch.from_numpy(g.toarray()).cuda()
    coo = g.tocoo()
    for graph in (dense, (torch.from_numpy(g.indptr).cuda(), torch.from_numpy(g.indices).cuda()),
                  Edges(torch.from_numpy(coo.row).cuda(), torch.from_numpy(coo.col).cuda(), 300),
                  dense.to_sparse(), dense.to_sparse_csr()):
        n, labels = connected_components(graph)
        assert isinstance(labels, torch.Tensor) and labels.is_cuda and n == ref_n
        np.testing.assert_array_equal(labels.cpu().numpy(), ref)
    from meshccl.graph import list_rank, spanning_forest

    forest = spanning_forest(dense)
    assert isinstance(forest.src, torch.Tensor) and forest.src.is_cuda
    assert forest.src.numel() == 300 - ref_n
    rank = list_rank(torch.tensor([2, 1, 4, 3, 1], device="cuda"))
    assert isinstance(rank, torch.Tensor) and rank.is_cuda and rank.tolist() == [3, 0, 2, 0, 1]


@pytest.mark.gpu
@gpu
def test_jax_gpu():
    jax, device = _jax_gpu()
    import cupy
    import cupyx.scipy.ndimage as cndi

    a = _image(8, (129, 77))
    x = jax.device_put(a, device)
    labels = meshccl.label(x, connectivity=1)
    assert isinstance(labels, jax.Array) and labels.devices() == {device}
    np.testing.assert_array_equal(np.asarray(labels), meshccl.label(a, connectivity=1))
    labels, n = ndimage.label(x)
    ref, ref_n = cndi.label(cupy.asarray(a))
    assert isinstance(labels, jax.Array) and labels.devices() == {device} and n == ref_n
    np.testing.assert_array_equal(np.asarray(labels), ref.get())
    g = _graph(9, 200)
    n, labels = connected_components(jax.device_put(g.toarray(), device))
    assert isinstance(labels, jax.Array) and labels.devices() == {device}
    np.testing.assert_array_equal(np.asarray(labels), csg.connected_components(g)[1])
