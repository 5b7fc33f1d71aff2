#!/usr/bin/env bash
# gpu-check.sh: on a machine with an NVIDIA GPU, CUDA and CMake (no Qt, no network): build
# kvscope-cli with the CUDA backend, run the reference self-check of every CUDA kernel, then a
# benchmark sweep over the measured shapes, and print a short table last.
#
#   OUT=/some/dir scripts/gpu-check.sh      # JSON and logs go to $OUT (default /tmp)
#
# nlohmann/json: without the system package the build falls back to .deps/include/nlohmann
# (copy /usr/include/nlohmann there and carry it); CLI11 likewise to .deps/include/CLI
# (copy /usr/include/CLI). Must finish in under 8 minutes on an H200.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp}
BUILD=${BUILD:-build-gpu-check}
mkdir -p "$OUT"
start=$(date +%s)
say() { printf '== %s (%ss)\n' "$*" "$(($(date +%s) - start))"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "error: no NVIDIA GPU visible (nvidia-smi -L failed)" >&2
    exit 2
fi
nvidia-smi -L
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv || true

if [[ ! -f /usr/include/nlohmann/json.hpp && ! -f .deps/include/nlohmann/json.hpp ]]; then
    echo "error: nlohmann/json.hpp not found: copy /usr/include/nlohmann to .deps/include/nlohmann" >&2
    exit 2
fi
if [[ ! -f /usr/include/CLI/CLI.hpp && ! -f .deps/include/CLI/CLI.hpp ]]; then
    echo "error: CLI/CLI.hpp not found: copy /usr/include/CLI to .deps/include/CLI" >&2
    exit 2
fi

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
say "configure"
cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DKVSCOPE_BUILD_GUI=OFF \
    -DKVSCOPE_BUILD_TESTS=OFF -DKVSCOPE_BUILD_FUZZER=OFF -DKVSCOPE_CUDA=ON >"$OUT/configure.log" 2>&1 ||
    { tail -30 "$OUT/configure.log"; exit 1; }
say "build"
cmake --build "$BUILD" --target kvscope-cli -j "$(nproc)" >"$OUT/build.log" 2>&1 ||
    { tail -40 "$OUT/build.log"; exit 1; }
grep -E "spill|warning" "$OUT/build.log" | head -20 || true
CLI="$BUILD/app/kvscope-cli"

say "self-check (every CUDA kernel against the double reference)"
selfrc=0
timeout 300 "$CLI" measure --backend cuda --self-check >"$OUT/self-check.txt" 2>&1 || selfrc=$?
grep -E "FAIL|self-check:" "$OUT/self-check.txt" || true
if [[ $selfrc -ne 0 ]]; then
    tail -5 "$OUT/self-check.txt"
    echo "self-check failed (exit $selfrc): not timing wrong kernels" >&2
    exit 1
fi

run() { # name, then measure arguments
    local name=$1
    shift
    say "measure $name"
    local rc=0
    timeout 240 "$CLI" measure --backend cuda "$@" --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 || rc=$?
    tail -n +4 "$OUT/$name.txt" | head -20
    [[ $rc -eq 0 ]] || echo "($name exited $rc)"
}
# GQA family, bf16, S >= 8192, enough blocks to fill the GPU (target >= 90% of the read ceiling).
run llama70b-variants-bf16 --model llama-3-70b --context 8192 --batch 16 --kv-dtype bf16
run llama8b-context-bf16 --model llama-3-8b --sweep context --context 32768 --batch 32 --kv-dtype bf16
run llama70b-variants-fp8 --model llama-3-70b --context 8192 --batch 16 --kv-dtype fp8_e4m3
# MLA, 16 heads per rank (DeepSeek-V3 at TP=8; target >= 85%) and 128 heads (TP=1; report).
run dsv3-tp8-mla --model deepseek-v3 --tp 8 --sweep context --context 16384 --batch 64
run dsv3-tp1-mla --model deepseek-v3 --tp 1 --sweep context --context 8192 --batch 16

say "summary"
if command -v python3 >/dev/null 2>&1; then
    python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    try:
        doc = json.load(open(path))
    except Exception:
        continue
    if "points" not in doc:
        continue
    bw = doc["ceilings"]["read_bytes_per_s"]
    peaks = doc["ceilings"]["peak_flop_per_s"]
    for p in doc["points"]:
        peak = peaks.get(p["kv_dtype"], 0)
        roof = min(peak, p["intensity_flop_per_byte"] * bw) if peak else p["intensity_flop_per_byte"] * bw
        fr, fo = p["bytes_per_s"] / bw, p["flop_per_s"] / roof
        verdict, target = "-", ""
        if p["attention"] == "gqa" and p["kv_dtype"] == "bf16" and p["context"] >= 8192:
            target, verdict = ">=90% read", "PASS" if fr >= 0.90 else "FAIL"
        elif p["attention"] == "mla" and p["q_heads"] <= 16 and p["context"] >= 8192:
            target, verdict = ">=85% read", "PASS" if fr >= 0.85 else "FAIL"
        elif p["attention"] == "mla" and p["q_heads"] >= 128:
            target, verdict = "report %roof", "%.0f%%" % (100 * fo)
        rows.append((os.path.basename(path)[:-5], p["variant"], p["q_heads"], p["kv_heads"], p["context"],
                     p["batch"], p["kv_dtype"], p["bytes_per_s"] / 1e9, 100 * fr, 100 * fo, target, verdict))
    print("ceilings (%s): read %.0f GB/s, peak %s" % (doc["device"], bw / 1e9,
          ", ".join("%s %.0f TFLOP/s" % (k, v / 1e12) for k, v in sorted(peaks.items()))))
print("%-22s %-7s %4s %4s %6s %4s %-8s %7s %6s %6s  %-12s %s" % (
    "run", "variant", "h", "h_kv", "S", "B", "dtype", "GB/s", "%read", "%roof", "target", "verdict"))
for r in rows:
    print("%-22s %-7s %4d %4d %6d %4d %-8s %7.0f %5.0f%% %5.0f%%  %-12s %s" % r)
fails = sum(1 for r in rows if r[-1] == "FAIL")
print("targets: %d PASS, %d FAIL" % (sum(1 for r in rows if r[-1] == "PASS"), fails))
PY
else
    grep -hE "^(MHA|GQA|MQA|MLA)" "$OUT"/*.txt || true
fi
say "done"
