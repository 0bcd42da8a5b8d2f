#!/usr/bin/env bash
# The one device script: install meshccl without network, run the GPU test
# suite and the benchmark, and leave logs under $OUT.
#
#   bash benchmarks/gpu_check.sh [tests] [soak] [bench] [shapes] [lattice] [memory] [compare] [measure] [quick]
#                                [smoke] [phases] [gap] [hawick] [graph]  (default: tests soak bench)
#   shapes, lattice: bench.py --sets shapes / --sets lattice (issue 45), into $OUT/bench-<set>.*
#   memory: bench.py --sets memory (issue 56: peak device memory of 1024^3 percolation c1, c3 and
#   16384^2 c2, every GPU tool) into $OUT/bench-memory.*, the memory table printed at the end
#   (MEM_ARGS: more bench.py arguments, e.g. --cases percolation-16384^2-c2)
#   sim, scc, incremental, dask, listrank: sim_bench.py, scc_bench.py, incremental_bench.py,
#   dask_bench.py, list_rank_bench.py into $OUT/<step>/ (arguments: SIM_ARGS, SCC_ARGS,
#   INCR_ARGS, DASK_ARGS, LR_ARGS)
#   dask-ooc, dask-mgpu: dask_out_of_core.py (OOC_ARGS; --gpu for the GPU), dask_multi_gpu.py
#   (MGPU_ARGS; needs 2 GPUs for the speed-up) into $OUT/dask-ooc/, $OUT/dask-mgpu/
#   TESTS="tests/test_methods.py ..."  limits the tests step (default: tests)
#   CAP=60                             seconds per call before hawick stops a method
#   SOAK_SECONDS=120 SOAK_SEED=<date>  the randomized run against references (tests/soak.py)
#   MEASURE_ARGS="--quick"               more measure_bench.py arguments
#   GAP_CASES="blobs,spiral"           cases for the gap step (floor_gap.py, needs ncu)
#   PHASES_ARGS="--only blobs"        arguments for benchmarks/phases.py
#   BEFORE=baseline ROUNDS=3           compare: the tree to compare the working tree with
#                                      (e.g. git archive <commit> meshccl kernels | tar -x -C baseline)
#   GPROFILE_ARGS, GNCU_ARGS, GNCU_KERNEL  graph_profile.py arguments; the kernel gncu profiles
#
# Peers missing on the GPU machine travel as wheels in .whl/ (carry ".whl";
# see ../shared/tools/fetch-peer-wheels.sh) and are unpacked to /tmp/site.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
steps=${*:-tests soak bench}
status=0

{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv; } > "$OUT/machine.txt" 2>&1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl > "$OUT/wheels.log" 2>&1 && export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
if ! python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.log" 2>&1; then
  echo "editable install failed (see install.log); using PYTHONPATH" | tee -a "$OUT/install.log"
  export PYTHONPATH=$PWD:${PYTHONPATH:-}
fi
python3 -c "import meshccl, cupy; print('meshccl', meshccl.__file__, 'cupy', cupy.__version__, 'gpu', meshccl.gpu_available())" | tee -a "$OUT/machine.txt"

for step in $steps; do
  case $step in
    tests)
      python3 -m pytest ${TESTS:-tests} -q -x -p no:cacheprovider -rs --durations=15 2>&1 | tee "$OUT/tests.log" | tail -45
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    soak)
      python3 tests/soak.py --backend gpu --seconds "${SOAK_SECONDS:-120}" --slow 30 \
        --seed "${SOAK_SEED:-$(date -u +%Y%m%d%H)}" --out "$OUT/soak" 2>&1 | tee "$OUT/soak.log" | tail -12
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    bench)
      python3 benchmarks/bench.py --out "$OUT" 2>&1 | tee "$OUT/bench.log" | tail -40
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    shapes|lattice)
      python3 benchmarks/bench.py --sets "$step" --out "$OUT" > "$OUT/bench-$step.stdout" 2> "$OUT/bench-$step.log" \
        || status=1
      tail -4 "$OUT/bench-$step.log"
      # the timing table (the whole report: bench-$step.md)
      awk '/^\| case /{p=1} p&&/^$/{exit} p' "$OUT/bench-$step.md" 2>/dev/null ;;
    memory)
      python3 benchmarks/bench.py --sets memory --out "$OUT" ${MEM_ARGS:-} > "$OUT/bench-memory.stdout" \
        2> "$OUT/bench-memory.log" || status=1
      tail -4 "$OUT/bench-memory.log"
      # the memory section (the whole report: bench-memory.md)
      awk '/^## Peak device memory per call/{p=1; print; next} p&&/^## /{exit} p' "$OUT/bench-memory.md" 2>/dev/null ;;
    compare)
      # (the editable install's import hook would win over the trees' PYTHONPATH)
      python3 -m pip uninstall -q -y meshccl > /dev/null 2>&1
      python3 benchmarks/compare_trees.py --tree "before=${BEFORE:-baseline}" --tree after=. \
        --rounds "${ROUNDS:-3}" --out "$OUT/compare" 2>&1 | tee "$OUT/compare.log" | tail -24
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    measure)
      python3 benchmarks/measure_bench.py --out "$OUT/measure" ${MEASURE_ARGS:-} > "$OUT/measure.log" 2>&1 \
        || { status=1; tail -20 "$OUT/measure.log"; }
      cat "$OUT"/measure/*.md 2>/dev/null ;;
    quick)
      python3 benchmarks/bench.py --quick --out "$OUT" 2>&1 | tee "$OUT/bench.log" | tail -40
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    phases)
      python3 benchmarks/phases.py ${PHASES_ARGS:-} 2>&1 | tee "$OUT/phases.log" ;;
    gap)
      python3 benchmarks/floor_gap.py all --out "$OUT/gap" --cases "${GAP_CASES:-}" 2>&1 | tee "$OUT/gap.log" | tail -40
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    profile)
      bash benchmarks/profile_tile.sh "${PROFILE_CASE:-perc 8192}" 2>&1 | tail -150 ;;
    hawick)
      for exp in spiral cahn-hilliard; do
        python3 examples/hawick_experiments.py $exp --backends gpu --cap "${CAP:-60}" \
          --out "$OUT/hawick" 2>&1 | tee "$OUT/hawick-$exp.log" | tail -14
        [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      done ;;
    gprofile)
      python3 benchmarks/graph_profile.py ${GPROFILE_ARGS:-} 2>&1 | tee "$OUT/graph_profile.log" ;;
    gncu)
      ncu --kernel-name "regex:${GNCU_KERNEL:-meshccl_graph_kout}" --launch-skip 1 --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
        python3 benchmarks/graph_profile.py --reps 1 ${GNCU_ARGS:---only Kron --methods kout} \
        > "$OUT/graph_ncu.log" 2>&1; tail -80 "$OUT/graph_ncu.log" ;;
    graph)
      python3 benchmarks/graph_bench.py --gpu --out "$OUT/graph" 2>&1 | tee "$OUT/graph.log" | tail -40
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    sim)
      python3 benchmarks/sim_bench.py --out "$OUT/sim" ${SIM_ARGS:-} 2>&1 | tee "$OUT/sim.log" | tail -40
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    scc)
      python3 benchmarks/scc_bench.py --gpu --out "$OUT/scc" ${SCC_ARGS:-} 2>&1 | tee "$OUT/scc.log" | tail -30
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    incremental)
      python3 benchmarks/incremental_bench.py --out "$OUT/incremental" ${INCR_ARGS:-} 2>&1 \
        | tee "$OUT/incremental.log" | tail -30
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    dask)
      python3 benchmarks/dask_bench.py --out "$OUT/dask" ${DASK_ARGS:-} 2>&1 | tee "$OUT/dask.log" | tail -30
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    dask-ooc)
      python3 benchmarks/dask_out_of_core.py --out "$OUT/dask-ooc" ${OOC_ARGS:---budget 2GiB --factor 3 --modes low,default} \
        2>&1 | tee "$OUT/dask-ooc.log" | grep -v -i warn | tail -20
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    dask-mgpu)
      python3 benchmarks/dask_multi_gpu.py --out "$OUT/dask-mgpu" ${MGPU_ARGS:-} 2>&1 | tee "$OUT/dask-mgpu.log" \
        | grep -v -i warn | tail -40
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    listrank)
      python3 benchmarks/list_rank_bench.py --gpu --out "$OUT/listrank" ${LR_ARGS:---max-log2 26 --seq-max-log2 24 --reps 3} \
        2>&1 | tee "$OUT/listrank.log" | tail -30
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    smoke)
      python3 - <<'PY' 2>&1 | tee "$OUT/smoke.log"
# Quick side-by-side timing of meshccl and cupyx on a few large cases (CUDA events).
import cupy, numpy as np, meshccl
from cupyx.scipy import ndimage as cndi
from scipy import ndimage
from meshccl import patterns as P
def t(f, reps=20):
    f(); cupy.cuda.Device().synchronize()
    s, e = cupy.cuda.Event(), cupy.cuda.Event(); ts = []
    for _ in range(reps):
        s.record(); f(); e.record(); e.synchronize(); ts.append(cupy.cuda.get_elapsed_time(s, e))
    return float(np.median(ts))
cases = [("spiral4096", P.spiral(4096, xp=cupy)), ("blobs4096", P.blobs((4096, 4096), xp=cupy)),
         ("perc8192", P.percolation((8192, 8192), 0.5927, xp=cupy)), ("blobs512^3", P.blobs((512,) * 3, xp=cupy)),
         ("perc512^3", P.percolation((512,) * 3, 0.3116, xp=cupy))]
for name, a in cases:
    for c in (1, a.ndim):
        st = ndimage.generate_binary_structure(a.ndim, c)
        m, nm = meshccl.label(a, connectivity=c, return_num=True)
        x, nx = cndi.label(a, structure=st)
        ok = nm == nx
        print(f"{name:12s} c={c} meshccl {t(lambda: meshccl.label(a, connectivity=c)):8.3f} ms  "
              f"cupyx {t(lambda: cndi.label(a, structure=st)):8.3f} ms  n={nm} {'ok' if ok else 'COUNT MISMATCH %d' % nx}")
PY
      ;;
  esac
done
exit $status
