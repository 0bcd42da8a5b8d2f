"""Strongly connected components on the GPU: the launches of ``_kernels/strong.cu``.

:func:`strong_components` takes validated CuPy input as
:mod:`meshccl.graph._input` gives it (``"csr"``, ``"csc"`` or ``"edges"``)
on the current device and runs the kernel file's steps: the contraction
of paths of (1,1) vertices (:mod:`.strong_paths`, where enough vertices lie
on them; the steps then run on the contracted graph), trim,
forward-backward from a pivot, trim again, colouring rounds, then the
numbering by each component's smallest vertex (the shared relabel of
:mod:`.number_roots`).  A search still running after
``STRONG_MUTUAL_LEVELS`` levels asks whether the pieces joined by edges
stored both ways (:func:`mutual_pieces`), or else the cycles of each
vertex's first out-neighbour (:func:`cycle_pieces`), make the graph at
least ``STRONG_MUTUAL_SHARE`` times smaller; if so the rest is the
:func:`quotient` by them, solved by these same steps
(:func:`_solve_quotient`).

Every step takes passes (launches) whose number grows with the graph's
diameter: on a long cycle or chain the GPU would sweep the graph once per
vertex.  So the steps keep count of their passes and of the vertices they
settle or reach, and when the passes exceed :func:`pass_allowance` while
the vertices per pass stay below ``_tuning.STRONG_HOST_RATE`` (a narrow
frontier: :func:`hand_over`), the vertices still without a component go
to the host: their subgraph is cut out on the device
(:func:`remaining_subgraph`), copied, and one linear-time depth-first
search there (the ``host`` callable, the CPU backend's) finds its
components; each vertex then gets a member of its component as its
representative and the numbering runs as before, so the labels are the
same either way.  It needs the graph and its transpose as CSR; the
one it lacks is built on the device (:func:`meshccl._gpu.graph.transpose_csr`
or, from an edge list, :func:`~meshccl._gpu.graph.to_csr`: counting
scatters).  Host synchronisations: the change flags of the trim,
push and backward passes (:func:`.passes.until_settled`: once per growing
batch of passes), the queue lengths of the searches (once per batch of
levels, batches doubling up to :data:`.passes.BATCH_MAX`), and the count of
vertices left after each colouring round.  A batch of passes or levels
that comes again is replayed from a CUDA graph recorded the time before
(:class:`.passes.BatchGraphs`, from ``_tuning.STRONG_GRAPH_BATCH`` passes):
a level over a narrow frontier costs the GPU a few microseconds but the
host some tens to launch its kernel from Python.
"""

from __future__ import annotations

import math

import numpy as np

from .graph import BLOCK, _grid, _unpack, to_csr, transpose_csr
from .loader import c_type, kernels
from .number_roots import relabel
from .passes import BATCH_MAX, BatchGraphs, until_settled
from . import strong_paths

from .. import _tuning

#: strong.cu's CHUNK: the most row entries of one search queue entry (and of
#: one chunk of a long row of the colouring)
CHUNK = 32


class HandOver(Exception):
    """Raised inside a step when the rest should be finished on the host."""


class _Peel(Exception):
    """Raised by the trim's passes to finish the trim with the peel."""


class Pieces(Exception):
    """Raised after the search when the graph should be solved as its
    quotient by the pieces of :func:`mutual_pieces` or :func:`cycle_pieces`
    (args: their count and each vertex's piece)."""


def mutual_pieces(fptr, fidx, n, I):
    """``(k, piece)``: the weak components of the graph's mutual edges (u -> w
    stored with w -> u, self-loops aside; ``meshccl_scc_mutual``), k of
    them, piece[v] their number 0..k-1 (CuPy, type I), each inside one
    strong component -- or None when they would not make the graph at
    least ``STRONG_MUTUAL_SHARE`` times smaller (told from the count of
    mutual entries alone where it is too small).  Rows longer than
    ``STRONG_SYMMETRIC_MAX_ROW`` entries are not scanned (their vertices
    may stay pieces of their own)."""
    import cupy

    from .graph import components

    share = int(_tuning.STRONG_MUTUAL_SHARE)
    if share <= 0:
        return None
    J = fidx.dtype
    count, fill = kernels("strong.cu", f"meshccl_scc_mutual<{c_type(J)}>",
                          f"meshccl_scc_mutual_fill<{c_type(J)}>")
    grid, nn = _grid(n, BLOCK, 32), np.int64(n)
    max_row = np.int64(_tuning.STRONG_SYMMETRIC_MAX_ROW)
    per_row = cupy.zeros(n + 1, dtype=cupy.int64)
    count(grid, (BLOCK,), (fptr, fidx, nn, max_row, per_row[1:]))
    mptr = cupy.cumsum(per_row)
    total = int(mptr[-1])
    # each pair of mutual entries joins two pieces at most
    if (n - total // 2) * share > n:
        return None
    midx = cupy.empty(total, dtype=J)
    fill(grid, (BLOCK,), (fptr, fidx, nn, max_row, mptr, midx))
    k, piece = components("csr", (mptr, midx), n, symmetric=True, index_dtype=np.dtype(I))
    k = int(k)
    return (k, piece) if k * share <= n else None


def cycle_pieces(fptr, fidx, n, I):
    """``(k, piece)`` as :func:`mutual_pieces` gives them, from cycles: each
    vertex follows its row's first entry (a vertex without one stays put),
    and every cycle of that one-successor graph is a cycle of the graph, so
    inside one strong component; its vertices are one piece, every other
    vertex a piece alone.  Pointer jumping, ``ceil(log2 n)`` rounds: the
    vertices ``2**K >= n`` steps from any vertex are exactly the cycles'
    vertices, and each takes the smallest vertex of its cycle.  None when
    the pieces would not make the graph ``STRONG_MUTUAL_SHARE`` times
    smaller.  A long cycle through every vertex, numbered along it, is one
    piece."""
    import cupy

    share = int(_tuning.STRONG_MUTUAL_SHARE)
    if share <= 0 or n < 2:
        return None
    init, step = kernels("strong.cu", f"meshccl_scc_cycle_init<{c_type(I)}, {c_type(fidx.dtype)}>",
                         f"meshccl_scc_cycle_jump<{c_type(I)}>")
    grid, nn = _grid(n, BLOCK, 32), np.int64(n)
    pair, other = cupy.empty(2 * n, dtype=I), cupy.empty(2 * n, dtype=I)
    init(grid, (BLOCK,), (fptr, fidx, nn, pair))
    for _ in range(max(1, (n - 1).bit_length())):  # (far, low): 2**r steps on, the smallest
        step(grid, (BLOCK,), (pair, other, nn))
        pair, other = other, pair
    far, low = pair[0::2], pair[1::2]
    v = cupy.arange(n, dtype=I)
    on_cycle = cupy.zeros(n, dtype=bool)
    on_cycle[far] = True
    root = cupy.where(on_cycle, low, v)  # a cycle's smallest vertex, or the vertex
    first = root == v
    k = int(first.sum())
    if k * share > n:
        return None
    number = cupy.cumsum(first.astype(I)) - 1
    return k, number[root].astype(I)


def quotient(fptr, fidx, piece, k, n):
    """The graph with each piece (``piece[v]`` in 0..k-1) contracted to one
    vertex, as CSR (indptr int64, indices of fidx's type): an entry for
    each stored edge between two pieces (repeats kept, entries inside a
    piece dropped); ``meshccl_scc_quotient_degree`` and ``_scatter``."""
    import cupy

    ti, tj = c_type(piece.dtype), c_type(fidx.dtype)
    degree, scatter = kernels("strong.cu", f"meshccl_scc_quotient_degree<{ti}, {tj}>",
                              f"meshccl_scc_quotient_scatter<{ti}, {tj}>")
    grid, nn = _grid(n, BLOCK, 32), np.int64(n)
    deg = cupy.zeros(k + 1, dtype=cupy.uint64)
    degree(grid, (BLOCK,), (fptr, fidx, piece, nn, deg))
    qptr = cupy.cumsum(deg.view(cupy.int64))
    qidx = cupy.empty(int(qptr[-1]), dtype=fidx.dtype)
    scatter(grid, (BLOCK,), (fptr, fidx, piece, nn, qptr[:-1].copy().view(cupy.uint64), qidx))
    return qptr, qidx


def pass_allowance(n: int, m: int) -> int:
    """Passes the GPU may spend before its pace is judged: at least
    ``STRONG_HOST_MIN_PASSES``, and one for every ``STRONG_HOST_ITEMS``
    vertices and edges of the graph (a bounded share of what the host's
    search would need for all of it)."""
    return max(_tuning.STRONG_HOST_MIN_PASSES, (n + m) // _tuning.STRONG_HOST_ITEMS)


def hand_over(passes: int, progress: int, n: int, m: int) -> bool:
    """Whether the GPU should stop and leave the remaining vertices to the
    host: after :func:`pass_allowance` passes, when fewer than
    ``STRONG_HOST_RATE`` vertices per pass were settled or reached
    (``progress``) -- the narrow frontier of a long cycle, chain or strip,
    where each pass moves a handful of vertices."""
    return passes >= pass_allowance(n, m) and progress < _tuning.STRONG_HOST_RATE * passes


class Pace:
    """The passes of one call and the vertices settled so far (``done``);
    :meth:`step` counts a pass, :meth:`check` raises :class:`HandOver` when
    :func:`hand_over` says so (``extra``: vertices reached by a search that
    has not settled them yet)."""

    def __init__(self, n, m):
        self.n, self.m = n, m
        self.passes = 0
        self.done = 0
        self.allowance = pass_allowance(n, m)

    def step(self, k=1):
        self.passes += k

    def judged(self):
        """Whether :meth:`check` could raise now (worth reading counters)."""
        return self.passes >= self.allowance

    def check(self, extra=0):
        if self.done < self.n and hand_over(self.passes, self.done + extra, self.n, self.m):
            raise HandOver


def long_rows(ptr, n, heavy, I):
    """(hv, ch, ck): the vertices whose rows hold more than ``heavy``
    entries (hv, ascending) and their rows cut into chunks of CHUNK
    entries: chunk i is entries ck[i] * CHUNK .. of vertex hv[ch[i]]'s
    row (strong.cu's meshccl_scc_push_rows / _back_rows).  None when no row
    is that long."""
    import cupy

    deg = ptr[1:] - ptr[:-1]
    hv = cupy.flatnonzero(deg > heavy)
    if not int(hv.size):
        return None
    chunks = (deg[hv] + CHUNK - 1) // CHUNK
    ends = cupy.cumsum(chunks)
    total = int(ends[-1])
    i = cupy.arange(total, dtype=cupy.int64)
    ch = cupy.searchsorted(ends, i, side="right")
    ck = (i - (ends[ch] - chunks[ch])).astype(cupy.uint32)
    return hv.astype(I), ch.astype(I), ck


def remaining_subgraph(fptr, fidx, rep):
    """(live, indptr, indices) of the subgraph induced by the vertices
    without a component (rep < 0): live their numbers ascending (CuPy,
    int64), indptr / indices its CSR over 0..len(live)-1 (NumPy, int32
    below 2**31 vertices and edges, else int64), each row in the graph's
    row order."""
    import cupy

    live = cupy.flatnonzero(rep < 0)
    k = int(live.size)
    if not k:
        return live, np.zeros(1, np.int32), np.zeros(0, np.int32)
    pos = cupy.full(rep.size, -1, dtype=cupy.int64)
    pos[live] = cupy.arange(k, dtype=cupy.int64)
    starts = fptr[live]
    deg = fptr[live + 1] - starts
    ends = cupy.cumsum(deg)
    total = int(ends[-1])
    e = cupy.arange(total, dtype=cupy.int64)
    row = cupy.searchsorted(ends, e, side="right")
    w = pos[fidx[starts[row] + e - (ends[row] - deg[row])]]
    keep = w >= 0
    src, dst = row[keep], w[keep]
    indptr = cupy.zeros(k + 1, dtype=cupy.int64)
    indptr[1:] = cupy.cumsum(cupy.bincount(src, minlength=k)[:k])
    wide = k >= 2**31 - 2 or int(dst.size) >= 2**31
    t = np.int64 if wide else np.int32
    return live, indptr.astype(t).get(), dst.astype(t).get()


def finish_on_host(fptr, fidx, rep, host):
    """Give every vertex without a component a member of its component as
    representative, the components found by ``host(indptr, indices, k)``
    (labels 0.. of a CSR of k vertices, a NumPy array) on the remaining
    subgraph.  Returns the number of vertices the host took."""
    import cupy

    live, indptr, indices = remaining_subgraph(fptr, fidx, rep)
    k = int(live.size)
    if not k:
        return 0
    lab = cupy.asarray(host(indptr, indices, k)).astype(cupy.int64)
    member = cupy.empty(int(lab.max()) + 1, dtype=cupy.int64)
    member[lab] = cupy.arange(k, dtype=cupy.int64)  # any member will do
    rep[live] = live[member[lab]].astype(rep.dtype)
    return k


def colour_order(n: int):
    """(a, b, a_inv) of the colouring's priorities (a v + b) mod n, a
    permutation of [0, n) (``strong.cu``'s essay says why): a the integer
    nearest 0.618 n that is coprime to n, b = n // 3, a_inv the inverse of
    a modulo n.  (1, 0, 1), the identity, from 2**32 vertices, where a v
    could overflow 64 bits in the kernel."""
    if n < 3 or n >= 2**32:
        return 1, 0, 1
    a = max(1, round(0.6180339887 * n))
    while math.gcd(a, n) != 1:
        a += 1
    return a, n // 3, pow(a, -1, n)


def is_symmetric(fptr, fidx, rptr, ridx, n: int) -> bool:
    """Whether every stored edge (w, u) is also stored as (u, w), from the
    graph and its transpose as CSR (``meshccl_scc_symmetric``: one pass,
    one 4-byte read).  True is exact; False may also mean a row longer
    than ``STRONG_SYMMETRIC_MAX_ROW`` entries or repeated entries."""
    import cupy

    (test,) = kernels("strong.cu", f"meshccl_scc_symmetric<{c_type(fidx.dtype)}>")
    sym = cupy.ones(1, dtype=cupy.uint32)
    test(_grid(n, BLOCK, 32), (BLOCK,), (fptr, fidx, rptr, ridx, np.int64(n),
                                          np.int64(_tuning.STRONG_SYMMETRIC_MAX_ROW), sym))
    return bool(int(sym.get()[0]))


def graphs(kind, arrays, n):
    """(I, J, (fptr, fidx), (rptr, ridx)): the graph and its transpose as
    CSR (row offsets int64, neighbours of type J) from validated input."""
    I, J, indptr, src, dst = _unpack(kind, arrays, n)
    if indptr is None:  # an edge list
        return I, J, to_csr(src, dst, n), to_csr(dst, src, n)
    given, other = (indptr, dst), transpose_csr(indptr, dst, n)
    if kind == "csc":  # the arrays are the transpose's CSR
        given, other = other, given
    return I, J, given, other


def strong_components(kind, arrays, n, timer=None, info=None, host=None):
    """``(count, labels)``: count a Python int, labels a CuPy array of type
    I (int32 below 2**31 vertices) numbered 0..count-1 in order of each
    component's smallest vertex.  ``timer``: a :class:`.timing.PhaseTimer`
    for the steps 'transpose', 'symmetric', 'trim', 'fwbw', 'colour',
    'host' and the relabel's; ``info``: a dict that gets ``method_phases``,
    ``iterations`` (the colouring rounds), ``passes`` (the GPU's passes),
    ``replayed_passes`` (those of them replayed from recorded CUDA graphs)
    and ``host_vertices`` (the vertices finished on the host, 0: none).
    A graph stored both ways (:func:`is_symmetric`) goes to the weak
    path instead (its steps follow 'symmetric' in ``method_phases``, and
    ``info["weak_method"]`` names the method).
    ``host(indptr, indices, k)``: the strong components of a CSR on the
    host (NumPy labels), for the narrow-frontier hand-over; None: the GPU
    finishes whatever the pace.  (A small graph never comes here:
    :func:`meshccl.graph._dispatch.strong_on_host` solves it on the host
    before its validation on the device.)"""
    import cupy

    from .timing import run

    I0 = cupy.int32 if n < 2**31 else cupy.int64
    if n == 0:
        if info is not None:
            info.update(method_phases=[], iterations=0, passes=0, replayed_passes=0,
                        host_vertices=0)
        return 0, cupy.empty(0, dtype=I0)
    state = {}

    def transpose():
        state["g"] = graphs(kind, arrays, n)

    run(timer, "transpose", transpose)
    I, J, (fptr, fidx), (rptr, ridx) = state["g"]
    ti, tj = c_type(I), c_type(J)
    nn = np.dtype(I).type(n)
    grid = _grid(n, BLOCK, 32)

    def symmetric():
        state["symmetric"] = is_symmetric(fptr, fidx, rptr, ridx, n)

    run(timer, "symmetric", symmetric)
    if state["symmetric"]:  # strong components = weak ones (strong.cu: meshccl_scc_symmetric)
        from .graph import components

        weak = {}
        count, labels = components("csr", (fptr, fidx), n, symmetric=True,
                                   index_dtype=np.dtype(I), timer=timer, info=weak)
        if info is not None:
            info.update(method_phases=["transpose", "symmetric"] + weak["method_phases"],
                        iterations=0, passes=0, replayed_passes=0, host_vertices=0,
                        weak_method=weak["method"])
        return int(count), labels

    def paths():
        succ, pred = strong_paths.links(fptr, fidx, rptr, ridx, n, I)
        pv = strong_paths.path_vertices(cupy, succ, pred, n)
        state["paths"] = state["pieces"] = None
        if pv is None:
            return
        if _tuning.STRONG_PATH_PIECES and _tuning.STRONG_MUTUAL_SHARE > 0:  # a long cycle: its pieces before its paths
            state["pieces"] = cycle_pieces(fptr, fidx, n, I)
        if state["pieces"] is None:
            state["paths"] = strong_paths.contract(cupy, fptr, fidx, succ, pred, n, pv)

    run(timer, "paths", paths)
    pieces = state.pop("pieces")  # (the search asks for pieces again where none were asked)
    if pieces is not None:
        return _solve_quotient(fptr, fidx, n, *pieces, I, ["transpose"], 0, timer, info, host)
    if state["paths"] is not None:
        return _solve_contracted(state["paths"], I, timer, info, host)
    (trim, peel_init, peel, score, seed, expand, fwbw, cinit, push, roots, back, cdone, push_snap,
     push_rows, back_snap, back_rows) = kernels(
        "strong.cu", f"meshccl_scc_trim<{ti}, {tj}>", f"meshccl_scc_peel_init<{ti}, {tj}>",
        f"meshccl_scc_peel<{ti}, {tj}>", f"meshccl_scc_score<{ti}>",
        f"meshccl_scc_seed<{ti}>", f"meshccl_scc_expand<{ti}, {tj}>", f"meshccl_scc_fwbw<{ti}>",
        f"meshccl_scc_colour_init<{ti}>", f"meshccl_scc_colour_push<{ti}, {tj}>",
        f"meshccl_scc_colour_roots<{ti}>", f"meshccl_scc_colour_back<{ti}, {tj}>",
        f"meshccl_scc_colour_done<{ti}>",
        f"meshccl_scc_push_snap<{ti}>", f"meshccl_scc_push_rows<{ti}, {tj}>",
        f"meshccl_scc_back_snap<{ti}>", f"meshccl_scc_back_rows<{ti}, {tj}>")
    rep = cupy.full(n, -1, dtype=I)
    mark = cupy.empty(n, dtype=cupy.uint32)  # written by the score and colouring kernels
    m = int(fidx.size)
    pace = Pace(n, m)
    live = [n]  # vertices without a component, as last counted
    unjudged = host is None
    replayed = [0]  # passes run from recorded graphs

    def recorder():
        return BatchGraphs(_tuning.STRONG_GRAPH_BATCH)

    def settled(remaining):
        live[0] = remaining
        pace.done = n - remaining

    removed = cupy.zeros(1, dtype=cupy.uint64)

    def trim_all():
        removed.fill(0)
        before = live[0]
        passes = [0]

        def one(t, flag):
            trim(grid, (BLOCK,), (fptr, fidx, rptr, ridx, rep, nn, flag, removed))

        def judge():
            if passes[0] >= _tuning.STRONG_PEEL_AFTER:
                raise _Peel
            if not unjudged and pace.judged():
                settled(before - int(removed.get()[0]))
                pace.check()

        def counted(k):
            passes[0] += k
            pace.step(k)

        replay = recorder()
        try:
            until_settled(one, "strong", after_batch=judge, graphs=replay, on_batch=counted)
        except _Peel:  # a long chain of layers: the rest of the trim in one launch
            settled(before - int(removed.get()[0]))
            peel_rest()
            pace.step()
        finally:
            replayed[0] += replay.replayed
        settled(before - int(removed.get()[0]))

    def peel_rest():
        word = cupy.empty(n, dtype=cupy.uint64)  # in- and out-counts (strong.cu)
        queue = cupy.full(n, -1, dtype=cupy.int64)  # entries 2 v + side, each vertex once at most
        # words 0, 16, 32, 48: queue length, slots taken, vertices pending,
        # vertices finished (strong.cu)
        ctl = cupy.zeros(64, dtype=cupy.uint64)
        peel_init(grid, (BLOCK,), (fptr, fidx, rptr, ridx, rep, nn, word, queue, ctl))
        peel(_grid(n, BLOCK, _tuning.STRONG_PEEL_BLOCKS), (BLOCK,),
             (fptr, fidx, rptr, ridx, rep, word, queue, np.int64(n), ctl))
        removed[0:1] += ctl[48:49]

    def forward_backward():
        scores = cupy.empty(n, dtype=cupy.int64)
        score(grid, (BLOCK,), (fptr, rptr, rep, nn, scores, mark))
        pivot = cupy.argmax(scores).astype(cupy.int64).reshape(1)  # stays on the device
        # a queue holds each reached vertex once, as its rows' chunks of at
        # most CHUNK entries: at most n + m / CHUNK entries (strong.cu)
        room = n + m // CHUNK + 1
        queues = [(cupy.empty(room, dtype=I), cupy.empty(room, dtype=cupy.uint32),
                   cupy.empty(room, dtype=I), cupy.empty(room, dtype=cupy.uint32))
                  for _ in range(2)]
        # queue lengths [slot][direction]: level k reads slot k % 3, counts
        # into slot (k + 1) % 3 and zeroes slot (k + 2) % 3 (strong.cu);
        # slot 3: the vertices each search reached
        counts = cupy.zeros((4, 2), dtype=cupy.uint64)
        seed((1,), (32,), (fptr, rptr, pivot, rep, mark, *queues[0], counts[0]))
        level_grid = (_grid(n, BLOCK, 8)[0], 2)

        def levels(first, k):  # what a level reads and writes repeats every 6 levels
            for level in range(first, first + k):
                a, b = level % 2, 1 - level % 2
                expand(level_grid, (BLOCK,), (fptr, fidx, rptr, ridx, mark, *queues[a],
                                              counts[level % 3], *queues[b],
                                              counts[(level + 1) % 3], counts[(level + 2) % 3],
                                              counts[3]))

        replay = recorder()
        level, batch = 0, 1
        grow = batch  # batches double (up to BATCH_MAX) from one read to the next
        try:
            while True:
                replay.run((level % 6, batch), batch, lambda: levels(level, batch))
                level += batch
                pace.step(batch)
                seen = counts.get()
                if not seen[level % 3].any():  # the queues the next level would read
                    break
                if level >= _tuning.STRONG_MUTUAL_LEVELS and "pieces" not in state:
                    # a long search: are the mutual edges' pieces far fewer?
                    state["pieces"] = (mutual_pieces(fptr, fidx, n, I)
                                       or cycle_pieces(fptr, fidx, n, I))
                    if state["pieces"] is not None:
                        return  # (the step loop takes the quotient)
                if not unjudged:
                    pace.check(int(seen[3].sum()))
                grow = min(BATCH_MAX, 2 * grow)
                batch = grow
                if level < _tuning.STRONG_MUTUAL_LEVELS:  # ask about pieces right there
                    batch = min(batch, _tuning.STRONG_MUTUAL_LEVELS - level)
        finally:
            replayed[0] += replay.replayed
        fwbw(grid, (BLOCK,), (mark, pivot, rep, nn))
        settled(int((rep < 0).sum()))
        state["levels"] = level

    a, b, a_inv = (np.uint64(x) for x in colour_order(n))
    heavy = int(_tuning.STRONG_LONG_ROW)

    def colouring():
        colour = cupy.empty(n, dtype=I)
        active = cupy.empty(n, dtype=cupy.uint8)
        left = cupy.zeros(1, dtype=cupy.uint64)
        fl, bl = long_rows(fptr, n, heavy, I), long_rows(rptr, n, heavy, I)
        if fl is not None:
            f_snap, f_last = cupy.empty(fl[0].size, dtype=I), cupy.empty(fl[0].size, dtype=I)
            f_go = cupy.empty(fl[0].size, dtype=cupy.uint8)
            f_grid = _grid(int(fl[0].size), BLOCK, 8)
            f_chunk_grid = _grid(int(fl[1].size), BLOCK, 32)
        if bl is not None:
            b_go = cupy.empty(bl[0].size, dtype=cupy.uint8)
            b_grid = _grid(int(bl[0].size), BLOCK, 8)
            b_chunk_grid = _grid(int(bl[1].size), BLOCK, 32)
        hl = np.int64(heavy)

        def push_pass(t, flag):
            if fl is not None:
                hv, ch, ck = fl
                push_snap(f_grid, (BLOCK,), (hv, np.int64(hv.size), rep, colour, f_snap, f_last,
                                             f_go))
                push_rows(f_chunk_grid, (BLOCK,), (fptr, fidx, rep, colour, active, hv, ch, ck,
                                                   np.int64(ch.size), f_snap, f_go, flag))
            push(grid, (BLOCK,), (fptr, fidx, rep, colour, active, nn, hl, flag))

        def back_pass(t, flag):
            if bl is not None:
                hv, ch, ck = bl
                back_snap(b_grid, (BLOCK,), (hv, np.int64(hv.size), mark, b_go))
                back_rows(b_chunk_grid, (BLOCK,), (rptr, ridx, rep, colour, mark, hv, ch, ck,
                                                   np.int64(ch.size), b_go, flag))
            back(grid, (BLOCK,), (rptr, ridx, rep, colour, mark, nn, hl, flag))

        def judge():
            if not unjudged:
                pace.check()

        rounds = 0
        replay = recorder()  # (the arrays above live through every round)
        try:
            while live[0]:
                rounds += 1
                pace.step()
                cinit(grid, (BLOCK,), (rep, colour, active, mark, nn, a, b))
                if fl is not None:
                    f_last.fill(-1)
                until_settled(push_pass, "strong", after_batch=judge, graphs=replay,
                              on_batch=pace.step)
                roots(grid, (BLOCK,), (rep, colour, mark, nn, a, b))
                until_settled(back_pass, "strong", after_batch=judge, graphs=replay,
                              on_batch=pace.step)
                left.fill(0)
                cdone(grid, (BLOCK,), (mark, colour, rep, nn, a_inv, b, left))
                settled(int(left.get()[0]))
                if live[0] and not unjudged:
                    pace.check()
        finally:
            replayed[0] += replay.replayed
        state["rounds"] = rounds

    phases = ["transpose"]  # the steps that ran
    state["rounds"] = state["host"] = 0
    try:
        for name, step in (("trim", trim_all), ("fwbw", forward_backward), ("trim", trim_all),
                           ("colour", colouring)):
            if not live[0]:
                break
            phases += [name] if name not in phases else []
            run(timer, name, step)
            if state.get("pieces") is not None:
                raise Pieces(*state["pieces"])
    except HandOver:
        def finish():
            state["host"] = finish_on_host(fptr, fidx, rep, host)

        run(timer, "host", finish)
        phases.append("host")
    except Pieces as got:
        return _solve_quotient(fptr, fidx, n, *got.args, I, phases, pace.passes, timer, info,
                               host)

    count = _number(rep, I, timer)
    if info is not None:
        info["method_phases"] = ["transpose", "paths"] + phases[1:] + ["smallest"]
        info["path_vertices"] = 0
        info["iterations"] = state["rounds"]
        info["passes"] = pace.passes
        info["replayed_passes"] = replayed[0]
        info["host_vertices"] = state["host"]
    return int(count), rep


def _number(rep, I, timer):
    """Number the components of rep (a member of each vertex's component)
    0.. in order of each component's smallest vertex, in place; returns
    the count."""
    import cupy

    from .timing import run

    n = int(rep.size)
    low_k, point = kernels("strong.cu", f"meshccl_scc_min<{c_type(I)}>",
                           f"meshccl_scc_point<{c_type(I)}>")
    grid, nn = _grid(n, BLOCK, 32), np.dtype(I).type(n)

    def smallest():
        low = cupy.full(n, n, dtype=I)
        low_k(grid, (BLOCK,), (rep, low, nn))
        point(grid, (BLOCK,), (rep, low, nn))

    run(timer, "smallest", smallest)
    return relabel(rep, n, timer, base=-1)


def _solve_contracted(c, I, timer, info, host):
    """``(count, labels)`` of a graph from its :class:`.strong_paths.Contraction`:
    the contracted graph's components (:func:`strong_components`, which may
    contract again), expanded to the path vertices, numbered as
    :func:`strong_components` numbers."""
    import cupy

    q = int(c.kept.size)
    inner = {"method_phases": [], "iterations": 0, "passes": 0, "replayed_passes": 0,
             "host_vertices": 0}
    if q:
        _, lab = strong_components("csr", (c.indptr, c.indices), q, timer, inner, host)
        member = cupy.empty(q, dtype=cupy.int64)
        member[lab] = cupy.arange(q, dtype=cupy.int64)  # any member will do
        kept_rep = c.kept[member[lab]]
    else:  # only cycles of path vertices
        kept_rep = c.kept
    rep = c.expand(kept_rep, I)
    count = _number(rep, I, timer)
    if info is not None:
        inner.pop("weak_method", None)  # (the whole graph was not symmetric)
        info.update(inner)
        info["method_phases"] = list(dict.fromkeys(
            ["transpose", "paths"] + inner["method_phases"] + ["smallest"]))
        info["path_vertices"] = c.path_vertices + inner.get("path_vertices", 0)
    return int(count), rep


def _solve_quotient(fptr, fidx, n, k, piece, I, phases, passes, timer, info, host):
    """``(count, labels)`` of a graph from its pieces (:func:`mutual_pieces`):
    the strong components of the :func:`quotient` graph (by
    :func:`strong_components`, which may contract again), each piece
    given a vertex of its component, numbered as :func:`strong_components`
    numbers.  ``phases`` and ``passes``: the steps and passes run before."""
    import cupy

    from .timing import run

    inner = {"method_phases": [], "iterations": 0, "passes": 0, "replayed_passes": 0,
             "host_vertices": 0}
    state = {}

    def build():
        state["q"] = quotient(fptr, fidx, piece, k, n)

    run(timer, "pieces", build)
    _, lab = strong_components("csr", state["q"], k, timer, inner, host)
    member = cupy.empty(k, dtype=cupy.int64)
    member[lab] = cupy.arange(k, dtype=cupy.int64)  # any piece of the component will do
    vertex = cupy.empty(k, dtype=I)
    vertex[piece] = cupy.arange(n, dtype=I)  # any vertex of the piece will do
    rep = vertex[member[lab[piece]]]
    count = _number(rep, I, timer)
    if info is not None:
        inner.pop("weak_method", None)
        info.update(inner)
        info["method_phases"] = list(dict.fromkeys(
            ["transpose", "paths"] + phases[1:] + ["pieces"] + inner["method_phases"]
            + ["smallest"]))
        info["path_vertices"] = inner.get("path_vertices", 0)
        info["passes"] = passes + inner["passes"]
        info["pieces"] = k
    return int(count), rep
