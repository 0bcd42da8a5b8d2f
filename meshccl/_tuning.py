"""Tuning constants, in one place, and the one way to change them.

Every constant here was kept because a measurement chose it; its comment
gives the reason in a line and names the entry of ``docs/decisions.md``
that holds the measurements.  They never change what a call returns, only
how fast it runs (labels are identical for every setting).

Library code reads them as ``_tuning.NAME`` at call time, never by
``from ._tuning import NAME``.  Tests and benchmarks that need another
setting use :func:`override`, which changes what ``_tuning.NAME`` reads in
the calling thread (its context) only; nothing assigns to these names, or
to any other module global, at run time.

Examples
--------
>>> from meshccl import _tuning
>>> with _tuning.override(CPU_SLAB_MIN_CELLS=1 << 20):
...     _tuning.CPU_SLAB_MIN_CELLS
1048576
>>> _tuning.CPU_SLAB_MIN_CELLS
4096
"""

from __future__ import annotations

import contextlib
import contextvars

#: The overrides in force in this context: a dict NAME -> value (empty: none).
_overrides = contextvars.ContextVar("meshccl_tuning_overrides", default={})
_on_change = []  # callables that drop what this thread built from the constants


def when_changed(fn):
    """Register ``fn()`` to run in the overriding thread after
    :func:`override` sets or restores values (to drop that thread's caches
    of launch programs, say).  Returns ``fn``."""
    _on_change.append(fn)
    return fn


def token():
    """A hashable value that identifies the settings in force in this
    context (``()`` for the defaults): caches shared between threads key
    what they build from the constants on it."""
    return tuple(sorted((k, repr(v)) for k, v in _overrides.get().items()))


@contextlib.contextmanager
def override(**values):
    """Set tuning constants for the duration of a ``with`` block.

    Parameters
    ----------
    **values
        ``NAME=value`` for constants of this module.  An unknown name raises
        ``KeyError`` (so a renamed constant cannot be overridden silently).

    Notes
    -----
    Thread-safe: the values hold in the calling thread's context (a
    :mod:`contextvars` variable, as :func:`decimal.localcontext` does), so
    calls running at the same time in other threads keep the defaults or
    their own overrides.  Blocks nest; the inner one wins.  This thread's
    caches built from the constants are dropped on entry and on exit;
    caches shared between threads key on :func:`token`.
    """
    unknown = sorted(k for k in values if k not in _DEFAULTS)
    if unknown:
        raise KeyError(f"no tuning constant named {', '.join(unknown)}")
    reset = _overrides.set({**_overrides.get(), **values})
    _changed()
    try:
        yield
    finally:
        _overrides.reset(reset)
        _changed()


def _changed():
    for fn in _on_change:
        fn()


def __getattr__(name):
    try:
        default = _DEFAULTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return _overrides.get().get(name, default)


def __dir__():
    return sorted(list(globals()) + list(_DEFAULTS))


# ---------------------------------------------------------------------------
# GPU: plain 1-D, 2-D and 3-D images (_gpu/image_plain.py)
# ---------------------------------------------------------------------------

#: Words per thread of meshccl_piece_roots and meshccl_label_pieces after
#: the 2-D tile kernel with slots (1 or 2): 2 fits a 4096^2 image's words in
#: one wave of threads; images without slots keep 1 (docs/decisions.md:
#: "piece words per thread").
PIECE_WORDS = 2
#: Planes per brick of runs3d.cu, by connectivity: 16 halves the z faces at
#: connectivity 1; at 2 and 3 the deeper tile lost more than that saved
#: (docs/decisions.md: "brick depth").
RUNS_3D_PLANES = {1: 16, 2: 8, 3: 8}
#: Warps (bricks) per block of meshccl_runs3d_zface: 1, 2, 4 and 8 measured
#: alike (H200) but percolation 512^3 c3, 0.30 ms with 1 against 0.38 with 4.
RUNS_ZFACE_WARPS = 1
#: Tiles per block of meshccl_runs3d_seams, two warps each (x and y seam;
#: docs/decisions.md: "seam kernel").
RUNS_SEAM_TILES = 4
#: Planes a warp of meshccl_runs3d_seams walks, by connectivity (2, 8 and
#: 16 were slower; docs/decisions.md: "seam kernel").
RUNS_SEAM_PLANES = {1: 4, 2: 4, 3: 4}
#: L2 prefetch of the sectors of P that run starts' piece roots go to
#: (runs.cuh, prefetch_run_starts), by (dimension, connectivity): 0 none, 1
#: per sector, 2 per row; not at 3-D c2/c3, whose kernels spill more with it
#: (docs/decisions.md: "prefetch of piece-root sectors").
RUNS_PREFETCH = {(2, 1): 2, (2, 2): 2, (3, 1): 2, (3, 2): 0, (3, 3): 0}
#: Tile rows per lane group of meshccl_label_runs, by label bytes (1, 2 or 4
#: for int32; 1, 2 or 4 for int64: the instantiations in number_pieces.cu;
#: docs/decisions.md: "label pass lanes").
RUNS_LABEL_ROWS = {4: 1, 8: 1}
#: Cells per lane of meshccl_label_runs, by label bytes (4 or 8 for int32,
#: 4 for int64; docs/decisions.md: "label pass lanes").
RUNS_LABEL_CELLS = {4: 8, 8: 4}
#: Pairs a thread of meshccl_runsnd_unions queues before it unites them, by
#: number of axes (4: four or more; runsnd_pairs.cuh, word_pairs;
#: docs/decisions.md: "structures and bool n-D on runs").
RUNSND_UNITE_BATCH = {1: 1, 2: 1, 3: 1, 4: 8}
#: Earlier pairs a word of meshccl_runsnd_unions keeps for the cover masks in
#: registers, by number of axes as above (0: all, in a local-memory table).
RUNSND_COVER_SLOTS = {1: 0, 2: 0, 3: 0, 4: 4}
#: Planes per brick of runs3d_structure.cu (8 or 16): 16 halves the pairs
#: through the bricks' z faces (H200, 512^3 p = 0.3, 8 random structures:
#: faces 0.96-1.80 -> 0.80-1.51 ms, tile 1.34-1.56 -> 1.43-1.66, chain
#: 2.75-3.77 -> 2.68-3.55; docs/decisions.md: "structures and bool n-D on runs").
RUNS3D_STRUCTURE_PLANES = 16
#: meshccl_runs3d_structure_faces drops the pairs that leave a brick whose
#: partner neighbours an earlier such pair's partner (the row table's
#: covers; same cases at 8 planes: chain 2.84-3.78 ms without, 2.75-3.77
#: with, 7 of 8 faster).
RUNS3D_STRUCTURE_FACE_COVERS = True
#: Blocks per multiprocessor of the statistics form of the run label pass
#: (label(..., return_statistics=True)): the grid steps over the rows, so
#: each block's shared-memory table gathers many rows before it adds them
#: to the global one; 3 is what fits at once (__launch_bounds__(256, 3)).
STATS_PASS_BLOCKS_PER_SM = 3
#: Slots per 32 x 32 tile for the piece roots of its run starts (plain 2-D
#: images; 0: none): tiles with few run starts keep them in consecutive
#: words rather than scattered over the labels array (docs/decisions.md:
#: "slots for few-run tiles").  Costs slots / 1024 index words per cell:
#: 64 keeps a plain 2-D call within 1.25x its labels' memory.
RUNS_2D_SLOTS = 64
#: Share of tiles that must have fitted their run starts in their slots on
#: a launch plan's last counted call for its next call to take the tile
#: kernel with slots, by connectivity (0: always, above 1: never;
#: docs/decisions.md: "slots for few-run tiles").
RUNS_2D_SLOTS_SHARE = {1: 0.5, 2: 0.5}

#: Arrays up to this many cells replay a CUDA graph on a launch plan's own
#: buffers (copy in, replay, copy out): one graph launch instead of five to
#: eight kernel launches on small images (docs/decisions.md: "launch plans and CUDA graphs").
PLAN_GRAPH_CELLS = 1 << 19
#: The call with one (input, labels) address pair on which a launch plan
#: records a CUDA graph at those addresses (0: never; docs/decisions.md:
#: "launch plans and CUDA graphs").
PLAN_GRAPH_AFTER = 2
#: Launch the kernels a plan's chain marks ``early`` with programmatic
#: dependent launch where the GPU has it (compute capability 9.0 on): the
#: next kernel's blocks start while the one before drains
#: (docs/decisions.md: "early launch of the numbering chain").
LAUNCH_PDL = True
#: Packed words per thread of meshccl_ising_multispin (Metropolis, 1 or 2): 2
#: shares a thread's row set-up and Philox key schedule; H200, GPU flips/ns at
#: 4096² / 8192² / 16384²: 857 / 951 / 948 with 1, 903 / 1041 / 1021 with 2
#: (docs/decisions.md: "fused simulation kernels").
METROPOLIS_WORDS = 2

# ---------------------------------------------------------------------------
# GPU: general lattices, the iterative methods and numbering by roots
# ---------------------------------------------------------------------------

#: Word counts (cells / 32) up to this many are prefix-summed by one block
#: of number_roots.cu (one launch, no temporary memory); longer ones in
#: three launches (docs/decisions.md: "one numbering path per forest").
ROOTS_ONE_BLOCK_SCAN_WORDS = 16384

# ---------------------------------------------------------------------------
# GPU: graphs
# ---------------------------------------------------------------------------

# The samplers' sizes; the CPU twins (_cpu/core/graph.hpp) read the same values.
#: edges per vertex united by k-out sampling: 2 was best for Afforest and GConn
#: (docs/graph.md: "k-out sampling")
GRAPH_K_OUT = 2
#: entries a still-root vertex unites in hook-based sampling, as k-out's
#: (docs/graph.md: "hook-based sampling")
GRAPH_HB_EDGES = 2
#: BFS sampling stops after this many levels; what it reached is still one
#: connected set and the finish pass does the rest (docs/graph.md: "BFS sampling")
GRAPH_BFS_SAMPLE_LEVELS = 512
#: k-out runs all k entries in one guarded kernel above this many stored
#: entries per vertex, Afforest's rounds below (docs/graph.md: "k-out sampling")
GRAPH_KOUT_DENSE_DEGREE = 32

# method='auto' on the GPU (docs/graph.md: "auto on the GPU")
from fractions import Fraction  # noqa: E402  (an exact threshold)

#: sample ('kout') symmetric CSR storing more than this many entries per vertex
GRAPH_AUTO_KOUT_MIN_DEGREE = Fraction(23, 10)  # exact: m > 2.3 n
#: ... and use 'hb' instead above this many
GRAPH_AUTO_HB_MIN_DEGREE = 6
#: an edge list: look for a path numbered in order at most this many edges per vertex ...
GRAPH_AUTO_CHAIN_MAX_DEGREE = 2
#: ... and take 'early' when this share of sampled edges joins v and v +- 1
GRAPH_AUTO_CHAIN_MIN_FRACTION = 0.75
#: CSR: look for locality at most this many entries per vertex (meshes, roads,
#: chains; not R-MAT or power-law hubs, which then pay no probe) ...
GRAPH_AUTO_TILES_MAX_DEGREE = 6
#: ... and take 'tiles' when this share of sampled entries (v, u) has u in v's tile
GRAPH_AUTO_TILES_MIN_FRACTION = 0.5
#: 'tiles': log2 of the vertices of one tile, united in one block's shared
#: memory (4 bytes each; at most 13, 32 KiB, below CUDA's 48 KiB default)
GRAPH_TILE_SHIFT = 13

#: resident blocks per multiprocessor of the validation scan: 8 x 256
#: threads fill an H100 / H200 multiprocessor at its 32 registers
GRAPH_CHECK_BLOCKS_PER_SM = 8
#: ... when it runs on a side stream beside the method: 2 leave the method
#: the bandwidth its loads need (docs/graph.md: "graph check aside")
GRAPH_CHECK_ASIDE_BLOCKS_PER_SM = 2

# Recorded launch plans of repeated calls (_gpu/graph_plan.py;
# docs/graph.md: "launch plans")
#: the call with one key on which a plan is recorded (1: the first; 0: never),
#: so that a one-off call never pays for the recording
GRAPH_PLAN_AFTER = 2
#: plans kept per thread (least recently used dropped first)
GRAPH_MAX_PLANS = 4
#: larger graphs take the direct path: the GPU's time dwarfs the host's
#: there, and a plan keeps about 20 bytes per vertex
GRAPH_MAX_PLAN_VERTICES = 1 << 23

# Strong components on the GPU (_gpu/strong.py; docs/decisions.md: "strong
# components on the GPU: paths contracted, then Multistep")
#: rows of more than this many entries are pushed and searched by the
#: colouring as chunks of 32 over many lanes, shorter ones by one lane each
STRONG_LONG_ROW = 128
#: strong components: the symmetry test (strong components of a graph stored
#: both ways are its weak ones) scans in x out entries of a vertex; a row
#: longer than this makes it answer "not shown symmetric", and the search
#: for mutual edges skips it (docs/graph.md: "Strong components")
STRONG_SYMMETRIC_MAX_ROW = 32
#: paths of vertices with one in- and one out-neighbour are contracted first
#: when at least one vertex in this many is on one (docs/graph.md: "Strong
#: components"): a chain has 100 %, a cycle with 10 % chords 82 %; many
#: small SCCs (14 %) or a one-way road grid (21 %) would keep most of the
#: graph and pay a second transpose.  0: never
STRONG_PATH_SHARE = 4
#: where the paths are worth contracting, first ask whether the cycles of
#: each vertex's first out-neighbour make the graph STRONG_MUTUAL_SHARE
#: times smaller (a long cycle with chords, numbered along it); if so the
#: graph is solved as its quotient by them and nothing is contracted.  0: never
STRONG_PATH_PIECES = 1
#: the narrow-frontier hand-over to the host is judged after at least this
#: many GPU passes (launch-bound: a few microseconds each) ...
STRONG_HOST_MIN_PASSES = 64
#: ... and after one pass per this many vertices + edges of the graph (the
#: host's search takes some nanoseconds per vertex and edge) ...
STRONG_HOST_ITEMS = 16384
#: ... and it is taken while fewer vertices per pass than this were settled
#: or reached: about the break-even of a launch-bound pass against the host
STRONG_HOST_RATE = 512
#: a batch of at least this many trim, search or colouring passes that comes
#: again is replayed from a CUDA graph recorded the time before, not
#: launched kernel by kernel from Python (same kernels, same order).  0: never
STRONG_GRAPH_BATCH = 16
#: a CuPy graph of at most this many vertices + stored edges is copied to
#: the host as given and solved there by the CPU's search in one compiled
#: call (graph/_dispatch.py: strong_on_host): the GPU's steps cost tens of
#: launches and host reads (about a millisecond or more) whatever the size,
#: the host's search some nanoseconds a vertex and edge; on the H200 at 10⁵
#: edges (n + m about 2 x 10⁵) the host's route beat the GPU's steps on every
#: family but the meshes stored both ways (within 15 %).  0: never
STRONG_HOST_SMALL = 1 << 18
#: ... and so is one of at most STRONG_HOST_SPARSE vertices + edges with at
#: most STRONG_HOST_SPARSE_DEGREE stored edges a vertex: chains, cycles
#: with chords, one-way road grids -- long diameters, where the GPU's steps
#: cost more than the host's route up to 3 x 10⁵ edges (H200: 1.5-4x)
#: and about as much at 10⁶.  0: never
STRONG_HOST_SPARSE = 1 << 20
STRONG_HOST_SPARSE_DEGREE = 1.5
#: a trim still removing vertices after this many passes (a long chain of
#: layers: a DAG, a one-way grid) finishes in one launch of the peel, a work
#: queue of the vertices whose last in- or out-neighbour left; the passes
#: before it peel the wide first layers (R-MAT, random graphs) at full width
STRONG_PEEL_AFTER = 8
#: blocks of the peel per multiprocessor (a thread a chain of vertices; more
#: threads only wait on the queue: H200, 2-D one-way mesh at 10^7 edges, the
#: call 11.7 ms at 1, 19.2 at 4, 20.7 at 16)
STRONG_PEEL_BLOCKS = 1
#: a forward-backward search still running after this many levels asks
#: whether the pieces joined by edges stored both ways (two-way streets),
#: or else the cycles of each vertex's first out-neighbour, make the graph
#: at least STRONG_MUTUAL_SHARE times smaller; if so the
#: graph is solved as its quotient by them (docs/graph.md: "Strong
#: components").  0 / 0: ask at the first read / never contract
STRONG_MUTUAL_LEVELS = 32
STRONG_MUTUAL_SHARE = 2

# Incremental connectivity (_gpu/incremental.py; docs/graph.md: "Incremental
# connectivity")
#: blocks per multiprocessor of the batch kernel's grid-stride loop over the
#: operations: the graph methods' edge-centric kernels' value, not yet
#: measured against others (incremental_bench.py sweeps it on R-MAT 22;
#: docs/decisions.md: "incremental batches")
GRAPH_INCR_BLOCKS_PER_SM = 32

# ---------------------------------------------------------------------------
# CPU: images and lattices
# ---------------------------------------------------------------------------

# Fewest cells per slab of the parallel plain case (_cpu/image_parallel.py):
# an array of fewer than twice as many is labelled serially whatever
# cpu_threads says.  A slab costs a seam and a share of three parallel
# regions' start; 4096 was the best of 1 to 2**17 on a 16-core host from
# 64**2 to 4096**2 (docs/decisions.md: "cpu slabs").
CPU_SLAB_MIN_CELLS = 1 << 12

# Fewest cells per thread of the other parallel cases (mask, bonds,
# tolerance, axes: _cpu/lattice.py); serially below twice as many.  2**14 was
# the best of 2**10 to 2**18 from 128**2 to 2048**2 on the same host
# (docs/decisions.md: "cpu chunks").
CPU_CHUNK_MIN_CELLS = 1 << 14

# Chunks of rows per thread in those cases: more than one evens out chunks
# of unequal work; each adds a border to unite serially (docs/decisions.md:
# "cpu chunks").
CPU_CHUNKS_PER_THREAD = 4

# First size of the table of provisional labels of the general serial scan
# (_cpu/image.py), in cells per entry and at least: most images need far
# fewer labels than cells, and the table doubles when it fills, so it
# starts small (docs/decisions.md: "cpu provisional labels").
CPU_PROV_TABLE_CELLS_PER_LABEL = 32
CPU_PROV_TABLE_MIN = 1024

# label(..., return_counts=True) on plain images (_cpu/image.py,
# gather_counted): with at most this many labels each label gets four
# counters side by side, cell i adding to counter i % 4, so that a long run
# of one label is four chains of increments through memory, not one.
# Blobs 2048**2: +17..34 % over label with one counter a label, under +10 %
# with four.  Images of more labels (short runs, a larger table) take one
# counter a label (docs/measure.md: "Counts while labelling").
CPU_COUNTS_SPREAD_LABELS = 8192

# Fewest vertices of a graph whose labels the one-call graph path
# (_cpu/graph.py checked_components) takes from _core.int32_array --
# aligned to 2 MiB and asking for huge pages (_cpu/core/strong.hpp's Arena)
# -- not from np.empty, whose fresh arrays below 4 MiB fault in page by
# page: 2 MiB of labels, one huge page; below it the extra call (0.3 us)
# costs more than the faults it saves (docs/decisions.md: "strong
# components: the CPU search compiled").
CPU_GRAPH_MAPPED_LABELS = 1 << 19

# Fewest cells per thread of the per-label tables of meshccl.measure
# (_cpu/core/measure.hpp); an image of fewer than twice as many is measured
# by one thread whatever cpu_threads says.  A thread costs its start and a
# private table to merge; one pass over 2**16 cells takes some 100 us.
CPU_MEASURE_MIN_CELLS = 1 << 16

# ... and, where the slabs of rows do not own their labels (labels in no
# raster order), fewest cells per row of a thread's private table: each
# further thread then adds a table as large as the output, to fault in and
# merge (measure.hpp).  At 16, labels of under 32 cells on average in no
# raster order run on one thread.
CPU_MEASURE_CELLS_PER_ENTRY = 16

# ---------------------------------------------------------------------------
# CPU: graphs
# ---------------------------------------------------------------------------

# The parallel union-find of cpu_threads != 1 (_cpu/core/graph.hpp; docs/graph.md:
# "CPU threads").  The samplers use GRAPH_K_OUT, GRAPH_HB_EDGES and
# GRAPH_BFS_SAMPLE_LEVELS above.
#: chunks of work per thread, for load balance on skewed degrees
GRAPH_CPU_CHUNKS_PER_THREAD = 8
#: vertices (edges of an edge list) sampled to estimate the share of cross edges
GRAPH_CPU_SAMPLE_VERTICES = 1024
#: largest estimated share of cross edges for the 'local' scheme (1.0: always
#: 'local', -1.0: always 'cas'; tests run both schemes on any graph so)
GRAPH_CPU_LOCAL_CROSS = 0.25
#: fewer cross edges than this are united by the calling thread alone
GRAPH_CPU_SERIAL_CROSS = 1 << 16
#: a range's buffer of cross edges holds min(its stored edges,
#: its stored edges // GRAPH_CPU_CROSS_BUFFER_DIV + GRAPH_CPU_CROSS_BUFFER_MIN)
GRAPH_CPU_CROSS_BUFFER_DIV = 4
GRAPH_CPU_CROSS_BUFFER_MIN = 1024
#: graphs with fewer vertices + stored edges run serially: starting the
#: threads and the phases cost more than the whole serial union-find there
GRAPH_CPU_PARALLEL_MIN_WORK = 1 << 16

# ---------------------------------------------------------------------------
# List ranking (meshccl.graph.list_rank; docs/graph.md: "List ranking",
# docs/decisions.md: "list ranking methods")
# ---------------------------------------------------------------------------

#: mean sublist length of 'splitters' on the CPU (1 splitter per this many
#: elements, plus every head): long sublists keep the reduced list small,
#: and a few threads need only a few hundred sublists each for balance
LIST_RANK_CPU_SPACING = 256
#: mean sublist length of 'splitters' on the GPU: thousands of walks in
#: flight hide the latency of each step; the longest sublist (about
#: spacing * ln(n / spacing)) bounds the walk kernel.  H100, 2026-11-27, one
#: random list / lists of ~1000, ms: spacing 16, 32, 64, 128 gave 0.82, 0.92,
#: 1.08, 1.42 at 2**22; 4.27, 4.34, 4.46, 4.59 at 2**24; 19.5, 18.4, 18.4,
#: 18.6 at 2**26 (8: 23.9; 1024: 23.7): 32 is within 12 % of the best at
#: every size
LIST_RANK_GPU_SPACING = 32
#: method='auto' on the GPU: 'wylie' up to this many elements, 'splitters'
#: above (the paper's finding: O(n) work wins on long lists).  H100,
#: 2026-11-27, one list: wylie 0.41 ms vs splitters 0.69 at 2**20, 0.66 vs
#: 0.56 at 2**21, 1.68 vs 0.92 at 2**22, 70.7 vs 18.4 at 2**26
LIST_RANK_GPU_WYLIE_MAX = 1 << 20
#: method='auto' on the CPU with cpu_threads != 1: the sequential walk
#: below this many elements (a parallel region costs more), 'splitters'
#: from it
LIST_RANK_CPU_SPLITTERS_MIN = 1 << 16


# ---------------------------------------------------------------------------
# Dask (meshccl/dask.py)
# ---------------------------------------------------------------------------

#: Children of a node of the tree that merges the chunks' face tables
#: (docs/dask.md, "the graph of tasks").
DASK_FAN_IN = 8

#: How a graph built for a ``distributed`` cluster splits the parts of a
#: chunk's results that other tasks read (docs/dask.md, "Memory of each
#: step"): 'fine', a key for each part (the layers along each axis, each
#: level's counts, the local labels: 15 tasks a chunk in 3-D 'raster'), so
#: that a face pulls only its neighbours' layers along its own axis;
#: 'coarse', one key for the ids with every layer, one for the counts of the
#: levels but the last, the local labels read from the chunk's result (9
#: tasks a chunk, more bytes moved); 'auto': 'fine' for CuPy chunks (2
#: H200s, 1024³ / 2048³: 0.90 / 2.21 s against 1.13 / 2.90 s coarse, whose
#: layers crossed through the hosts), 'coarse' for NumPy chunks (2-process
#: LocalCluster, 128³ in 32³ chunks: 2.4-2.7 s against 3.4-4.7 s fine).
DASK_CLUSTER_KEYS = "auto"

# The constants leave the module's namespace: ``_tuning.NAME`` then reads
# them through __getattr__, which sees this context's overrides.
_DEFAULTS = {k: globals().pop(k) for k in [k for k in globals() if k.isupper()]}
