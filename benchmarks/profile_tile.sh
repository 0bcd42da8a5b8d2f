#!/usr/bin/env bash
# Nsight Compute on the plain chains' kernels (a maintainer's diagnostic):
#   bash benchmarks/profile_tile.sh "perc 8192" [kernel regex]
only=${1:-perc 8192}
kern=${2:-runs2d|runs3d|cells3d}
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
ncu --target-processes all -k "regex:$kern" -c 14 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy \
    --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis \
    python3 benchmarks/phases.py --only "$only" --reps 0 --no-general 2>&1 | tee "$OUT/ncu-${only// /_}.log" \
  | grep -E "meshccl_|Duration|Throughput|Executed Ipc|Issue Slots|Achieved Occupancy|Registers Per|Executed Instructions  |Stall|Warp Cycles Per Issued|No Eligible|Theoretical Occ|L1/TEX Hit|L2 Hit" | head -150
