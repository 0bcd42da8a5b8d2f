#!/usr/bin/env bash
# Nsight Compute with source counters: instructions executed and stall
# samples per SASS instruction of the plain chains' kernels (a maintainer's
# diagnostic: which part of a kernel its time goes to).
#   bash benchmarks/profile_source.sh "potts4 4096" "runs2d_tile|runs2d_border" [count]
only=${1:-potts4 4096}
kern=${2:-runs2d_tile}
count=${3:-4}
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
tag=$(echo "$only" | tr -c 'A-Za-z0-9' '_')
ncu --target-processes all -k "regex:$kern" -c "$count" -f -o "$OUT/src_$tag" \
    --section SourceCounters --section InstructionStats --section WarpStateStats \
    --section SpeedOfLight --section LaunchStats --section Occupancy \
    python3 benchmarks/phases.py --only "$only" --reps 0 --no-general > "$OUT/src_${tag}_run.log" 2>&1
ncu -i "$OUT/src_$tag.ncu-rep" --page details > "$OUT/src_${tag}_details.txt" 2>&1
ncu -i "$OUT/src_$tag.ncu-rep" --page source --csv --print-source sass > "$OUT/src_${tag}_sass.csv" 2>&1 \
  || echo "no source page" >> "$OUT/src_${tag}_details.txt"
gzip -f "$OUT/src_${tag}_sass.csv"
rm -f "$OUT/src_$tag.ncu-rep"
grep -E "meshccl_|Duration|Executed Ipc A|Warp Cycles Per Issued|Executed Instructions  " "$OUT/src_${tag}_details.txt" | head -40
