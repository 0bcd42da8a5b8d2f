"""Peak host memory of one CPU labelling call beyond its input: meshccl's
compiled core (serial, ``cpu_threads=0``, and serial with ``dtype=np.int32``)
against ``skimage.measure.label``,
``scipy.ndimage.label`` and ``cc3d.connected_components`` (when importable).

    python benchmarks/cpu_memory.py --out /tmp/cpu_memory

Each (tool, case) runs in a fresh child process (``sys.executable``), so no
call sees another's heap.  The parent writes every case's input once to a
``.npy`` file (the generators' float temporaries would otherwise count);
the child imports its tool, labels a small image once (so lazily imported
modules and thread pools are not counted), loads the input and touches
every page, then measures the one call.  Peak RSS counts C and C++
allocations too (tracemalloc sees only Python's).

The measure: the child resets the kernel's high-water mark of its resident
set just before the call (``/proc/self/clear_refs``, value 5) and reads
``VmHWM`` after it, minus ``VmRSS`` before it: everything the call held
resident at its highest point, its label output among them.  The plain
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` after - before is recorded
too ("maxrss_peak_bytes" in the JSON) but is not used where the reset
works: ``ru_maxrss`` is a high-water mark that the child starts with at
the parent's peak (Linux carries the pre-exec peak over an exec) and that
the imports raise further, so a call whose peak stays below that reads
as 0.  Where ``/proc/self/clear_refs`` cannot be written, the table falls
back to ``ru_maxrss`` and marks the cell with "*".  Pages are 4 kB; memory
the allocator had already mapped and kept (glibc's arenas) is reused
without counting again, so peaks under ~1 MB are noise.

The table divides the peak by the bytes of the tool's own label output
(``labels.nbytes``; skimage returns int64, SciPy and meshccl int32, cc3d
picks the smallest unsigned type that holds its label count): 1x is a call
that needs nothing but its output.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

CASES = [  # (name, pattern, shape, connectivities); full = ndim
    ("blobs 2048^2", "blobs", (2048, 2048), (1, 2)),
    ("percolation 2048^2", "percolation", (2048, 2048), (1, 2)),
    ("blobs 256^3", "blobs", (256, 256, 256), (1, 3)),
    ("percolation 256^3", "percolation", (256, 256, 256), (1, 3)),
]
TOOLS = ["meshccl serial", "meshccl threads", "meshccl int32", "skimage", "scipy", "cc3d"]
THRESHOLD = {2: 0.5927, 3: 0.3116}  # site percolation, connectivity 1


def make_input(pattern, shape, seed=1):
    """The case's uint8 array (0 / 1)."""
    from meshccl import patterns
    if pattern == "blobs":
        return patterns.blobs(shape, seed=seed)
    if pattern == "percolation":
        return patterns.percolation(shape, THRESHOLD[len(shape)], seed=seed)
    raise ValueError(pattern)


def labeller(tool, ndim, conn):
    """A function image -> labels for ``tool`` at connectivity ``conn``
    (1: faces only, ``ndim``: full), or raise ImportError."""
    if tool.startswith("meshccl"):
        import meshccl
        import numpy as np
        thr = 0 if tool == "meshccl threads" else 1
        dt = np.int32 if tool == "meshccl int32" else None  # None: int64, like skimage
        return lambda a: meshccl.label(a, connectivity=conn, cpu_threads=thr, dtype=dt)
    if tool == "skimage":
        from skimage.measure import label
        return lambda a: label(a, connectivity=conn)
    if tool == "scipy":
        from scipy import ndimage
        s = ndimage.generate_binary_structure(ndim, conn)
        return lambda a: ndimage.label(a, structure=s)[0]
    if tool == "cc3d":
        import cc3d
        c = {(2, 1): 4, (2, 2): 8, (3, 1): 6, (3, 3): 26}[(ndim, conn)]
        return lambda a: cc3d.connected_components(a, connectivity=c)
    raise ValueError(tool)


def _status_kb(key):
    """A ``kB`` line of /proc/self/status (VmRSS, VmHWM), or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child(tool, path, conn):
    """Measure one call in this (fresh) process; returns the result dict."""
    import numpy as np
    ndim = np.load(path, mmap_mode="r").ndim
    try:
        f = labeller(tool, ndim, conn)
    except ImportError as e:
        return {"error": f"not importable: {e}"}
    f(np.zeros((64,) * 2 if ndim == 2 else (16,) * 3, np.uint8) | 1)  # warm: imports, pools
    a = np.load(path)
    int(a.sum())  # every page resident
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss0 = _status_kb("VmRSS")
    reset = _reset_hwm()
    t = time.perf_counter()
    out = f(a)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    hwm = _status_kb("VmHWM") if reset else None
    hwm_peak = None if hwm is None or rss0 is None else (hwm - rss0) * 1024
    return {
        "peak_bytes": hwm_peak if hwm_peak is not None else (after - before) * 1024,
        "method": "VmHWM" if hwm_peak is not None else "ru_maxrss",
        "maxrss_peak_bytes": (after - before) * 1024,
        "maxrss_before_kb": before,
        "input_bytes": int(a.nbytes),
        "output_bytes": int(out.nbytes),
        "output_dtype": str(out.dtype),
        "components": int(out.max()),
        "wall_s": wall,
    }


def run_child(tool, path, conn, timeout=300):
    """One (tool, case) in a fresh process; the child's result dict."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", tool, path, str(conn)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def fmt_bytes(n):
    """Bytes as MB with three significant-ish digits ("33.6 MB", "0.4 MB")."""
    if n is None:
        return "—"
    mb = n / 1e6
    return f"{mb:.1f} MB" if abs(mb) < 100 else f"{mb:.0f} MB"


def fmt_cell(r):
    """A table cell: peak (peak / output), or why not measured."""
    if r is None or "error" in r:
        return "not measured"
    ratio = r["peak_bytes"] / r["output_bytes"] if r["output_bytes"] else float("nan")
    star = "" if r.get("method", "VmHWM") == "VmHWM" else "*"
    return f"{fmt_bytes(r['peak_bytes'])}{star} ({ratio:.2f}×)"


def conn_name(conn, ndim):
    return "full" if conn == ndim and conn > 1 else f"c{conn}"


def table(results, tools):
    """Markdown table from ``results``: a list of dicts with case, ndim, conn,
    input_bytes and per-tool result dicts under "tools"."""
    head = "| case | conn | input | " + " | ".join(tools) + " |"
    lines = [head, "|---|---|---:|" + "---:|" * len(tools)]
    for row in results:
        cells = [fmt_cell(row["tools"].get(t)) for t in tools]
        lines.append(f"| {row['case'].replace('^2', '²').replace('^3', '³')} | "
                     f"{conn_name(row['conn'], row['ndim'])} | {fmt_bytes(row['input_bytes'])} | "
                     + " | ".join(cells) + " |")
    outs = {}
    for row in results:
        for t in tools:
            r = row["tools"].get(t)
            if r and "error" not in r:
                outs.setdefault(t, r["output_dtype"])
    note = "Label output: " + ", ".join(f"{t} {d}" for t, d in outs.items()) + "."
    return "\n".join(lines) + "\n\n" + note + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="directory for memory.md and memory.json")
    ap.add_argument("--tools", nargs="+", default=TOOLS, choices=TOOLS)
    ap.add_argument("--cases", nargs="+", help="case names (default: all)")
    ap.add_argument("--child", nargs=3, metavar=("TOOL", "NPY", "CONN"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        tool, path, conn = args.child
        print(json.dumps(child(tool, path, int(conn))))
        return
    import numpy as np
    results = []
    with tempfile.TemporaryDirectory() as d:
        for name, pattern, shape, conns in CASES:
            if args.cases and name not in args.cases:
                continue
            path = os.path.join(d, name.replace(" ", "_").replace("^", "") + ".npy")
            a = make_input(pattern, shape)
            np.save(path, a)
            for conn in conns:
                row = {"case": name, "shape": list(shape), "ndim": len(shape), "conn": conn,
                       "input_bytes": int(a.nbytes), "tools": {}}
                for tool in args.tools:
                    r = run_child(tool, path, conn)
                    row["tools"][tool] = r
                    print(f"{name:20s} {conn_name(conn, len(shape)):4s} {tool:16s} "
                          + (r["error"] if "error" in r else
                             f"{fmt_cell(r)}  ru_maxrss {fmt_bytes(r['maxrss_peak_bytes'])}  "
                             f"out {fmt_bytes(r['output_bytes'])}  {r['wall_s'] * 1e3:.0f} ms"),
                          flush=True)
                results.append(row)
            del a
    md = table(results, args.tools)
    print()
    print(md)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        cmd = "python benchmarks/cpu_memory.py " + " ".join(argv if argv is not None else sys.argv[1:])
        with open(os.path.join(args.out, "memory.md"), "w") as f:
            f.write(f"Peak host memory of one call beyond its input (`{cmd.strip()}`):\n\n{md}")
        with open(os.path.join(args.out, "memory.json"), "w") as f:
            json.dump({"command": cmd.strip(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
