"""Hawick et al.'s iterative methods A-D on the GPU (``_kernels/iterative.cu``).

Each method repeats a pass until a pass changes no label.  A pass is one
launch (A, B), 2 * ndim sweep launches (C) or three launches (D); the
change flags are read in batches (:mod:`.passes`), so the labels and the
reported pass count are exact.
"""

from __future__ import annotations

import numpy as np

from .loader import kernels
from .passes import until_settled
from .image_general import grid_args
from .number_roots import BLOCK, grid, relabel, relabel_counted
from .timing import run

def label_iterative(prob, P, timer=None):
    """Label ``prob`` (a :class:`meshccl._validate.Problem` on the current
    GPU, ``prob.method`` 'A', 'B', 'C' or 'D') into the flat CuPy ``P``.

    Returns ``(N, passes)``: N as a 0-d CuPy array (with ``prob.counts``:
    N as an int and the cells per label,
    :func:`.number_roots.relabel_counted`), and the number of passes
    including the last one, which changed nothing (as the CPU twin counts).
    Raises :class:`NotConverged` when ``max_iterations`` passes all changed
    labels.  Extra memory: one index array of the input's size (A, B: the
    second label buffer; D: the references), C none.
    """
    import cupy

    method, max_iterations, values, shape = prob.method, prob.max_iterations, prob.values, \
        prob.shape
    targs, geo, params = grid_args(prob)
    n = values.size
    tiles, cells = (geo["tiles"],), (geo["tile_cells"],)
    # one module per instantiation: every method's kernels compile together
    init, kern_a, kern_b, sweep, scan = kernels(
        "iterative.cu", *(f"meshccl_iter_{k}<{targs}>" for k in ("init", "a", "b", "c", "d_scan")))
    run(timer, "init", lambda: init(tiles, cells, (values, P) + params))
    state = {"src": P}

    if method in ("A", "B"):
        kern = kern_a if method == "A" else kern_b
        other = cupy.empty_like(P)
        smem = geo["tile_cells"] * P.dtype.itemsize if method == "B" else 0

        def one_pass(flag):
            src = state["src"]
            dst = other if src is P else P
            kern(tiles, cells, (values, src, dst, flag) + params, shared_mem=smem)
            state["src"] = dst
        steps = [("pass", one_pass)]
    elif method == "C":
        steps = []
        for axis in range(len(shape)):
            lines = n // shape[axis]
            for sign in (1, -1):
                def one_sweep(flag, axis=axis, sign=sign, lines=lines):
                    sweep(((lines + 127) // 128,), (128,),
                          (values, P, flag, np.int32(axis), np.int32(sign), P.dtype.type(lines))
                          + params)
                steps.append((f"sweep {axis}{'+' if sign > 0 else '-'}", one_sweep))
    elif method == "D":
        index = targs.split(", ")[1]
        analyse, label = kernels("iterative.cu", f"meshccl_iter_d_analyse<{index}>",
                                 f"meshccl_iter_d_label<{index}>")
        R = cupy.arange(n, dtype=P.dtype)
        nn = P.dtype.type(n)
        steps = [
            ("scanning", lambda flag: scan(tiles, cells, (values, P, R, flag) + params)),
            ("analysis", lambda flag: analyse(grid(n), (BLOCK,), (P, R, nn))),
            ("labelling", lambda flag: label(grid(n), (BLOCK,), (P, R, nn))),
        ]
    else:
        raise ValueError(f"method must be 'A', 'B', 'C' or 'D' on the GPU, got {method!r}")

    def one_pass(t, flag):
        for name, step in steps:
            if timer is None:
                step(flag)
            else:
                timer.run(name, lambda step=step: step(flag))

    passes = until_settled(one_pass, method, max_iterations,
                           None if timer is None else timer.fold)
    if state["src"] is not P:
        P[...] = state["src"]
    if prob.counts:
        return relabel_counted(P, n, timer), passes
    return relabel(P, n, timer, first=prob.first), passes
