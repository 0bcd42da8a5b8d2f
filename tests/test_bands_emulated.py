"""The band arithmetic of kernels/runs2d.cu (binary tiles at connectivity 2
labelled in bands of two rows; kernels/runs.cuh band_starts, band_top,
band_bottom, band_firsts, band_node; runs2d.cu band_unions), emulated on the
CPU with the same 32-bit mask operations.

CI has no GPU; the GPU tests (tests/test_mesh23.py, test_gpu_runs2d_bands)
run the kernels themselves against skimage on the device machine.  Here:
each mask formula against a cell-by-cell definition, and a tile labelled
the way the tile kernel labels it (nodes at each band run's first cell,
unions only across band borders by the row rules, straight-up pairs to the
band run just above) against skimage, including that every component's
root is its first cell in raster order (skimage's numbering needs it).
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.measure import label as sk_label

M = 0xFFFFFFFF


def brev(x):
    return int(f"{x:032b}"[::-1], 2)


def band_starts(top, bottom):
    b = top | bottom
    return b & ~(b << 1) & M


def band_top(top, bottom):
    b = top | bottom
    return ((b & ~top) + band_starts(top, bottom)) & M & top


def band_bottom(top, bottom):
    b = top | bottom
    ends = b & ~(b >> 1)
    return band_starts(top, bottom) & ~top & ~brev((brev(b & ~top & M) + brev(ends)) & M) & M


def band_firsts(top, bottom):
    b = top | bottom
    return ((b & ~bottom) + band_starts(top, bottom)) & M & bottom


def start_of(s, x):
    return (s & ((2 << x) - 1)).bit_length() - 1


def band_node(ntop, bs, x):
    """(dy, column) as runs.cuh's band_node."""
    s = start_of(bs, x)
    later = bs & ~(M if s == 31 else (2 << s) - 1) & M
    t = ntop & ~((1 << s) - 1) & M
    if later:
        t &= (later & -later) - 1
    return (0, (t & -t).bit_length() - 1) if t else (1, s)


def runs_of(b):
    out, i = [], 0
    while i < 32:
        if b >> i & 1:
            j = i
            while j < 32 and b >> j & 1:
                j += 1
            out.append((i, j - 1))
            i = j
        else:
            i += 1
    return out


masks = st.integers(0, M)


@settings(max_examples=400, deadline=None)
@given(top=masks, bottom=masks)
def test_band_masks(top, bottom):
    b = top | bottom
    want_top = want_bottom = want_firsts = 0
    node = {}
    for s, e in runs_of(b):
        tops = [c for c in range(s, e + 1) if top >> c & 1]
        bots = [c for c in range(s, e + 1) if bottom >> c & 1]
        if tops:
            want_top |= 1 << tops[0]
            nd = (0, tops[0])
        else:
            want_bottom |= 1 << s
            nd = (1, s)
        if bots:
            want_firsts |= 1 << bots[0]
        for c in range(s, e + 1):
            node[c] = nd
    assert band_top(top, bottom) == want_top
    assert band_bottom(top, bottom) == want_bottom
    assert band_firsts(top, bottom) == want_firsts
    bs = band_starts(top, bottom)
    for c, nd in node.items():
        assert band_node(want_top, bs, c) == nd
        if top >> c & 1:  # a top cell: the last node at or before it
            assert (0, start_of(want_top, c)) == nd
        if bottom >> c & 1:  # a bottom cell: its run's first bottom cell
            f = start_of(want_firsts, c)
            assert node[f] == nd


def label_tile(a):
    """A binary tile (up to 32 x 32) as band_unions labels it: returns each
    foreground cell's root (row, column)."""
    ny, nx = a.shape
    F = [int(sum(int(v) << c for c, v in enumerate(row))) for row in a] + [0] * (32 - ny)
    parent = {}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def unite(x, y):
        x, y = find(x), find(y)
        if x != y:
            parent[max(x, y)] = min(x, y)  # the larger root under the smaller

    ntop, bstarts = {}, {}
    for k in range(16):
        top, bottom = F[2 * k], F[2 * k + 1]
        ntop[k], bstarts[k] = band_top(top, bottom), band_starts(top, bottom)
        for r, nodes in ((2 * k, ntop[k]), (2 * k + 1, band_bottom(top, bottom))):
            for c in range(32):
                if nodes >> c & 1:
                    parent[(r, c)] = (r, c)

    def node(r, x):
        if r % 2 == 0:
            return (r, start_of(ntop[r // 2], x))
        dy, c = band_node(ntop[r // 2], bstarts[r // 2], x)
        return (r - 1 + dy, c)

    for r in range(2, 32, 2):  # each band's top border
        f, up = F[r], F[r - 1]
        e = f & (f << 1) & M
        v, vl, vr = f & up, f & (up << 1) & M, f & (up >> 1)
        ul, u0, ur = vl & ~v & ~e, v & ~vr & ~e, vr & ~(e & v)
        for b in range(32):
            if u0 >> b & 1:
                unite(node(r, b), node(r - 1, b))
            if ul >> b & 1:
                unite(node(r, b), node(r - 1, b - 1))
            if ur >> b & 1:
                unite(node(r, b), node(r - 1, b + 1))
    return {(r, c): find(node(r, c)) for r in range(ny) for c in range(nx) if a[r, c]}


@st.composite
def tiles(draw):
    ny, nx = draw(st.integers(1, 32)), draw(st.integers(1, 32))
    p = draw(st.sampled_from([0.2, 0.4073, 0.5, 0.6, 0.8]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return (rng.random((ny, nx)) < p).astype(np.uint8)


def check_tile(a):
    roots = label_tile(a)
    want = sk_label(a, connectivity=2, background=0)
    for lab in range(1, want.max() + 1):
        cells = list(zip(*np.nonzero(want == lab)))
        got = {roots[tuple(int(i) for i in c)] for c in cells}
        assert len(got) == 1, f"component {lab} split into {got}"
        # the root is the component's first cell in raster order
        assert got.pop() == tuple(int(i) for i in cells[0])


@settings(max_examples=300, deadline=None)
@given(a=tiles())
def test_band_tile_against_skimage(a):
    check_tile(a)


def test_band_tile_patterns():
    yy, xx = np.mgrid[:32, :32]
    for a in [((xx + yy) % 2), ((xx + 2 * yy) % 5 == 0), ((2 * xx - yy) % 7 == 0),
              (xx % 3 == 0), (yy % 3 == 1), np.ones((32, 32)), np.eye(32)[::-1],
              ((xx - 16) ** 2 + (yy - 16) ** 2 < 100), np.zeros((31, 5))]:
        check_tile(np.asarray(a, np.uint8))


def label_pass_lanes(f, s, banded, W, node_label):
    """A lane group of kernels/relabel.cu meshccl_runs2d_label_bands on one
    band of a tile (rows 0 and 1: F words f, S words s), emulated lane by
    lane with its masks, its two shuffles (each lane's first and last node
    label) and its forward and backward sweeps.  node_label(k, c): the label
    that the node in row k, column c resolves to.  Returns both rows'
    labels, 32 each (0 where the row was not written or the cell is
    background)."""
    lanes = 32 // W
    cells = (1 << W) - 1
    out = [[0] * 32, [0] * 32]
    for rnd in (0,) if banded else (0, 1):
        if banded:
            ntop = s[0]
            n = s[0] | band_bottom(f[0], f[1])
            r = band_starts(f[0], f[1])
            rows = (0, 1)
        else:
            n = r = s[rnd]
            ntop = n if rnd == 0 else 0
            rows = (rnd,)
        lab, first, last = {}, {}, {}
        for q in range(lanes):
            c0 = W * q
            lab[q] = [node_label(0 if ntop >> c & 1 else 1, c) if n >> c & 1 else 0
                      for c in range(c0, c0 + W)]
            mine = (n >> c0) & cells
            nodes = [j for j in range(W) if mine >> j & 1]
            first[q] = lab[q][nodes[0]] if nodes else 0
            last[q] = lab[q][nodes[-1]] if nodes else 0

        def node_of(upto):
            st_ = upto.bit_length() - 1
            rest = n & ~((1 << st_) - 1) & M
            return (rest & -rest).bit_length() - 1

        for q in range(lanes):
            c0, cend = W * q, W * q + W - 1
            upto0 = r & ((2 << c0) - 1)
            upto_e = r & ((2 << cend) - 1) & M
            n_a = node_of(upto0) if upto0 else c0
            n_b = node_of(upto_e) if upto_e else c0
            before = bool(upto0) and n_a < c0
            x_l = last[n_a // W if before else q]
            x_f = first[n_b // W if n_b > cend else q]
            mine = (n >> c0) & cells
            pend, known, cur = 0, before, x_l
            for j in range(W):
                c = c0 + j
                if r >> c & 1:
                    known = False
                if n >> c & 1:
                    cur, known = lab[q][j], True
                if known:
                    lab[q][j] = cur
                else:
                    pend |= 1 << j
            nxt = x_f
            for j in reversed(range(W)):
                if mine >> j & 1:
                    nxt = lab[q][j]
                if pend >> j & 1:
                    lab[q][j] = nxt
            for k in rows:
                for j in range(W):
                    out[k][c0 + j] = lab[q][j] if f[k] >> (c0 + j) & 1 else 0
    return out


def _node_labels(seed):
    rng = np.random.default_rng(seed)
    values = rng.permutation(10_000)[:64] + 1  # distinct, so a wrong node shows
    return lambda k, c: int(values[32 * k + c])


@settings(max_examples=500, deadline=None)
@given(top=masks, bottom=masks, w=st.sampled_from([4, 8]), seed=st.integers(0, 2**32 - 1))
def test_band_label_pass_lanes(top, bottom, w, seed):
    node_label = _node_labels(seed)
    # banded: every cell of either row takes its band run's node (band_node)
    got = label_pass_lanes((top, bottom), (band_top(top, bottom), band_firsts(top, bottom)),
                           True, w, node_label)
    bs, ntop = band_starts(top, bottom), band_top(top, bottom)
    for k, row in enumerate((top, bottom)):
        for c in range(32):
            want = node_label(*band_node(ntop, bs, c)) if row >> c & 1 else 0
            assert got[k][c] == want, (k, c)
    # not banded: each row by its own runs, a run's node its start
    starts = tuple(x & ~(x << 1) & M for x in (top, bottom))
    got = label_pass_lanes((top, bottom), starts, False, w, node_label)
    for k, row in enumerate((top, bottom)):
        for c in range(32):
            want = node_label(k, start_of(starts[k], c)) if row >> c & 1 else 0
            assert got[k][c] == want, (k, c)


def test_band_label_pass_node_in_a_later_lane():
    """Bottom cells left of their band run's first top cell, in this lane
    and in earlier ones, take the label of a node that lies after them (the
    backward sweep and the first-node shuffle)."""
    top, bottom = 0b1 << 20, (0xFFFF << 5) & M
    got = label_pass_lanes((top, bottom), (band_top(top, bottom), band_firsts(top, bottom)),
                           True, 8, lambda k, c: 100 * k + c + 1)
    assert got[1][5] == got[0][20] == 21  # the run's node: the top cell at column 20
    assert got[1][19] == 21
