"""Serial labelling of plain images: equal values, no mask, bonds, tolerance,
wrap-around or axes -- what ``skimage.measure.label`` does.

The classical two-pass design, on runs instead of cells.  A *run* is a
stretch of equal cells along the last axis.  Its *neighbour lines* are the
rows before it that hold neighbours of its cells: in 2-D the row above, in
3-D the row above and the three rows of the plane before; each line is
touched over the run's columns widened by one on the sides its offsets
step to.  Scanning the rows in raster order, every run

1. looks for cells of its value in its neighbour lines; each run of such
   cells there already has a provisional label;
2. takes the smallest root among those labels, and hooks the other roots
   under it in a small equivalence table ``E`` (a union-find over
   provisional labels, :mod:`.unionfind`: the root of a set is its smallest
   label), or, touching none, takes a new label;
3. writes its label into its cells.

New labels are handed out in raster order of the first cell of their run,
and a run touching nothing starts a component, so numbering the roots of
``E`` in increasing order (:func:`.unionfind.number_table`) gives each
component the rank of its first cell: skimage's numbering.  A last pass
replaces every cell's provisional label by its number (:func:`gather`).

Two scans feed this design:

- :func:`_bits_into`, for binary images (the background and one other
  value): rows are first packed into 64-bit words, one bit a cell, so runs
  and the touched runs of a line are found with count-trailing-zeros, and a
  word equal to the word of the line before copies that line's labels (the
  walls of Hawick's spiral repeat row after row);
- :func:`_prov_into` for any values.  With up to four neighbour lines (2-D
  and 3-D) a short run reads the window of every line as a 16-bit lane of
  one 64-bit word, compares one-byte values 16 at a time, and skips a
  matching run of a line when it lies beside a matching cell of a line
  read before it (the two are neighbours, hence in one set already); a run
  touching one set takes that label with no find at all.

Both give the same provisional sets and so the same labels.
:func:`label_plain` picks the bit-packed scan when the background is set
and falls back to the general one when a second foreground value shows up.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros
from numba.extending import intrinsic, overload

from .. import _tuning
from .grid import next_row, row_masks, u
from .unionfind import find, number_table


def bits_room(n, W):
    """Entries the table of :func:`_bits_into` needs for ``n`` cells in rows
    of ``W``: a provisional label per run at most, (W + 1) // 2 runs a row,
    plus the unused label 0 and a spare."""
    return (n // W) * ((W + 1) // 2) + 2


def label_plain(values, P, shape, table, has_bg, bgkey, counts=False):
    """Label flat ``values`` (keys, :func:`.grid.kernel_keys`) of ``shape``
    into ``P``; return the number of labels (with ``counts``: (N, cells per
    label 0..N), counted as the labels are written, :func:`gather_counted`).

    ``table``: the half-neighbourhood table of :mod:`meshccl.neighbourhood`.
    The bit-packed scan runs when there is a background and the image is
    binary (:func:`pack_rows` says so).
    """
    n = values.shape[0]
    shape = np.asarray(shape, dtype=np.int64)
    work = work_array(P)
    if has_bg:
        W = int(shape[-1])
        M = np.empty((n // W) * ((W + 63) >> 6), dtype=np.uint64)
        if not pack_rows(values, M, W, bgkey):
            E = np.empty(bits_room(n, W), dtype=work.dtype)
            nl = _bits_into(M, work, shape, table, E)
            return _numbered(E, nl, work, P, counts)
    room = max(_tuning.CPU_PROV_TABLE_MIN, n // _tuning.CPU_PROV_TABLE_CELLS_PER_LABEL + 2)
    E = np.empty(min(n + 1, room) + 1, dtype=work.dtype)  # (it doubles when it fills)
    E, nl = _prov_into(values, work, shape, table, bool(has_bg), bgkey, E)
    return _numbered(E, nl, work, P, counts)


def _numbered(E, nl, work, P, counts):
    """The final labels into P: N, or (N, counts) with ``counts``."""
    if counts:
        num, table = gather_counted(E, nl, work, P, _tuning.CPU_COUNTS_SPREAD_LABELS)
        return int(num), table
    return int(gather(E, nl, work, P))


def work_array(P):
    """Where the scans keep their provisional labels: int32 whenever they
    fit (then the scans are compiled for one label type, whatever the
    output's), else ``P`` itself."""
    if P.dtype == np.int32 or P.shape[0] >= 2**31 - 2:
        return P
    return np.empty(P.shape[0], dtype=np.int32)


@njit(cache=True, nogil=True)
def gather(E, nl, work, P):
    """Number the roots of E (provisional labels 1..nl) in order and write
    every cell's final label, the number of its provisional label in
    ``work``, into P (which may be ``work``); return the count."""
    count = number_table(E, nl)
    for i in range(P.shape[0]):
        P[i] = E[u(work[i])]
    return count


@njit(cache=True, nogil=True)
def gather_counted(E, nl, work, P, spread):
    """:func:`gather` that also counts each label's cells as it writes
    them: returns (N, counts), counts int64 of length N + 1 (counts[0]:
    the background).  With at most ``spread`` labels
    (``_tuning.CPU_COUNTS_SPREAD_LABELS``) four counters a label, side by
    side, cell i adding to counter i % 4: a run of one label is then four
    chains of increments through memory instead of one."""
    count = number_table(E, nl)
    if count > spread:
        counts = np.zeros(count + 1, dtype=np.int64)
        for i in range(P.shape[0]):
            lab = E[u(work[i])]
            P[i] = lab
            counts[u(lab)] += 1
        return count, counts
    four = np.zeros(4 * (count + 1), dtype=np.int64)
    for i in range(P.shape[0]):
        lab = E[u(work[i])]
        P[i] = lab
        four[u(4 * lab + (i & 3))] += 1
    counts = np.empty(count + 1, dtype=np.int64)
    for lab in range(count + 1):
        counts[lab] = four[4 * lab] + four[4 * lab + 1] + four[4 * lab + 2] + four[4 * lab + 3]
    return count, counts


@njit(cache=True)
def _neighbour_lines(table, last):
    """The table's offsets grouped by neighbour line (the same step along the
    leading axes; named by its boundary masks, since linear offsets can
    coincide on tiny shapes).  Returns (count, offset of the line's column
    0, its lo / hi boundary masks, its smallest and largest column step)."""
    noff = table.shape[0]
    lastbit = 1 << last
    loff = np.empty(noff, dtype=np.int64)
    lmlo = np.empty(noff, dtype=np.int64)
    lmhi = np.empty(noff, dtype=np.int64)
    ldmin = np.empty(noff, dtype=np.int64)
    ldmax = np.empty(noff, dtype=np.int64)
    nlines = 0
    for o in range(noff):
        d = -1 if (table[o, 1] >> last) & 1 else ((table[o, 2] >> last) & 1)
        mlo = table[o, 1] & ~lastbit
        mhi = table[o, 2] & ~lastbit
        k = 0
        while k < nlines and (lmlo[k] != mlo or lmhi[k] != mhi):
            k += 1
        if k == nlines:
            loff[k] = table[o, 0] - d
            lmlo[k] = mlo
            lmhi[k] = mhi
            ldmin[k] = d
            ldmax[k] = d
            nlines += 1
        else:
            ldmin[k] = min(ldmin[k], d)
            ldmax[k] = max(ldmax[k], d)
    return nlines, loff, lmlo, lmhi, ldmin, ldmax


@intrinsic
def _eq_bytes(typingctx, arr, idx, v, width):
    """Bit t set where byte idx + t of a 1-D contiguous array of 1-byte items
    equals the low byte of v, t < width (8 or 16, a literal): one unaligned
    vector load and compare (the caller keeps idx + width <= size)."""
    if not isinstance(width, types.IntegerLiteral):
        return None
    w = width.literal_value

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        i8 = ir.IntType(8)
        vty = ir.VectorType(i8, w)
        vec = builder.load(builder.bitcast(ptr, vty.as_pointer()), align=1)
        b = builder.trunc(args[2], i8)
        spl = builder.insert_element(ir.Constant(vty, None), b, ir.Constant(ir.IntType(32), 0))
        spl = builder.shuffle_vector(spl, ir.Constant(vty, None),
                                     ir.Constant(ir.VectorType(ir.IntType(32), w), [0] * w))
        eq = builder.icmp_unsigned("==", vec, spl)
        return builder.zext(builder.bitcast(eq, ir.IntType(w)), ir.IntType(64))
    return types.uint64(arr, types.intp, types.uint64, width), codegen


def _mask16(values, i, v, wide):
    """Bit t set where values[i + t] == v, for t < 16 when ``wide`` (i + 16
    <= size), else at least for t < 8 (i + 8 <= size; with 1-byte values
    the 16 cells are compared anyway, so then i + 16 <= size too)."""
    raise NotImplementedError


@overload(_mask16)
def _mask16_impl(values, i, v, wide):
    byte = isinstance(values.dtype, types.Boolean) or (
        isinstance(values.dtype, types.Integer) and values.dtype.bitwidth == 8)
    if byte and values.layout == "C" and values.ndim == 1:
        def impl(values, i, v, wide):  # 1-byte items: one vector compare
            return _eq_bytes(values, i, np.uint64(np.uint8(v)), 16)
    else:
        def impl(values, i, v, wide):
            m = np.uint64(0)
            for t in range(8):
                m |= np.uint64(values[u(i + t)] == v) << np.uint64(t)
            if wide:
                for t in range(8, 16):
                    m |= np.uint64(values[u(i + t)] == v) << np.uint64(t)
            return m
    return impl


@njit(cache=True)
def _line_cover(table, last, nlines, lmlo, lmhi):
    """Which neighbour lines cover which: ``cover[k, j]`` is 1 when a cell
    of line k and the cells of line j in the same column and the two beside
    it are neighbours, 0 when only the one in the same column is, -1 when
    none is.  Also an order of the lines (those that cover the most first)."""
    conn = 0
    for o in range(table.shape[0]):
        m = table[o, 1] | table[o, 2]
        h = 0
        while m:
            h += m & 1
            m >>= 1
        conn = max(conn, h)
    cover = np.full((nlines, nlines), -1, dtype=np.int64)
    for k in range(nlines):
        for j in range(nlines):
            if j == k:
                continue
            h = 0
            ok = True
            for a in range(last):
                sk = ((lmhi[k] >> a) & 1) - ((lmlo[k] >> a) & 1)
                sj = ((lmhi[j] >> a) & 1) - ((lmlo[j] >> a) & 1)
                d = abs(sj - sk)
                if d > 1:
                    ok = False
                h += d
            if ok and h + 1 <= conn:
                cover[k, j] = 1
            elif ok and h <= conn:
                cover[k, j] = 0
    order = np.empty(nlines, dtype=np.int64)
    score = np.empty(nlines, dtype=np.int64)
    for k in range(nlines):
        score[k] = 0
        for j in range(nlines):
            score[k] += cover[k, j] >= 0
        order[k] = k
    for k in range(nlines):  # a stable sort, most covered lines first
        for j in range(nlines - 1 - k):
            if score[order[j]] < score[order[j + 1]]:
                order[j], order[j + 1] = order[j + 1], order[j]
    return cover, order


@njit(cache=True, nogil=True)
def _prov_rows(values, P, E, nl, row0, c0, coords, shape, has_bg, bgkey, nlines, loff, lmlo,
               lmhi, ldmin, ldmax, cover, lanes):
    """The scan of :func:`_prov_into` from column c0 of row row0 (``coords``:
    its leading coordinates) on, until the end or until a run needs a new
    label and the table ``E`` is full; returns (row, column, labels so far)
    where it stopped (that run not yet labelled; row = the number of rows
    at the end).  ``E`` is an argument that this function never replaces,
    so numba keeps no reference counts in its loops.

    Every run looks at the columns of each neighbour line it touches, cell
    by cell, and finds the label of each matching run there.  With
    ``lanes`` (at most four lines, each touched from column c - 1 or c to
    e - 1 or e, in ``loff``'s order: the lines that cover the most first) a
    run of up to 13 cells reads its window of each line as a bit mask, the
    four in one 64-bit word (16-bit lanes); one-byte values are compared
    16 at a time (:func:`_mask16`).  A run of matching cells in a line is
    then not looked up when its first cell lies beside a matching cell of
    an earlier line (``cover``, :func:`_line_cover`): those two are earlier
    cells and neighbours, so in one set already, and that set is merged
    anyway.  So a run whose line below matches all of it looks up one run,
    and a run that touches a single run (after those skips) takes that
    run's provisional label as it is, with no find.  A run's label is
    written to 8 cells at once where it fits (the cells past the run are
    labelled later)."""
    n = values.shape[0]
    ndim = shape.shape[0]
    last = ndim - 1
    W = shape[last]
    nrows = n // W
    cap = E.shape[0] - 1  # labels 1..cap - 1 (E[cap]: a spare entry)
    qoff = np.empty(nlines, dtype=np.int64)
    qmin = np.empty(nlines, dtype=np.int64)
    qmax = np.empty(nlines, dtype=np.int64)
    qk = np.empty(nlines, dtype=np.int64)
    lq = np.zeros(4, dtype=np.int64)  # line offsets by lane
    one = np.uint64(1)
    full = ~np.uint64(0)
    in_lane = np.uint64(0x7FFF7FFF7FFF7FFF)  # every bit but the top one of each lane
    lane16 = np.uint64(0xFFFF)
    rep = np.uint64(0x0001000100010001)  # a 16-bit mask in every lane
    row = row0
    c = c0
    while row < nrows:
        lo, hi = row_masks(coords, shape, last)
        base = row * W
        cnt = 0
        for k in range(nlines):
            if (lo & lmlo[k]) | (hi & lmhi[k]):
                continue
            qoff[cnt] = base + loff[k]
            qmin[cnt] = ldmin[k]
            qmax[cnt] = ldmax[k]
            qk[cnt] = k
            cnt += 1
        # the lanes' offsets as scalars (lane 0 missing: read from row 0, masked
        # off by plan; lanes 1-3 are read only when present), and which lanes
        # are present (plan), start at column c - 1 (lsel), end at column e (hsel)
        o0 = qoff[0] if cnt > 0 else 0
        o1 = qoff[1] if cnt > 1 else 0
        o2 = qoff[2] if cnt > 2 else 0
        o3 = qoff[3] if cnt > 3 else 0
        plan = np.uint64(0)
        lsel = np.uint64(0)
        hsel = np.uint64(0)
        for q in range(cnt if lanes else 0):
            lq[q] = qoff[q]
            plan |= lane16 << np.uint64(16 * q)
            if qmin[q] < 0:
                lsel |= lane16 << np.uint64(16 * q)
            if qmax[q] > 0:
                hsel |= lane16 << np.uint64(16 * q)
        # lane q2 is covered by lane q2 - d: spread by one column (r1) or not (r0)
        r11 = np.uint64(0)
        r01 = np.uint64(0)
        r12 = np.uint64(0)
        r02 = np.uint64(0)
        r13 = np.uint64(0)
        r03 = np.uint64(0)
        for q2 in range(cnt if lanes else 0):
            for q in range(q2):
                f = cover[qk[q], qk[q2]]
                m = np.uint64(0xFFFF) << np.uint64(16 * q2)
                d = q2 - q
                if f == 1:
                    if d == 1:
                        r11 |= m
                    elif d == 2:
                        r12 |= m
                    else:
                        r13 |= m
                elif f == 0:
                    if d == 1:
                        r01 |= m
                    elif d == 2:
                        r02 |= m
                    else:
                        r03 |= m
        while c < W:
            s = base + c
            v = values[s]
            if has_bg and v == bgkey:
                e = c + 1
                P[u(s)] = 0
                while e < W and values[u(base + e)] == v:
                    P[u(base + e)] = 0
                    e += 1
                c = e
                continue
            # the run [c, e): 8 or 16 cells compared at once where the array allows
            if s + 16 <= n:
                ln = int(trailing_zeros(~_mask16(values, s, v, False)))  # (at most 16)
                e = min(c + ln, W)
                while e < W and values[u(base + e)] == v:
                    e += 1
            else:
                e = c + 1
                while e < W and values[u(base + e)] == v:
                    e += 1
            lab = cap  # no label yet (larger than every label)
            x0 = max(c - 1, 0)  # bit t of a window mask: column x0 + t
            if lanes and e - c <= 13 and base + x0 + 16 <= n:
                # (every line lies before the row, so its 16 cells from x0 exist)
                wide = e - x0 >= 8  # (a window ends at column e at most)
                # the windows: from column c (dmin 0) or x0 (dmin -1) to e - 1 or
                # min(e, W - 1), in every lane at once
                lo0 = (full << np.uint64(c - x0)) & lane16
                hi0 = full >> np.uint64(63 - (e - 1 - x0))
                hi1 = full >> np.uint64(63 - (min(e, W - 1) - x0))
                WM = ((lo0 * rep) | lsel) & ((hi0 * rep) | ((hi1 & lane16) * rep & hsel)) & plan
                MK = _mask16(values, o0 + x0, v, wide)
                if cnt > 1:
                    MK |= _mask16(values, o1 + x0, v, wide) << np.uint64(16)
                if cnt > 2:
                    MK |= _mask16(values, o2 + x0, v, wide) << np.uint64(32)
                if cnt > 3:
                    MK |= _mask16(values, o3 + x0, v, wide) << np.uint64(48)
                MK &= WM
                SP = (MK | (MK << one) | (MK >> one)) & in_lane
                COV = ((SP << np.uint64(16)) & r11) | ((MK << np.uint64(16)) & r01) | \
                    ((SP << np.uint64(32)) & r12) | ((MK << np.uint64(32)) & r02) | \
                    ((SP << np.uint64(48)) & r13) | ((MK << np.uint64(48)) & r03)
                ST = MK & ~(MK << one) & ~COV  # first cells of the runs to look up
                if ST != 0:
                    t = int(trailing_zeros(ST))
                    lab = P[u(lq[t >> 4] + x0 + (t & 15))]
                    ST &= ST - one
                    if ST != 0:  # more than one run to merge
                        lab = find(E, lab)
                        while ST != 0:
                            t = int(trailing_zeros(ST))
                            ST &= ST - one
                            r = find(E, P[u(lq[t >> 4] + x0 + (t & 15))])
                            hi_ = max(r, lab)
                            lab = min(r, lab)
                            E[u(hi_)] = lab
            else:
                for q in range(cnt):
                    jb = qoff[q]
                    x = max(c + qmin[q], 0)
                    b = min(e - 1 + qmax[q], W - 1)
                    while x <= b:
                        if values[u(jb + x)] == v:
                            r = find(E, P[u(jb + x)])
                            hi_ = max(r, lab)
                            lab = min(r, lab)
                            E[u(hi_)] = lab
                            x += 1
                            while x <= b and values[u(jb + x)] == v:
                                x += 1  # the rest of that run: the same label
                        x += 1
            if lab == cap:
                if nl + 1 >= cap:
                    return row, c, nl  # full (nothing of this run written yet)
                nl += 1
                E[u(nl)] = nl
                lab = nl
            if e - c <= 8 and s + 8 <= n:
                for k in range(8):  # past the run: cells labelled later
                    P[u(s + k)] = lab
            else:
                for k in range(s, base + e):
                    P[u(k)] = lab
            c = e
        c = 0
        next_row(coords, shape, last)
        row += 1
    return row, 0, nl


@njit(cache=True)
def _in_order(order, loff, lmlo, lmhi, ldmin, ldmax, cover):
    """The neighbour lines' arrays (and the rows and columns of ``cover``)
    taken in ``order``, by loops: fancy indexing would compile numba's
    bounds-error messages (string formatting), seconds of compile time."""
    m = order.shape[0]
    out = np.empty((5, m), dtype=np.int64)
    cov = np.empty((m, m), dtype=np.int64)
    for k in range(m):
        o = order[k]
        out[0, k] = loff[o]
        out[1, k] = lmlo[o]
        out[2, k] = lmhi[o]
        out[3, k] = ldmin[o]
        out[4, k] = ldmax[o]
        for j in range(m):
            cov[k, j] = cover[o, order[j]]
    return out[0].copy(), out[1].copy(), out[2].copy(), out[3].copy(), out[4].copy(), cov


@njit(cache=True, nogil=True)
def _prov_into(values, P, shape, table, has_bg, bgkey, E):
    """The plain case (equal values, no mask / bonds / tolerance / wrap) in
    the classical two-pass design: each run of equal cells along the last
    axis takes the provisional label of the first run of the same value it
    touches in an earlier neighbour line (or a new one), and the labels of
    the other runs it touches are merged in a small equivalence table ``E``
    (union-find over provisional labels, roots are the smallest).  The
    provisional labels grow in raster order of their run and a new one starts
    only at the first cell of a component, so numbering the roots of ``E`` in
    order gives skimage's numbering; a final pass (:func:`gather`) writes
    them into ``P``; here P keeps the provisional labels.

    The offsets of the table are grouped by neighbour line (the same
    leading-axis step): a run of columns [c, e) touches columns
    [c + dmin, e - 1 + dmax] of that line.  Up to four lines (2-D, 3-D)
    are read as lanes of a word by :func:`_prov_rows`, more cell by cell.
    ``E``: the table to start with (it is replaced by one twice as long
    whenever it fills; with room for a label per cell, never).  Returns
    (E, number of provisional labels)."""
    n = values.shape[0]
    ndim = shape.shape[0]
    last = ndim - 1
    W = shape[last]
    nlines, loff, lmlo, lmhi, ldmin, ldmax = _neighbour_lines(table, last)
    cover, order = _line_cover(table, last, nlines, lmlo, lmhi)
    lanes = nlines <= 4  # (four 16-bit lanes in a word; windows from c - 1 or c to e - 1 or e)
    for k in range(nlines):
        lanes &= -1 <= ldmin[k] <= 0 <= ldmax[k] <= 1
    if lanes:  # the lines in cover order
        loff, lmlo, lmhi, ldmin, ldmax, cover = _in_order(order, loff, lmlo, lmhi, ldmin, ldmax,
                                                          cover)
    nrows = n // W
    cap = E.shape[0] - 1
    E[0] = 0
    # (int64 from the start: a literal 0 here would compile _prov_rows twice,
    # once for Literal[int](0) arguments and once for int64)
    nl = np.int64(0)
    coords = np.zeros(ndim, dtype=np.int64)
    row = np.int64(0)
    c = np.int64(0)
    while True:
        row, c, nl = _prov_rows(values, P, E, nl, row, c, coords, shape, has_bg, bgkey, nlines,
                                loff, lmlo, lmhi, ldmin, ldmax, cover, lanes)
        if row >= nrows:
            break
        # the table is full: grow it by doubling (out here, not in the scan's loops)
        cap *= 2
        E2 = np.empty(cap + 1, dtype=E.dtype)
        for k in range(nl + 1):  # (a loop: slice assignment compiles numba's
            E2[k] = E[k]         # shape-mismatch messages, seconds of compile time)
        E = E2
    return E, nl


@njit(cache=True)
def _next_one(M, mb, pos, W):
    """First column >= pos of the line whose packed words start at M[mb]
    with its bit set, or W."""
    if pos >= W:
        return W
    w = pos >> 6
    x = M[u(mb + w)] & (~np.uint64(0) << np.uint64(pos & 63))
    nw = (W + 63) >> 6
    while x == 0:
        w += 1
        if w >= nw:
            return W
        x = M[u(mb + w)]
    return min((w << 6) + int(trailing_zeros(x)), W)


@njit(cache=True)
def _next_zero(M, mb, pos, W):
    """First column >= pos whose bit is clear (W past the end)."""
    w = pos >> 6
    x = ~M[u(mb + w)] & (~np.uint64(0) << np.uint64(pos & 63))
    nw = (W + 63) >> 6
    while x == 0:
        w += 1
        if w >= nw:
            return W
        x = ~M[u(mb + w)]
    return min((w << 6) + int(trailing_zeros(x)), W)


@njit(cache=True, nogil=True)
def pack_rows(values, M, W, bgkey):
    """Pack a binary image into ``M`` (``nw = (W + 63) // 64`` words a row
    of ``W`` cells): bit c of M[row * nw + w] is values[row * W + 64 w + c]
    != bgkey.  Returns True (and stops at the end of that row) when the
    image is not binary: some cell is neither ``bgkey`` nor the first
    other value."""
    fv = bgkey
    for i in range(values.shape[0]):
        if values[i] != bgkey:
            fv = values[i]
            break
    return _pack_rows(values, M, values.shape[0] // W, W, (W + 63) >> 6, bgkey, fv)


@njit(cache=True, nogil=True)
def _pack_rows(values, M, nrows, W, nw, bgkey, fv):
    """:func:`pack_rows` with the foreground value ``fv``.  One-byte values
    in rows of a multiple of 8 cells go 8 at a time (one 64-bit load):
    y = x ^ (bgkey in every byte) is 0 in a background byte and
    d = fv ^ bgkey in a foreground one, so bit b (d's lowest set bit) of
    each byte, moved to bit 0, is the cell's flag, y must equal flags * d
    (else a third value), and one multiply gathers the 8 flags into a
    byte, several times faster than cell by cell."""
    if values.itemsize == 1 and W % 8 == 0:
        ones = np.uint64(0x0101010101010101)
        magic = np.uint64(0x0102040810204080)  # byte k's bit 0 -> bit 56 + k
        bgw = np.uint64(np.uint8(bgkey)) * ones
        d = np.uint64(np.uint8(fv) ^ np.uint8(bgkey))
        sh = np.uint64(0 if d == 0 else int(trailing_zeros(d)))
        v64 = values.view(np.uint64)
        for row in range(nrows):
            bad = np.uint64(0)
            q = (row * W) >> 3
            for w in range(nw):
                chunks = (min((w << 6) + 64, W) - (w << 6)) >> 3
                word = np.uint64(0)
                for k in range(chunks):
                    y = v64[u(q + k)] ^ bgw
                    f = (y >> sh) & ones
                    bad |= y ^ (f * d)
                    word |= ((f * magic) >> np.uint64(56)) << np.uint64(8 * k)
                M[u(row * nw + w)] = word
                q += chunks
            if bad:
                return True
        return False
    for row in range(nrows):
        base = row * W
        bad = False
        for w in range(nw):
            c0 = w << 6
            c1 = min(c0 + 64, W)
            word = np.uint64(0)
            for c in range(c0, c1):
                v = values[u(base + c)]
                f = v != bgkey
                bad |= f & (v != fv)
                word |= np.uint64(f) << np.uint64(c - c0)
            M[u(row * nw + w)] = word
        if bad:
            return True
    return False


@njit(cache=True, nogil=True)
def _bits_into(M, P, shape, table, E):
    """Binary images (background and one other value): :func:`_prov_into`
    on rows packed into 64-bit words (``M``, from :func:`pack_rows`), so it
    never reads the values and is compiled once for every input dtype.
    Runs (and the runs of a neighbour line that a run touches) are found by
    count-trailing-zeros instead of cell by cell (a touched line's runs
    inside one word: one masked word); the same labels and numbering.  With
    one neighbour line (2-D, or the first row of a plane), a word equal to
    the line's word copies the line's 64 labels: each run inside it touches
    just the run with the same cells (Hawick's spiral: 1-cell walls
    repeated row after row), so only a run that goes on into the next word
    is merged as usual.  ``E`` (the table, filled like :func:`_prov_into`'s)
    has at least :func:`bits_room` entries, so it never fills.  Returns the
    number of provisional labels."""
    n = P.shape[0]
    ndim = shape.shape[0]
    last = ndim - 1
    W = shape[last]
    nrows = n // W
    nw = (W + 63) >> 6
    nlines, loff, lmlo, lmhi, ldmin, ldmax = _neighbour_lines(table, last)
    # room for every provisional label from the start: E is never replaced
    # inside the loop, so numba keeps no reference counts there; pages never
    # written are never touched
    cap = E.shape[0] - 1
    E[0] = 0
    nl = 0
    coords = np.zeros(ndim, dtype=np.int64)
    qoff = np.empty(nlines, dtype=np.int64)
    qmb = np.empty(nlines, dtype=np.int64)
    qmin = np.empty(nlines, dtype=np.int64)
    qmax = np.empty(nlines, dtype=np.int64)
    starts = np.empty(nw, dtype=np.uint64)  # the runs of the row still to label, per word
    for row in range(nrows):
        lo, hi = row_masks(coords, shape, last)
        base = row * W
        mb = row * nw
        cnt = 0
        for k in range(nlines):
            if (lo & lmlo[k]) | (hi & lmhi[k]):
                continue
            qoff[cnt] = base + loff[k]
            qmb[cnt] = (row + loff[k] // W) * nw
            qmin[cnt] = ldmin[k]
            qmax[cnt] = ldmax[k]
            cnt += 1
        P[base:base + W] = 0
        one = np.uint64(1)
        full = ~np.uint64(0)
        carry = np.uint64(0)
        # one neighbour line: a word equal to the line's word there copies its labels
        one_line = cnt == 1
        jb0 = qoff[0] if one_line else 0
        mb0 = qmb[0] if one_line else 0
        for w in range(nw):
            word = M[u(mb + w)]
            S = word & ~((word << one) | carry)  # run starts in this word
            carry = word >> np.uint64(63)
            if one_line and word != 0 and word == M[u(mb0 + w)]:
                c0 = w << 6
                for k in range(min(64, W - c0)):
                    P[u(base + c0 + k)] = P[u(jb0 + c0 + k)]
                # a run inside the word touches one run of the line (the same
                # cells; a set cell beside them continues that run): only
                # a run that goes on into the next word still merges
                if carry and S != 0:
                    S &= full << np.uint64(63 - int(leading_zeros(S)))
                else:
                    S = np.uint64(0)
            starts[u(w)] = S
        for w in range(nw):
            S = starts[u(w)]
            while S != 0:
                s = (w << 6) + int(trailing_zeros(S))
                S &= S - one
                e = _next_zero(M, mb, s, W)  # the run is [s, e)
                lab = cap  # no label yet (larger than every label)
                for q in range(cnt):
                    jb = qoff[q]
                    a = max(s + qmin[q], 0)
                    b = min(e - 1 + qmax[q], W - 1)
                    wa = a >> 6
                    if wa == (b >> 6):
                        T = M[u(qmb[q] + wa)] & (full << np.uint64(a & 63)) & (
                            full >> np.uint64(63 - (b & 63)))
                        T &= ~(T << one)  # the first cell of each touched run
                        while T != 0:
                            x = (wa << 6) + int(trailing_zeros(T))
                            T &= T - one
                            r = find(E, P[u(jb + x)])
                            hi_ = max(r, lab)
                            lab = min(r, lab)
                            E[u(hi_)] = lab
                    else:
                        x = _next_one(M, qmb[q], a, W)
                        while x <= b:
                            r = find(E, P[u(jb + x)])
                            hi_ = max(r, lab)
                            lab = min(r, lab)
                            E[u(hi_)] = lab
                            x = _next_one(M, qmb[q], _next_zero(M, qmb[q], x, W), W)
                if lab == cap:
                    nl += 1
                    E[u(nl)] = nl
                    lab = nl
                for k in range(base + s, base + e):
                    P[u(k)] = lab
        next_row(coords, shape, last)
    return nl

