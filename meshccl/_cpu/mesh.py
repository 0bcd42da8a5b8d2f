"""Mesh labelling on the CPU, mirroring ``kernels/mesh.cu``.

Same neighbourhood table, same union-find core (:mod:`.unionfind`), same
joining rule and the same skipped pairs, run serially in raster order: every
foreground cell unites with its left neighbour and with the other neighbours
of the table that join it (wrapping around periodic axes), except the pairs
already implied through an equal left neighbour ("covered" offsets and equal
twin pairs, see the essay of ``kernels/mesh.cu``).  Those rules need a
transitive join and open bonds, so a tolerance or a bond array turns them
off, as on the GPU.  Labels are identical to the GPU's bit for bit.

The plain case (equal values, no mask / bonds / tolerance / wrap / axes) runs
serially through :func:`_label_prov` instead: provisional labels per run in a
small equivalence table, then one gather (the classical two-pass design), with
the same numbering (in 2-D and 3-D a run reads its neighbour lines as 16-bit
lanes of one word and skips the runs an earlier line already implies,
:func:`_prov_rows_lanes`); binary images (background and one other value) through
:func:`_label_bits`, the same design on rows packed into 64-bit words.  In
parallel, the plain case runs those labellers on slabs along axis 0, one
thread each, then unites the seams (:func:`_slabs`, in numba parallel
regions); the other cases keep the per-cell forest (:func:`_label_parallel`).
"""

import threading

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic, overload
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

from .regions import numba_region
from .unionfind import relabel, unite, unite_cas


@njit(cache=True, inline="always")
def _joins(values, P, i, j, tol, mask, bonds, brow, row):
    """Cell i joins neighbour j through table row ``row``.  ``tol`` and
    ``bonds`` may be None: numba then compiles the test away."""
    if tol is not None:
        if abs(np.float64(values[i]) - np.float64(values[j])) > tol:
            return False
    elif values[i] != values[j]:
        return False  # (an equal value is foreground like cell i, unless masked)
    if bonds is not None:
        if bonds[brow[row], i] == 0:
            return False
    if mask is not None or tol is not None:
        return P[j] >= 0  # background by mask, or by value within the tolerance
    return True


@njit(cache=True, inline="always")
def _row_masks(coords, shape, last):
    """Boundary masks (lo, hi) of a row from the coordinates of its leading axes."""
    lo = 0
    hi = 0
    for k in range(last):
        if coords[k] == 0:
            lo |= 1 << k
        if coords[k] == shape[k] - 1:
            hi |= 1 << k
    return lo, hi


@njit(cache=True, inline="always")
def _next_row(coords, shape, last):
    """Advance the leading coordinates to the next row (an odometer)."""
    k = last - 1
    while k >= 0:
        coords[k] += 1
        if coords[k] < shape[k]:
            break
        coords[k] = 0
        k -= 1


@njit(cache=True)
def _init(values, P, lo, hi, has_bg, bgkey, mask):
    """Cells lo..hi-1: their own tree, or -1 for background (value or mask)."""
    for i in range(lo, hi):
        bg = has_bg and values[i] == bgkey
        if mask is not None:
            bg = bg or mask[i] == 0
        P[i] = -1 if bg else i


@njit(cache=True)
def _rows(values, P, shape, table, tol, mask, bonds, brow, periodic, row_lo, row_hi, jlo, jhi,
          no_left=False):
    """Unite the cells of rows row_lo..row_hi-1 (rows along the last axis)
    with the neighbours they join whose index lies in [jlo, jhi).

    Which table rows stay inside the array (or wrap) depends on the leading
    axes once per row; along the row only the first and last cells need a
    look at the last axis.  The serial labeller calls this once with the
    whole range; the parallel one once per chunk of rows (neighbours inside
    the chunk), then for the chunk borders (neighbours before the chunk).
    ``no_left``: the last axis is not labelled along (``axes=``), so cells
    never join their left / right neighbours.
    """
    ndim = shape.shape[0]
    noff = table.shape[0]
    last = ndim - 1
    lastbit = 1 << last
    W = shape[last]
    rules = tol is None and bonds is None
    span = np.empty(ndim, dtype=np.int64)  # size * stride of each axis
    stride = 1
    for k in range(ndim - 1, -1, -1):
        span[k] = stride * shape[k]
        stride = span[k]
    # step of each table row along the last axis (-1, 0, +1)
    dlast = np.empty(noff, dtype=np.int64)
    for o in range(noff):
        dlast[o] = -1 if (table[o, 1] >> last) & 1 else ((table[o, 2] >> last) & 1)
    coords = np.zeros(ndim, dtype=np.int64)  # coordinates of the row (last one unused)
    rem = row_lo
    for k in range(last - 1, -1, -1):
        coords[k] = rem % shape[k]
        rem //= shape[k]
    rows = np.empty(noff, dtype=np.int64)     # usable table rows for this row
    shift = np.empty(noff, dtype=np.int64)    # their wrap correction
    wraps = np.empty(noff, dtype=np.bool_)    # ... and whether they wrap (the corrections of
                                              # two axes of one span can cancel to 0)
    for row in range(row_lo, row_hi):
        lo, hi = _row_masks(coords, shape, last)
        cnt = 0
        for o in range(noff):
            out_lo = lo & table[o, 1]
            out_hi = hi & table[o, 2]
            if (out_lo | out_hi) & ~periodic:
                continue  # off a non-periodic edge
            s_ = 0
            for k in range(last):
                if (out_lo >> k) & 1:
                    s_ += span[k]
                if (out_hi >> k) & 1:
                    s_ -= span[k]
            rows[cnt] = o
            shift[cnt] = s_
            wraps[cnt] = (out_lo | out_hi) != 0
            cnt += 1
        base = row * W
        for c in range(W):
            i = base + c
            if P[i] < 0:
                continue
            eql = False
            if no_left:
                pass
            elif c > 0 and jlo <= i - 1 < jhi:
                if _joins(values, P, i, i - 1, tol, mask, bonds, brow, noff):
                    if P[i] == i:
                        P[i] = P[i - 1]  # continue the left cell's run (an earlier cell)
                    else:
                        unite(P, i, i - 1)
                    eql = rules
            elif c == 0 and periodic & lastbit:
                jl = i + W - 1
                if jlo <= jl < jhi and _joins(values, P, i, jl, tol, mask, bonds, brow, noff):
                    unite(P, i, jl)
            for q in range(cnt):
                o = rows[q]
                j = i + table[o, 0] + shift[q]
                wrapped = wraps[q]
                d = dlast[o]
                if d == -1 and c == 0:
                    if not (periodic & lastbit):
                        continue
                    j += W
                    wrapped = True
                elif d == 1 and c == W - 1:
                    if not (periodic & lastbit):
                        continue
                    j -= W
                    wrapped = True
                if j < jlo or j >= jhi or not _joins(values, P, i, j, tol, mask, bonds, brow, o):
                    continue
                if not eql and not wrapped and P[i] == i:
                    P[i] = j  # a run's first cell: its first joining neighbour (earlier)
                    continue
                if eql and not wrapped:
                    flags = table[o, 3]
                    if flags & 1:
                        continue  # covered by the left cell
                    if not ((flags & 2) and c == 1):
                        if _joins(values, P, i, j - 1, tol, mask, bonds, brow, o):
                            continue  # twin pair
                unite(P, i, j)
        _next_row(coords, shape, last)


_NO_ROWS = np.zeros(1, dtype=np.int32)




@njit(cache=True, inline="always")
def _u(i):
    """An index known to be >= 0 as unsigned: numba then skips the
    negative-index wraparound in the hot loops."""
    return np.uint64(i)


@njit(cache=True, inline="always")
def _eq_find(E, x):
    """Root of provisional label x in the equivalence table (path halving)."""
    p = E[_u(x)]
    while p != x:
        g = E[_u(p)]
        E[_u(x)] = g
        x = p
        p = g
    return x


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


@njit(cache=True, nogil=True)
def _number_table(E, nl):
    """Number the roots of E (provisional labels 1..nl, parents smaller) in
    order: E[l] becomes the number of l's root; return the count."""
    count = 0
    for l in range(1, nl + 1):
        p = E[l]
        if p == l:
            count += 1
            E[l] = count
        else:
            E[l] = E[p]
    return count


@njit(cache=True, nogil=True)
def _number(E, nl, P):
    """Number the roots of E (provisional labels 1..nl) in order and write
    every cell's final label into P; return the count."""
    count = _number_table(E, nl)
    for i in range(P.shape[0]):
        P[i] = E[_u(P[i])]
    return count


@njit(cache=True, nogil=True)
def _prov_rows(values, P, E, nl, row0, c0, coords, shape, has_bg, bgkey, nlines, loff, lmlo,
               lmhi, ldmin, ldmax):
    """The scan of :func:`_label_prov` from column c0 of row row0 (``coords``:
    its leading coordinates) on, until the end or until a run needs a new
    label and the table ``E`` is full; returns (row, column, labels so far)
    where it stopped (that run not yet labelled; row = the number of rows at
    the end).  ``E`` is an argument that this function never replaces, so
    numba keeps no reference counts in its loops: with the table grown
    inside the loop, it did an atomic NRT incref / decref for every run."""
    n = values.shape[0]
    ndim = shape.shape[0]
    last = ndim - 1
    W = shape[last]
    nrows = n // W
    cap = E.shape[0] - 1  # labels 1..cap - 1 (E[cap]: a spare entry)
    qoff = np.empty(nlines, dtype=np.int64)
    qmin = np.empty(nlines, dtype=np.int64)
    qmax = np.empty(nlines, dtype=np.int64)
    row = row0
    c = c0
    while row < nrows:
        lo, hi = _row_masks(coords, shape, last)
        base = row * W
        cnt = 0
        for k in range(nlines):
            if (lo & lmlo[k]) | (hi & lmhi[k]):
                continue
            qoff[cnt] = base + loff[k]
            qmin[cnt] = ldmin[k]
            qmax[cnt] = ldmax[k]
            cnt += 1
        while c < W:
            s = base + c
            v = values[s]
            e = c + 1
            if has_bg and v == bgkey:
                P[_u(s)] = 0
                while e < W and values[_u(base + e)] == v:
                    P[_u(base + e)] = 0
                    e += 1
                c = e
                continue
            lab = 0
            if cnt == 0:
                while e < W and values[_u(base + e)] == v:
                    e += 1
            else:
                # the first neighbour line is scanned while the run is found
                jb = qoff[0]
                dmax = qmax[0]
                m = False  # the previous column of that line matched
                x = max(c + qmin[0], 0)
                b = min(c + dmax - 1, W - 1)
                while x <= b:
                    mm = values[_u(jb + x)] == v
                    if mm and not m:
                        r = _eq_find(E, P[_u(jb + x)])
                        if lab == 0:
                            lab = r
                        elif r < lab:
                            E[_u(lab)] = r
                            lab = r
                        elif r > lab:
                            E[_u(r)] = lab
                    m = mm
                    x += 1
                e = c
                while True:
                    x = e + dmax
                    if x < W:
                        mm = values[_u(jb + x)] == v
                        if mm and not m:
                            r = _eq_find(E, P[_u(jb + x)])
                            if lab == 0:
                                lab = r
                            elif r < lab:
                                E[_u(lab)] = r
                                lab = r
                            elif r > lab:
                                E[_u(r)] = lab
                        m = mm
                    e += 1
                    if e >= W or values[_u(base + e)] != v:
                        break
            for q in range(1, cnt):
                jb = qoff[q]
                x = max(c + qmin[q], 0)
                b = min(e - 1 + qmax[q], W - 1)
                if b - x < 8 and jb + x + 8 <= n:
                    # a short window (the common case): its matches as a bit
                    # mask, built without a branch per cell, then one find per
                    # run of matches (its first bit); the cell-by-cell loop
                    # below mispredicts at every run border of the line
                    L = b - x + 1
                    mk = np.uint64(0)
                    for t in range(8):
                        mk |= np.uint64((values[_u(jb + x + t)] == v) & (t < L)) << np.uint64(t)
                    st = mk & ~(mk << np.uint64(1))
                    while st:
                        t = trailing_zeros(st)
                        st &= st - np.uint64(1)
                        r = _eq_find(E, P[_u(jb + x + t)])
                        if lab == 0:
                            lab = r
                        elif r < lab:
                            E[_u(lab)] = r
                            lab = r
                        elif r > lab:
                            E[_u(r)] = lab
                    continue
                while x <= b:
                    if values[_u(jb + x)] == v:
                        r = _eq_find(E, P[_u(jb + x)])
                        if lab == 0:
                            lab = r
                        elif r < lab:
                            E[_u(lab)] = r
                            lab = r
                        elif r > lab:
                            E[_u(r)] = lab
                        x += 1
                        while x <= b and values[_u(jb + x)] == v:
                            x += 1  # the rest of that run: the same label
                    x += 1
            if lab == 0:
                if nl + 1 >= cap:
                    return row, c, nl  # full (nothing of this run written yet)
                nl += 1
                E[_u(nl)] = nl
                lab = nl
            for k in range(s, base + e):
                P[_u(k)] = lab
            c = e
        c = 0
        _next_row(coords, shape, last)
        row += 1
    return row, 0, nl


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
                m |= np.uint64(values[_u(i + t)] == v) << np.uint64(t)
            if wide:
                for t in range(8, 16):
                    m |= np.uint64(values[_u(i + t)] == v) << np.uint64(t)
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
def _prov_rows_lanes(values, P, E, nl, row0, c0, coords, shape, has_bg, bgkey, nlines, loff,
                     lmlo, lmhi, ldmin, ldmax, cover):
    """:func:`_prov_rows` for up to four neighbour lines (2-D and 3-D).  A
    run of up to 13 cells reads its window of each line as a bit mask, the
    four in one 64-bit word (16-bit lanes, in ``loff``'s order: the lines
    that cover the most first); 1-byte values are compared 16 at a time
    (:func:`_mask16`).  A run of matching cells in a line is not looked up
    when its first cell lies beside a matching cell of an earlier line
    (``cover``, :func:`_line_cover`): those two are earlier cells and
    neighbours, so they are in one set already, and that set is merged
    anyway.  So a run whose line below matches all of it (the first branch
    of cc3d's decision tree, per run) looks up one run, and a run that
    touches a single run (after those skips) takes that run's provisional
    label as it is, with no find.  Same sets, same labels.  A run's label
    is written to 8 cells at once where it fits (the cells past the run
    are labelled later).  Longer runs read the lines cell by cell as
    :func:`_prov_rows` does."""
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
    lanes = np.uint64(0x7FFF7FFF7FFF7FFF)
    lane16 = np.uint64(0xFFFF)
    rep = np.uint64(0x0001000100010001)  # a 16-bit mask in every lane
    row = row0
    c = c0
    while row < nrows:
        lo, hi = _row_masks(coords, shape, last)
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
        for q in range(cnt):
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
        for q2 in range(cnt):
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
                P[_u(s)] = 0
                while e < W and values[_u(base + e)] == v:
                    P[_u(base + e)] = 0
                    e += 1
                c = e
                continue
            # the run [c, e): 8 or 16 cells compared at once where the array allows
            if s + 16 <= n:
                ln = int(trailing_zeros(~_mask16(values, s, v, False)))  # (at most 16)
                e = min(c + ln, W)
                while e < W and values[_u(base + e)] == v:
                    e += 1
            else:
                e = c + 1
                while e < W and values[_u(base + e)] == v:
                    e += 1
            lab = cap  # no label yet (larger than every label)
            x0 = max(c - 1, 0)  # bit t of a window mask: column x0 + t
            if e - c <= 13 and base + x0 + 16 <= n:
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
                SP = (MK | (MK << one) | (MK >> one)) & lanes
                COV = ((SP << np.uint64(16)) & r11) | ((MK << np.uint64(16)) & r01) | \
                    ((SP << np.uint64(32)) & r12) | ((MK << np.uint64(32)) & r02) | \
                    ((SP << np.uint64(48)) & r13) | ((MK << np.uint64(48)) & r03)
                ST = MK & ~(MK << one) & ~COV  # first cells of the runs to look up
                if ST != 0:
                    t = int(trailing_zeros(ST))
                    lab = P[_u(lq[t >> 4] + x0 + (t & 15))]
                    ST &= ST - one
                    if ST != 0:  # more than one run to merge
                        lab = _eq_find(E, lab)
                        while ST != 0:
                            t = int(trailing_zeros(ST))
                            ST &= ST - one
                            r = _eq_find(E, P[_u(lq[t >> 4] + x0 + (t & 15))])
                            hi_ = max(r, lab)
                            lab = min(r, lab)
                            E[_u(hi_)] = lab
            else:
                for q in range(cnt):
                    jb = qoff[q]
                    x = max(c + qmin[q], 0)
                    b = min(e - 1 + qmax[q], W - 1)
                    while x <= b:
                        if values[_u(jb + x)] == v:
                            r = _eq_find(E, P[_u(jb + x)])
                            hi_ = max(r, lab)
                            lab = min(r, lab)
                            E[_u(hi_)] = lab
                            x += 1
                            while x <= b and values[_u(jb + x)] == v:
                                x += 1  # the rest of that run: the same label
                        x += 1
            if lab == cap:
                if nl + 1 >= cap:
                    return row, c, nl  # full (nothing of this run written yet)
                nl += 1
                E[_u(nl)] = nl
                lab = nl
            if e - c <= 8 and s + 8 <= n:
                for k in range(8):  # past the run: cells labelled later
                    P[_u(s + k)] = lab
            else:
                for k in range(s, base + e):
                    P[_u(k)] = lab
            c = e
        c = 0
        _next_row(coords, shape, last)
        row += 1
    return row, 0, nl


@njit(cache=True, nogil=True)
def _label_prov(values, P, shape, table, has_bg, bgkey):
    """See :func:`_prov_table`; writes the final labels into P and returns
    their number."""
    E, nl = _prov_table(values, P, shape, table, has_bg, bgkey)
    return _number(E, nl, P)


@njit(cache=True, nogil=True)
def _prov_table(values, P, shape, table, has_bg, bgkey):
    """:func:`_prov_into` with a table that starts at 1/32 of the cells."""
    n = values.shape[0]
    E = np.empty(max(1024, min(n + 1, n // 32 + 2)) + 1, dtype=P.dtype)
    return _prov_into(values, P, shape, table, has_bg, bgkey, E)


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
    order gives skimage's numbering; a final gather (:func:`_label_prov`)
    writes them into ``P``; here P keeps the provisional labels.

    The offsets of the table are grouped by neighbour line (the same
    leading-axis step): a run of columns [c, e) touches columns
    [c + dmin, e - 1 + dmax] of that line.  Up to four lines (2-D, 3-D)
    run through :func:`_prov_rows_lanes`, more through :func:`_prov_rows`.
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
        loff = loff[order]
        lmlo = lmlo[order]
        lmhi = lmhi[order]
        ldmin = ldmin[order]
        ldmax = ldmax[order]
        cover = cover[order][:, order]
    nrows = n // W
    cap = E.shape[0] - 1
    E[0] = 0
    nl = 0
    coords = np.zeros(ndim, dtype=np.int64)
    row = 0
    c = 0
    while True:
        if lanes:
            row, c, nl = _prov_rows_lanes(values, P, E, nl, row, c, coords, shape, has_bg,
                                          bgkey, nlines, loff, lmlo, lmhi, ldmin, ldmax, cover)
        else:
            row, c, nl = _prov_rows(values, P, E, nl, row, c, coords, shape, has_bg, bgkey,
                                    nlines, loff, lmlo, lmhi, ldmin, ldmax)
        if row >= nrows:
            break
        # the table is full: grow it by doubling (out here, not in the scan's loops)
        cap *= 2
        E2 = np.empty(cap + 1, dtype=E.dtype)
        E2[:nl + 1] = E[:nl + 1]
        E = E2
    return E, nl


@njit(cache=True, inline="always")
def _next_one(M, mb, pos, W):
    """First column >= pos of the line whose packed words start at M[mb]
    with its bit set, or W."""
    if pos >= W:
        return W
    w = pos >> 6
    x = M[_u(mb + w)] & (~np.uint64(0) << np.uint64(pos & 63))
    nw = (W + 63) >> 6
    while x == 0:
        w += 1
        if w >= nw:
            return W
        x = M[_u(mb + w)]
    return min((w << 6) + int(trailing_zeros(x)), W)


@njit(cache=True, inline="always")
def _next_zero(M, mb, pos, W):
    """First column >= pos whose bit is clear (W past the end)."""
    w = pos >> 6
    x = ~M[_u(mb + w)] & (~np.uint64(0) << np.uint64(pos & 63))
    nw = (W + 63) >> 6
    while x == 0:
        w += 1
        if w >= nw:
            return W
        x = ~M[_u(mb + w)]
    return min((w << 6) + int(trailing_zeros(x)), W)


@njit(cache=True, nogil=True)
def _pack_rows(values, M, nrows, W, nw, bgkey, fv):
    """M[row * nw + w], bit c: values[row * W + 64 w + c] != bgkey.  Returns
    True (and stops at the end of that row) when some cell is neither
    bgkey nor fv.  One-byte values in rows of a multiple of 8 cells go 8 at
    a time (one 64-bit load): y = x ^ (bgkey in every byte) is 0 in a
    background byte and d = fv ^ bgkey in a foreground one, so bit b (d's
    lowest set bit) of each byte, moved to bit 0, is the cell's flag, y
    must equal flags * d (else a third value), and one multiply gathers
    the 8 flags into a byte (spiral 4096^2: 0.9 against 5.9 ms cell by
    cell; percolation 8192^2: 6.1 against 38 ms)."""
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
                    y = v64[_u(q + k)] ^ bgw
                    f = (y >> sh) & ones
                    bad |= y ^ (f * d)
                    word |= ((f * magic) >> np.uint64(56)) << np.uint64(8 * k)
                M[_u(row * nw + w)] = word
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
                v = values[_u(base + c)]
                f = v != bgkey
                bad |= f & (v != fv)
                word |= np.uint64(f) << np.uint64(c - c0)
            M[_u(row * nw + w)] = word
        if bad:
            return True
    return False


@njit(cache=True, nogil=True)
def _label_bits(values, P, shape, table, bgkey):
    """See :func:`_bits_table`; writes the final labels into P and returns
    their number, or -1 (P untouched) when the image has two foreground
    values."""
    E, nl = _bits_table(values, P, shape, table, bgkey)
    if nl < 0:
        return -1
    return _number(E, nl, P)


@njit(cache=True, nogil=True)
def _bits_table(values, P, shape, table, bgkey):
    """:func:`_bits_into` with a table of :func:`_bits_room` entries."""
    n = values.shape[0]
    E = np.empty(_bits_room(n, shape[shape.shape[0] - 1]), dtype=P.dtype)
    return E, _bits_into(values, P, shape, table, bgkey, E)


@njit(cache=True, inline="always")
def _bits_room(n, W):
    """Entries :func:`_bits_into`'s table needs: at most one provisional
    label per run, (W + 1) // 2 runs a row, plus the unused 0 and a spare."""
    return (n // W) * ((W + 1) // 2) + 2


@njit(cache=True, nogil=True)
def _bits_into(values, P, shape, table, bgkey, E):
    """Binary images (background and one other value): :func:`_label_prov`
    on rows packed into 64-bit words.  Runs (and the runs of a neighbour
    line that a run touches) are found by count-trailing-zeros instead of
    cell by cell (a touched line's runs inside one word: one masked word);
    the same labels and numbering.  With one neighbour line (2-D, or the
    first row of a plane), a word equal to the line's word copies the
    line's 64 labels: each run inside it touches just the run with the same
    cells (Hawick's spiral: 1-cell walls repeated row after row), so only a
    run that goes on into the next word is merged as usual.  ``E`` (the
    table, filled like :func:`_prov_table`'s) has at least
    :func:`_bits_room` entries.  Returns the number of provisional labels,
    or -1 (nothing written to P) when the image has two foreground
    values."""
    n = values.shape[0]
    ndim = shape.shape[0]
    last = ndim - 1
    W = shape[last]
    nrows = n // W
    nw = (W + 63) >> 6
    # pack; find the foreground value first
    fv = bgkey
    for i in range(n):
        if values[i] != bgkey:
            fv = values[i]
            break
    M = np.zeros(nrows * nw, dtype=np.uint64)
    if _pack_rows(values, M, nrows, W, nw, bgkey, fv):
        return -1
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
        lo, hi = _row_masks(coords, shape, last)
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
            word = M[_u(mb + w)]
            S = word & ~((word << one) | carry)  # run starts in this word
            carry = word >> np.uint64(63)
            if one_line and word != 0 and word == M[_u(mb0 + w)]:
                c0 = w << 6
                for k in range(min(64, W - c0)):
                    P[_u(base + c0 + k)] = P[_u(jb0 + c0 + k)]
                # a run inside the word touches one run of the line (the same
                # cells; a set cell beside them continues that run): only
                # a run that goes on into the next word still merges
                if carry and S != 0:
                    S &= full << np.uint64(63 - int(leading_zeros(S)))
                else:
                    S = np.uint64(0)
            starts[_u(w)] = S
        for w in range(nw):
            S = starts[_u(w)]
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
                        T = M[_u(qmb[q] + wa)] & (full << np.uint64(a & 63)) & (
                            full >> np.uint64(63 - (b & 63)))
                        T &= ~(T << one)  # the first cell of each touched run
                        while T != 0:
                            x = (wa << 6) + int(trailing_zeros(T))
                            T &= T - one
                            r = _eq_find(E, P[_u(jb + x)])
                            hi_ = max(r, lab)
                            lab = min(r, lab)
                            E[_u(hi_)] = lab
                    else:
                        x = _next_one(M, qmb[q], a, W)
                        while x <= b:
                            r = _eq_find(E, P[_u(jb + x)])
                            hi_ = max(r, lab)
                            lab = min(r, lab)
                            E[_u(hi_)] = lab
                            x = _next_one(M, qmb[q], _next_zero(M, qmb[q], x, W), W)
                if lab == cap:
                    nl += 1
                    E[_u(nl)] = nl
                    lab = nl
                for k in range(base + s, base + e):
                    P[_u(k)] = lab
        _next_row(coords, shape, last)
    return nl


@njit(cache=True)
def _label(values, P, shape, table, has_bg, bgkey, tol, mask, bonds, brow, periodic, no_left):
    n = values.shape[0]
    _init(values, P, 0, n, has_bg, bgkey, mask)
    _rows(values, P, shape, table, tol, mask, bonds, brow, periodic, 0, n // shape[-1], 0, n,
          no_left)


@njit(cache=True, parallel=True)
def _label_parallel(values, P, L, shape, table, has_bg, bgkey, tol, mask, bonds, brow,
                    chunks, back, no_left):
    """Chunks of rows labelled at once; P holds parents, L gets the labels.

    1. each chunk (rows chunks[k]..chunks[k+1]-1) unites only pairs inside
       it: its trees stay inside its index range, so threads never meet;
    2. serially, the first `back` rows of each chunk unite with the cells
       before the chunk (every pair is now united, or skipped because an
       implied pair was);
    3. roots are counted per chunk and numbered in raster order (a prefix
       sum over the chunks); then each chunk, in order, gives every cell the
       number of its parent when that parent is in the chunk (numbered just
       before), or of its root (a walk) when it is in an earlier chunk.
    Not for periodic lattices (a wrapped pair can join any two chunks).
    """
    W = shape[-1]
    K = chunks.shape[0] - 1
    for k in prange(K):
        lo, hi = chunks[k] * W, chunks[k + 1] * W
        _init(values, P, lo, hi, has_bg, bgkey, mask)
        _rows(values, P, shape, table, tol, mask, bonds, brow, 0, chunks[k], chunks[k + 1], lo, hi,
              no_left)
    for k in range(1, K):
        _rows(values, P, shape, table, tol, mask, bonds, brow, 0, chunks[k],
              min(chunks[k] + back, chunks[k + 1]), 0, chunks[k] * W, no_left)
    counts = np.zeros(K + 1, dtype=np.int64)
    for k in prange(K):
        c = 0
        for i in range(chunks[k] * W, chunks[k + 1] * W):
            if P[i] == i:
                c += 1
        counts[k + 1] = c
    for k in range(K):
        counts[k + 1] += counts[k]
    for k in prange(K):
        c = counts[k]
        for i in range(chunks[k] * W, chunks[k + 1] * W):
            if P[i] == i:
                c += 1
                L[i] = c
    for k in prange(K):
        start = chunks[k] * W
        for i in range(start, chunks[k + 1] * W):
            p = P[i]
            if p < 0:
                L[i] = 0
            elif p >= start:
                if p != i:
                    L[i] = L[p]  # an earlier cell of this chunk: already numbered
            else:
                while P[p] != p:  # into an earlier chunk: walk to the root (P no longer changes)
                    p = P[p]
                L[i] = L[p]
    return counts[K]


@njit(cache=True, nogil=True)
def _slab(values, P, shape, table, has_bg, bgkey):
    """One slab of :func:`_label_slabs_threads`: provisional labels into P (as
    :func:`label_mesh` chooses the labeller) and the numbered table E (E[l]:
    the slab's label 1..count of provisional label l).  Returns (E, number of
    provisional labels, count)."""
    nl = -1
    if has_bg:
        E, nl = _bits_table(values, P, shape, table, bgkey)
    if nl < 0:
        E, nl = _prov_table(values, P, shape, table, has_bg, bgkey)
    return E, nl, _number_table(E, nl)


@njit(cache=True, nogil=True)
def _seam(values, P, shape, table, start, Ea, Oa, Eb, Ob, G):
    """Unite (in G, over global ids: a slab's offset + its label) the cells
    of the plane ``start`` along axis 0 (the first of slab b) with their
    neighbours in the plane before it (the last of slab a): the table's rows
    that step back along axis 0, equal values only, background never.  The
    seams run at once on the slabs' threads, so the hooks are CAS."""
    ndim = shape.shape[0]
    last = ndim - 1
    lastbit = 1 << last
    W = shape[last]
    plane = 1
    for k in range(1, ndim):
        plane *= shape[k]
    coords = np.zeros(ndim, dtype=np.int64)
    coords[0] = start
    prev_a = -1
    prev_b = -1
    for r in range(plane // W):
        lo, hi = _row_masks(coords, shape, last)
        base = start * plane + r * W
        for o in range(table.shape[0]):
            if not table[o, 1] & 1:
                continue
            if (lo & table[o, 1] & ~lastbit) | (hi & table[o, 2] & ~lastbit):
                continue
            d = -1 if (table[o, 1] >> last) & 1 else ((table[o, 2] >> last) & 1)
            off = table[o, 0]
            for c in range(max(0, -d), min(W, W - d)):
                i = base + c
                p = P[i]
                if p == 0:
                    continue
                j = i + off
                if values[i] != values[j]:
                    continue
                gb = Ob + Eb[p]
                ga = Oa + Ea[P[j]]
                if ga == prev_a and gb == prev_b:
                    continue
                prev_a = ga
                prev_b = gb
                unite_cas(G, ga, gb)
        _next_row(coords, shape, last)


@njit(cache=True, nogil=True)
def _gather(P, E, nl, G, O):
    """Final labels of a slab: provisional label l becomes G[O + E[l]]."""
    for l in range(1, nl + 1):
        E[l] = G[O + E[l]]
    E[0] = 0
    for i in range(P.shape[0]):
        P[i] = E[_u(P[i])]


@njit(cache=True, parallel=True)
def _slabs(values, L, shape, table, has_bg, bgkey, cuts):
    """The plain case in T = len(cuts) - 1 slabs along axis 0 (slab s: rows
    cuts[s]..cuts[s + 1] - 1), in one numba parallel region per round:

    1. each slab gets provisional labels and its numbered table from the
       serial labellers (the bit-packed one when the slab is binary), its
       table a piece of one buffer with room for a label per cell;
    2. the T - 1 seams unite the slabs' labels as global ids (a slab's
       offset + its label) in G, by CAS hooks (the smaller id becomes the
       root, so a component's root is its first piece in raster order);
    3. G's roots are numbered in order (skimage's numbering), and each slab
       gathers its final labels.

    Returns the number of labels.  (Handing each slab to a Python thread
    instead cost 20-40 us per slab and round on a 16-core host: each
    worker took the GIL to start its numba call, one after another;
    benchmarks/NOTES.md, 2026-11-26.)"""
    T = cuts.shape[0] - 1
    plane = values.shape[0] // shape[0]
    eo = np.zeros(T + 1, dtype=np.int64)  # slab s's table: E[eo[s]:eo[s + 1]]
    for s in range(T):
        eo[s + 1] = eo[s] + (cuts[s + 1] - cuts[s]) * plane + 3
    E = np.empty(eo[T], dtype=L.dtype)
    nls = np.zeros(T, dtype=np.int64)
    offsets = np.zeros(T + 1, dtype=np.int64)
    for s in prange(T):
        lo = cuts[s] * plane
        hi = cuts[s + 1] * plane
        sh = shape.copy()
        sh[0] = cuts[s + 1] - cuts[s]
        Es = E[eo[s]:eo[s + 1]]
        nl = -1
        if has_bg:
            nl = _bits_into(values[lo:hi], L[lo:hi], sh, table, bgkey, Es)
        if nl < 0:
            _, nl = _prov_into(values[lo:hi], L[lo:hi], sh, table, has_bg, bgkey, Es)
        nls[s] = nl
        offsets[s + 1] = _number_table(Es, nl)
    for s in range(T):
        offsets[s + 1] += offsets[s]
    N = offsets[T]
    G = np.arange(N + 1, dtype=np.int64)
    for s in prange(1, T):
        _seam(values, L, shape, table, cuts[s], E[eo[s - 1]:eo[s]], offsets[s - 1],
              E[eo[s]:eo[s + 1]], offsets[s], G)
    count = _number_table(G, N)
    for s in prange(T):
        lo = cuts[s] * plane
        hi = cuts[s + 1] * plane
        _gather(L[lo:hi], E[eo[s]:eo[s + 1]], nls[s], G, offsets[s])
    return count


#: Fewest cells per slab of the parallel plain case: an array of fewer than
#: twice as many is labelled serially whatever ``cpu_threads`` says, a
#: larger one in at most cells // SLAB_MIN_CELLS slabs.  Each slab costs a
#: seam and a share of three parallel regions' start; on the 16-core bench
#: host 4096 cells a slab were the best of 1 to 2^17 from 64^2 to 4096^2
#: (benchmarks/experiments/slab_min.py, benchmarks/NOTES.md, 2026-11-26).
SLAB_MIN_CELLS = 1 << 12

#: Fewest cells per numba thread for the other cases (mask, bonds,
#: tolerance, axes: :func:`_label_parallel`); serially below twice as many.
#: 2^14 was the best of 2^10 to 2^18 on the bench host from 128^2 to 2048^2
#: (benchmarks/experiments/chunk_min.py, NOTES 2026-11-26).
CHUNK_MIN_CELLS = 1 << 14

_pool_state = {"pid": None, "workers": 0, "pool": None}
_pool_lock = threading.Lock()


def _slab_pool(workers):
    """The slabs' worker threads, kept from call to call (a pool of at least
    ``workers`` threads; a larger one replaces it when asked for, and a
    forked child makes its own: the parent's threads are not in it)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    with _pool_lock:
        st = _pool_state
        if st["pool"] is None or st["pid"] != os.getpid() or st["workers"] < workers:
            # (an old pool is only dropped: a call still using it finishes,
            # and its idle threads end when it is collected)
            st.update(pid=os.getpid(), workers=workers,
                      pool=ThreadPoolExecutor(workers, thread_name_prefix="meshccl-slab"))
        return st["pool"]


def _label_slabs(values, L, shape, table, has_bg, bg, threads):
    """The plain case in T = min(threads, rows) slabs along axis 0: in numba
    parallel regions (:func:`_slabs`), or on Python threads
    (:func:`_label_slabs_threads`) where those may not run now (see
    :mod:`.regions`) or SLAB_DRIVER says so.  Returns the count."""
    rows = int(shape[0])
    T = max(1, min(int(threads), rows))
    cuts = np.array([rows * s // T for s in range(T + 1)], dtype=np.int64)
    if SLAB_DRIVER == "numba":
        with numba_region(T) as ok:
            if ok:
                return _slabs(values, L, shape, table, has_bg, bg, cuts)
    return _label_slabs_threads(values, L, shape, table, has_bg, bg, cuts)


#: "numba": the slabs in numba parallel regions (:func:`_slabs`); "pool":
#: on Python threads (:func:`_label_slabs_threads`), as where those may not run.
SLAB_DRIVER = "numba"

#: The calling thread takes the first item of each of a call's three
#: rounds of slab work itself (slabs, seams, gathers) instead of waiting
#: for the pool: one hand-off fewer per round.
SLAB_CALLER_WORKS = True


def _run(pool, f, items):
    """[f(i) for i in items] on the pool's threads (the first item in the
    calling thread with SLAB_CALLER_WORKS)."""
    items = list(items)
    if not SLAB_CALLER_WORKS or not items:
        return list(pool.map(f, items))
    futures = [pool.submit(f, i) for i in items[1:]]
    first = f(items[0])
    return [first] + [fu.result() for fu in futures]


def _label_slabs_threads(values, L, shape, table, has_bg, bg, cuts):
    """:func:`_slabs` on Python threads (where numba's parallel regions may
    not run, see :func:`_label_slabs`): the plain case in the T = len(cuts)
    - 1 slabs of :func:`_slabs` along axis 0, on T threads: each slab is
    labelled by the serial labellers (GIL released), then the seams between
    slabs are united in a small union-find over global ids (slab offset +
    slab label; the smaller id becomes the root, so a component's root is
    its first piece in raster order; the T - 1 seams on the threads too,
    with CAS hooks: in 3-D each is a whole plane, done one after another
    they had made blobs 128^3 slower threaded than serial), the roots are
    numbered in order (skimage's numbering) and each slab gathers its final
    labels."""
    T = cuts.shape[0] - 1
    plane = values.shape[0] // int(shape[0])
    shapes = []
    for s in range(T):
        sh = shape.copy()
        sh[0] = cuts[s + 1] - cuts[s]
        shapes.append(sh)
    sl = [slice(cuts[s] * plane, cuts[s + 1] * plane) for s in range(T)]
    pool = _slab_pool(T)
    res = _run(pool, lambda s: _slab(values[sl[s]], L[sl[s]], shapes[s], table, has_bg, bg),
               range(T))
    offsets = np.zeros(T + 1, dtype=np.int64)
    for s in range(T):
        offsets[s + 1] = offsets[s] + res[s][2]
    N = int(offsets[T])
    G = np.arange(N + 1, dtype=np.int64)
    _run(pool, lambda s: _seam(values, L, shape, table, cuts[s], res[s - 1][0], offsets[s - 1],
                               res[s][0], offsets[s], G), range(1, T))
    count = _number_table(G, N)
    _run(pool, lambda s: _gather(L[sl[s]], res[s][0], res[s][1], G, offsets[s]), range(T))
    return count


def keys(values, bgkey, tolerance):
    """Values, background and tolerance as the CPU kernels compare them:
    the values as they are with a tolerance, else their keys (floats
    truncated to int64 like skimage -- one copy -- integers unchanged)."""
    if tolerance is not None:
        return values, np.float64(bgkey), float(tolerance)
    if values.dtype.kind == "f":
        return values.astype(np.int64), np.int64(bgkey), None
    return values, values.dtype.type(bgkey), None


def label_mesh(values, P, shape, table, has_bg, bgkey, *, periodic=0, mask=None,
               bonds=None, bond_rows=None, tolerance=None, no_left=False):
    """Label flat ``values`` into ``P`` (int32/int64, same length); return N.

    ``no_left``: cells never join along the last axis (it is not one of
    ``axes``); ``table`` holds only the offsets along the labelled axes."""
    values, bg, tol = keys(values, bgkey, tolerance)
    if tol is None and mask is None and bonds is None and not periodic and not no_left:
        if has_bg:
            num = _label_bits(values, P, np.asarray(shape, dtype=np.int64), table, bg)
            if num >= 0:
                return int(num)
        return int(_label_prov(values, P, np.asarray(shape, dtype=np.int64), table,
                               bool(has_bg), bg))
    _label(values, P, np.asarray(shape, dtype=np.int64), table, bool(has_bg), bg, tol,
           mask, bonds, _NO_ROWS if bond_rows is None else bond_rows, int(periodic),
           bool(no_left))
    return int(relabel(P))


def label_mesh_parallel(values, L, shape, table, has_bg, bgkey, threads, *, mask=None,
                        bonds=None, bond_rows=None, tolerance=None, no_left=False):
    """Parallel labelling into ``L``; return N.  Same labels as
    :func:`label_mesh`.  Not for periodic lattices.  The plain case (no
    tolerance / mask / bonds / axes) runs in up to ``threads`` slabs along
    axis 0 (:func:`_label_slabs`; at least :data:`SLAB_MIN_CELLS` cells a
    slab, so serially when the array has fewer than twice as many, when
    axis 0 is shorter than 2 or the array is 1-D), the others on numba
    threads (:func:`_label_parallel`, at most NUMBA_NUM_THREADS and one per
    :data:`CHUNK_MIN_CELLS` cells: serially below twice that)."""
    import numba

    if tolerance is None and mask is None and bonds is None and not no_left:
        # the plain case: the serial labellers on slabs along axis 0
        shape = np.asarray(shape, dtype=np.int64)
        slabs = min(int(threads), values.shape[0] // SLAB_MIN_CELLS)
        if shape.shape[0] < 2 or shape[0] < 2 or slabs < 2:
            return label_mesh(values, L, shape, table, has_bg, bgkey)
        values, bg, _ = keys(values, bgkey, None)
        return int(_label_slabs(values, L, shape, table, bool(has_bg), bg, slabs))
    n = values.shape[0]
    threads = min(int(threads), numba.config.NUMBA_NUM_THREADS, n // CHUNK_MIN_CELLS)
    if threads < 2:  # (as small slabs, small chunks cost more than they save)
        return label_mesh(values, L, shape, table, has_bg, bgkey, mask=mask, bonds=bonds,
                          bond_rows=bond_rows, tolerance=tolerance, no_left=no_left)
    values, bg, tol = keys(values, bgkey, tolerance)
    shape = np.asarray(shape, dtype=np.int64)
    rows = n // int(shape[-1])
    K = max(1, min(rows, 4 * threads))
    chunks = np.linspace(0, rows, K + 1).astype(np.int64)
    back = int(-(-np.abs(table[:, 0]).max(initial=0) // int(shape[-1]))) + 1
    P = np.empty(n, dtype=np.int32 if n < 2**31 else np.int64)
    with numba_region(threads) as ok:
        if ok:
            return int(_label_parallel(values, P, L, shape, table, bool(has_bg), bg, tol, mask,
                                       bonds, _NO_ROWS if bond_rows is None else bond_rows, chunks,
                                       back, bool(no_left)))
    return label_mesh(values, L, shape, table, has_bg, bgkey, mask=mask, bonds=bonds,
                      bond_rows=bond_rows, tolerance=tolerance, no_left=no_left)


def label_iterative(method, values, P, shape, table, has_bg, bgkey, *, periodic=0, mask=None,
                    bonds=None, bond_rows=None, tolerance=None, no_left=False,
                    max_iterations=None):
    """Label with one of Hawick et al.'s iterative methods (see
    :mod:`.methods`); return (N, passes, seconds per phase).  Phases: init,
    pass (A, B, C, cpu1) or scanning / analysis / labelling (D, cpu2), and
    relabel.  Raises :class:`meshccl.errors.NotConverged` after
    ``max_iterations`` passes that all changed labels."""
    import time

    from ..neighbourhood import tile_logs
    from . import methods as M

    values, bg, tol = keys(values, bgkey, tolerance)
    span = np.empty(len(shape), dtype=np.int64)
    stride = 1
    for k in range(len(shape) - 1, -1, -1):
        span[k] = stride * shape[k]
        stride = span[k]
    full = M.full_table(table, len(shape), no_left)
    brow = _NO_ROWS if bond_rows is None else bond_rows
    seconds = {}
    t0 = time.perf_counter()
    M._init(values, P, bool(has_bg), bg, mask)
    seconds["init"] = time.perf_counter() - t0
    args = (values, P, np.asarray(shape, dtype=np.int64), full, span, int(periodic), tol, bonds,
            brow, int(max_iterations or 0))
    t0 = time.perf_counter()
    if method in ("D", "cpu2"):
        passes = M.kernel_d(*args, seconds=seconds)
    elif method == "B":
        passes = M.kernel_b(*args, np.asarray(tile_logs(tuple(shape)), dtype=np.int64))
    else:
        passes = {"A": M.kernel_a, "C": M.kernel_c, "cpu1": M.cpu1}[method](*args)
    if method not in ("D", "cpu2"):
        seconds["pass"] = time.perf_counter() - t0
    if passes < 0:
        from ..errors import NotConverged

        raise NotConverged(
            f"method={method!r} did not converge within max_iterations={max_iterations} passes")
    t0 = time.perf_counter()
    num = int(relabel(P))
    seconds["relabel"] = time.perf_counter() - t0
    return num, int(passes), seconds
