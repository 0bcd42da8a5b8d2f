"""A few cases of each kind from tests/soak.py (the long randomized run
against independent references), on every backend, so that the script
keeps working; the long runs go through benchmarks/gpu_check.sh soak."""

import pytest

import soak


@pytest.mark.parametrize("kind", sorted(soak.KINDS))
def test_soak_cases(backend, kind):
    summary = soak.run(0, seed=11, backend=backend, max_cells=30_000, cases=12, kinds=[kind])
    assert summary["cases"] == 12 and summary["per_kind"] == {kind: 12}
    assert sum(summary["cells_compared"].values()) > 0
    assert summary["failures"] == []


def test_soak_reports_a_disagreement(monkeypatch, tmp_path):
    """A wrong label is caught, saved and reported, not passed over."""
    import numpy as np

    real = soak.meshccl.label

    def off_by_one(x, *args, **kw):
        out = real(x, *args, **kw)
        if isinstance(out, tuple):
            return (out[0] + (out[0] > 0),) + out[1:]
        return out + (out > 0)

    monkeypatch.setattr(soak.meshccl, "label", off_by_one)
    summary = soak.run(0, seed=3, backend="cpu", max_cells=5_000, cases=4, kinds=["images"],
                       out=str(tmp_path))
    assert summary["failures"], "an off-by-one labeller went unnoticed"
    saved = sorted(tmp_path.joinpath("failures").glob("case-*-*.npz"))
    assert saved and set(np.load(saved[0]).files) >= {"a", "got", "want"}
