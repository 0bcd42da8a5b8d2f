"""The GPU image path's one table (meshccl._gpu.chains): which chain each
problem takes, cell by cell, and docs/architecture.md's copy of the table.

The problems are made on the host (validation is the same for NumPy and
CuPy input); select() reads only their shape, dtype and features.  That
each chain launches the kernels its row names is checked in
tests/test_counts_emulated.py, which runs the chains on an emulated GPU.
"""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from meshccl import _tuning, _validate
from meshccl._gpu import chains

ROOT = Path(__file__).resolve().parents[1]


def _chain(a, **kw):
    return chains.select(_validate.prepare(a, kw.pop("background", None),
                                           kw.pop("connectivity", None), None, **kw)).chain.name


def test_every_row_has_a_case():
    u8 = np.zeros((4, 5, 6), np.uint8)
    m = np.ones((4, 5, 6), bool)
    cases = {
        "iterative": _chain(u8, method="C"),
        "runs2d": _chain(np.zeros((7, 9), np.int64)),
        "runs3d": _chain(u8),
        "runs2d-lattice": _chain(np.zeros((7, 9)), tolerance=0.5),
        "runs3d-lattice": _chain(u8, mask=m),
        "general": _chain(np.zeros((2, 3, 4, 5), np.uint8)),
        "runsnd": _chain(np.zeros((2, 3, 4, 5), bool)),
        "runs3d-structure": _chain(np.zeros((4, 5, 6), bool),
                                   offsets=((-1, -1, -1), (0, 0, -1))),
        # (packed Ising spins: CuPy words only; the emulated chain in
        # tests/test_counts_emulated.py validates real ones)
        "runs2d-packed": chains.select(dataclasses.replace(
            _validate.prepare(np.zeros((6, 64), bool), None, 1, None, periodic=True),
            packed_flip=0)).chain.name,
    }
    assert {k: v for k, v in cases.items() if k != v} == {}
    assert set(cases) == set(chains.CHAINS)


@pytest.mark.parametrize("a, kw, chain", [
    (np.zeros(10, np.uint8), {}, "runs2d"),
    (np.zeros((1, 1, 10), bool), {}, "runs2d"),                 # squeezed to 1-D
    (np.zeros((3, 1, 4, 5), np.int16), {}, "runs3d"),            # squeezed to 3-D, 2 bytes
    (np.zeros((5, 6, 7), np.int8), dict(connectivity=1), "runs3d"),
    (np.zeros((5, 6, 7), np.uint16), {}, "runs3d"),
    (np.zeros((5, 6, 7), np.float32), {}, "runs3d"),
    (np.zeros((5, 6, 7), np.float64), dict(connectivity=2), "runs3d"),
    (np.zeros((5, 6, 7), np.int64), {}, "runs3d"),
    (np.zeros((5, 6, 7), np.float32), dict(tolerance=0.5), "runs3d-lattice"),
    (np.zeros((5, 6, 7), np.uint8), dict(periodic=True), "runs3d"),  # + wrap3d.cu
    (np.zeros((5, 6, 7), np.uint16), dict(periodic=(True, False, False)), "runs3d"),
    (np.zeros((6, 7)), dict(periodic=True), "runs2d"),                 # + runs2d wrap
    (np.zeros((6, 7), np.uint8), dict(mask=np.ones((6, 7), bool)), "runs2d-lattice"),
    (np.zeros((5, 6, 7), np.uint8), dict(tolerance=1), "runs3d-lattice"),
    (np.zeros((5, 6, 7), np.uint8), dict(axes=(1, 2)), "runs2d"),     # a stack of images
    (np.zeros((5, 6, 7), np.uint8), dict(axes=2, periodic=True), "runs2d"),
    (np.zeros((5, 6, 7), np.uint8), dict(axes=(1, 2), mask=np.ones((5, 6, 7), bool)),
     "runs2d-lattice"),
    (np.zeros((5, 6, 7), np.uint8), dict(axes=(0, 2)), "general"),    # not a stack
    (np.zeros((5, 6, 7), np.uint8), dict(axes=(0, 1)), "general"),    # no left neighbour
    (np.zeros((3, 5, 6, 7), np.uint8), dict(mask=np.ones((3, 5, 6, 7), bool)), "general"),
    (np.zeros((3, 5, 6, 7), bool), {}, "runsnd"),                    # any connectivity
    (np.zeros((3, 5, 6, 7), bool), dict(connectivity=2), "runsnd"),
    (np.zeros((2, 1, 3, 5, 6, 7), bool), dict(background=1), "runsnd"),
    (np.zeros((5, 6, 7), bool), {}, "runs3d"),
    (np.zeros((5, 6, 7), bool), dict(offsets=((-1, 0, 1),)), "runs3d-structure"),
    (np.zeros((5, 1, 7), bool), dict(offsets=((-1, 0, 1),)), "runsnd"),  # squeezed to 2-D
    (np.zeros((5, 6, 7, 2), bool), dict(offsets=((-1, 0, 1, 0),)), "runsnd"),
    (np.zeros((3, 5, 6, 7), bool), dict(periodic=True), "general"),
    (np.zeros((3, 5, 6, 7), bool), dict(axes=(1, 2, 3)), "general"),
    (np.zeros((3, 5, 6, 7), bool), dict(mask=np.ones((3, 5, 6, 7), bool)), "general"),
    (np.zeros((3, 5, 6, 7), np.uint8), {}, "general"),                # values, not bool
    (np.zeros((4, 4), np.uint8), dict(method="A"), "iterative"),
    (np.zeros((4, 4), np.uint8), dict(method="unionfind"), "runs2d"),
])
def test_select(a, kw, chain):
    assert _chain(a, **kw) == chain


def test_too_tall_for_a_launch_takes_the_general_chain():
    """A grid of tiles taller than a launch takes (65535 blocks along y or z)
    goes to the general chain, with or without lattice features."""
    prob = _validate.prepare(np.zeros((2, 40), np.uint8), None, None, None,
                             mask=np.ones((2, 40), bool))
    planes = min(min(_tuning.RUNS_3D_PLANES.values()), min(_tuning.RUNS_SEAM_PLANES.values()))
    for shape in ((planes * 65535 + 1, 2, 40), (2, 32 * 65535 + 1, 40)):
        prob.shape = shape
        assert chains.select(prob).chain.name == "general"
        prob.mask = None
        assert chains.select(prob).chain.name == "general"
        prob.mask = np.ones(1, np.uint8)
    prob.shape = (planes * 65535, 32 * 65535, 40)  # (the largest grid a launch takes)
    assert chains.select(prob).chain.name == "runs3d-lattice"
    prob.shape = (32 * 65535 + 1, 3)  # 2-D: too many rows of tiles
    assert chains.select(prob).chain.name == "general"
    prob.shape = (32 * 65535, 3)
    assert chains.select(prob).chain.name == "runs2d-lattice"


def test_stack_view_geometry():
    """A stack of images is its tall 2-D image to the chain."""
    case = chains.select(_validate.prepare(np.zeros((5, 6, 7), np.uint8), None, None, None,
                                           axes=(1, 2)))
    assert (case.shape, case.image_rows, case.label_axes) == ((30, 7), 6, None)


def test_architecture_doc_holds_the_table():
    """docs/architecture.md shows the table as `python -m meshccl._gpu`
    prints it (the doc is regenerated from the code, not edited by hand)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert chains.BEGIN in text and chains.END in text
    held = text.split(chains.BEGIN, 1)[1].split(chains.END, 1)[0].strip()
    assert held == chains.markdown().strip(), \
        "regenerate it: python -m meshccl._gpu --write docs/architecture.md"
