#!/usr/bin/env bash
# gpu-splits.sh: on a GPU machine, time the CUDA decode kernels at forced split counts
# (KVSCOPE_CUDA_SPLITS) for a set of shapes, to see how the split-KV rule should choose them.
# Prints, per shape, the median time and % of the paired read ceiling at each split count.
#
#   OUT=/some/dir PREBUILT=build-gpu-check/app/kvscope-cli scripts/gpu-splits.sh
set -uo pipefail

cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp}
CLI=${PREBUILT:-build-gpu-check/app/kvscope-cli}
mkdir -p "$OUT/splits"
start=$(date +%s)
say() { printf '== %s (%ss)\n' "$*" "$(($(date +%s) - start))"; }

sweep() { # name, split counts (comma list), then measure arguments
    local name=$1 counts=$2
    shift 2
    say "$name"
    for n in ${counts//,/ } default; do
        local env=()
        [[ $n == default ]] || env=(KVSCOPE_CUDA_SPLITS=$n)
        env "${env[@]}" timeout 60 "$CLI" measure --backend cuda "$@" \
            --json "$OUT/splits/$name-$n.json" >"$OUT/splits/$name-$n.txt" 2>&1 ||
            echo "($name at $n exited $?)"
    done
}
sweep llama70b-b16 1,2,3,4,6,8,12,16,32,64 --model llama-3-70b --context 8192 --batch 16
sweep llama8b-b1 8,16,32,64,128 --model llama-3-8b --context 32768 --batch 1
sweep llama8b-b4 2,4,8,16,32 --model llama-3-8b --context 16384 --batch 4
sweep dsv3-tp8-b64 1,2,4,8 --model deepseek-v3 --tp 8 --context 16384 --batch 64
sweep dsv3-tp1-b16 1,2,4,8,16 --model deepseek-v3 --tp 1 --context 8192 --batch 16

if command -v ncu >/dev/null 2>&1; then
    say "ncu: the g 64 kernel (Llama-3-70B MQA, B 16, S 8192)"
    timeout 90 ncu --clock-control none --kernel-name-base demangled -k 'regex:gqaDecodeKernel<128, 4' \
        --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
        --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis \
        "$CLI" measure --backend cuda --model llama-3-70b --context 8192 --batch 16 >"$OUT/ncu.txt" 2>&1 ||
        echo "(ncu exited $?)"
    grep -E "Duration|Throughput|Warp Cycles Per Issued|Achieved Occupancy|Theoretical Occupancy|Block Limit|Stall|Registers Per|Shared Memory Config|Issued Ipc|Busy" "$OUT/ncu.txt" | head -40
fi

say "table"
python3 - "$OUT/splits" <<'PY'
import collections, glob, json, os, sys
d = sys.argv[1]
table = collections.defaultdict(dict)  # (run, variant) -> {splits label: (us, %read, splits)}
for path in glob.glob(os.path.join(d, "*.json")):
    run, label = os.path.basename(path)[:-5].rsplit("-", 1)
    try:
        doc = json.load(open(path))
    except Exception:
        continue
    for p in doc.get("points", []):
        pl = p.get("placement", {})
        table[(run, p["variant"])][label] = (p["median_s"] * 1e6, 100 * pl.get("fraction_of_read", 0),
                                              p["splits"])
for (run, variant), cells in sorted(table.items()):
    keys = sorted((k for k in cells if k != "default"), key=int)
    best = min(keys, key=lambda k: cells[k][0]) if keys else None
    row = " ".join("%s:%.0f/%.0f%%" % (k, cells[k][0], cells[k][1]) for k in keys)
    dflt = cells.get("default")
    print("%-13s %-7s default %s | best %s | %s" % (
        run, variant, "%d:%.0fus/%.0f%%" % (dflt[2], dflt[0], dflt[1]) if dflt else "-",
        "%s:%.0fus" % (best, cells[best][0]) if best else "-", row))
PY
tar -czf "$OUT/splits.tgz" -C "$OUT" splits && rm -rf "$OUT/splits"
say "done"
