"""The band arithmetic of kernels/runs2d.cu (binary tiles at connectivity 2
labelled in bands of two rows; kernels/runs.cuh band_starts, band_top,
band_bottom, band_firsts, band_node; runs2d.cu band_unions), emulated on the
CPU with the same 32-bit mask operations.

CI has no GPU; the GPU tests (tests/test_image_plain.py, test_gpu_runs2d_bands)
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
from reference import Forest

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


def label_tile(a, cuts=()):
    """A binary tile (up to 32 x 32) as band_unions labels it: returns each
    foreground cell's root (row, column).  ``cuts``: even rows that start an
    image of a stack, whose masks up the tile kernel clears (a stack keeps
    bands only where its images start at even rows)."""
    ny, nx = a.shape
    F = [int(sum(int(v) << c for c, v in enumerate(row))) for row in a] + [0] * (32 - ny)
    forest = Forest()

    ntop, bstarts = {}, {}
    for k in range(16):
        top, bottom = F[2 * k], F[2 * k + 1]
        ntop[k], bstarts[k] = band_top(top, bottom), band_starts(top, bottom)
        for r, nodes in ((2 * k, ntop[k]), (2 * k + 1, band_bottom(top, bottom))):
            for c in range(32):
                if nodes >> c & 1:
                    forest.add((r, c))

    def node(r, x):
        if r % 2 == 0:
            return (r, start_of(ntop[r // 2], x))
        dy, c = band_node(ntop[r // 2], bstarts[r // 2], x)
        return (r - 1 + dy, c)

    for r in range(2, 32, 2):  # each band's top border
        if r in cuts:
            continue
        f, up = F[r], F[r - 1]
        e = f & (f << 1) & M
        v, vl, vr = f & up, f & (up << 1) & M, f & (up >> 1)
        ul, u0, ur = vl & ~v & ~e, v & ~vr & ~e, vr & ~(e & v)
        for b in range(32):
            if u0 >> b & 1:
                forest.unite(node(r, b), node(r - 1, b))
            if ul >> b & 1:
                forest.unite(node(r, b), node(r - 1, b - 1))
            if ur >> b & 1:
                forest.unite(node(r, b), node(r - 1, b + 1))
    return {(r, c): forest.find(node(r, c)) for r in range(ny) for c in range(nx) if a[r, c]}


@st.composite
def tiles(draw):
    ny, nx = draw(st.integers(1, 32)), draw(st.integers(1, 32))
    p = draw(st.sampled_from([0.2, 0.4073, 0.5, 0.6, 0.8]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return (rng.random((ny, nx)) < p).astype(np.uint8)


def check_tile(a, image_rows=None):
    """The band labels of tile ``a`` against skimage (``image_rows``: even,
    the tile is a stack of images so high, each labelled on its own)."""
    cuts = () if image_rows is None else tuple(range(image_rows, 32, image_rows))
    roots = label_tile(a, cuts)
    if image_rows is None:
        want = sk_label(a, connectivity=2, background=0)
    else:
        want, offset = np.zeros(a.shape, np.int64), 0
        for y in range(0, a.shape[0], image_rows):
            lab = sk_label(a[y:y + image_rows], connectivity=2, background=0)
            want[y:y + image_rows] = np.where(lab > 0, lab + offset, 0)
            offset += lab.max()
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


@settings(max_examples=100, deadline=None)
@given(a=tiles(), image_rows=st.sampled_from([2, 4, 6, 10, 16]))
def test_band_tile_of_a_stack(a, image_rows):
    check_tile(a, image_rows)
