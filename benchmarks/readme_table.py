"""The README's benchmark table from a run's bench.json (benchmarks/bench.py).

Prints the Markdown rows README.md quotes: each case's floor, meshccl's GPU
time, the GPU peers, meshccl against the fastest GPU peer of the same run,
meshccl against the floor, and the CPU tools.  Times in ms, three
significant digits (whole numbers from 100 on).

    python benchmarks/readme_table.py benchmarks/results/bench.json
"""
import json
import math
import sys

GPU_PEERS = ["cupyx", "cuCIM", "bkeccl", "bkeccl raw", "colorcc"]
SHOWN = ["cupyx", "cuCIM", "bkeccl raw", "colorcc"]
CPU = ["meshccl CPU", "meshccl CPU threads", "skimage", "scipy", "OpenCV", "cc3d"]


def ms(x):
    """Milliseconds, three significant digits (whole numbers from 100 on)."""
    if x >= 99.95:
        return f"{x:.0f}"
    decimals = max(0, 2 - math.floor(math.log10(x)))
    text = f"{x:.{decimals}f}"
    if decimals and float(text) >= 10 ** (3 - decimals):  # rounded up a digit (9.996 -> 10.00)
        text = f"{x:.{decimals - 1}f}"
    return text


def case_name(c):
    shape = c["shape"]
    size = f"{shape[0]}{'²' if len(shape) == 2 else '³'}"
    pattern = c["pattern"]
    if pattern == "potts":  # (the case name says q: potts4-...)
        pattern = "Potts q=" + c["name"].split("-")[0][len("potts"):]
    return f"{pattern} {size}, c{c['connectivity']}"


def rows(run):
    out = []
    for c in run["cases"]:
        t = c["tools"]

        def sec(name):
            r = t.get(name, {})
            return r["seconds"] if r.get("status") == "ok" else None

        me = sec("meshccl GPU")
        cells = [case_name(c), f"{c['floor_s'] * 1e3:.3f}", f"**{ms(me * 1e3)}**"]
        cells += [ms(sec(p) * 1e3) if sec(p) is not None else "n/a" for p in SHOWN]
        peers = [(sec(p), p) for p in GPU_PEERS if sec(p) is not None]
        best, who = min(peers)
        cells.append(f"{best / me:.2f}× ({who})")
        cells.append(f"{me / c['floor_s']:.1f}×")
        cells += [ms(sec(p) * 1e3) if sec(p) is not None else "n/a" for p in CPU]
        out.append("| " + " | ".join(cells) + " |")
    return out


if __name__ == "__main__":
    run = json.load(open(sys.argv[1]))
    print("\n".join(rows(run)))
