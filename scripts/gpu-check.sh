#!/usr/bin/env bash
# gpu-check.sh: on a machine with an NVIDIA GPU, CUDA and CMake (no Qt, no network): take
# kvscope-cli with the CUDA backend (a binary built elsewhere when it runs here, else built
# here), run the reference self-check of every CUDA kernel, then a benchmark sweep over the
# measured shapes, and print a short table last.
#
#   OUT=/some/dir scripts/gpu-check.sh      # JSON and logs go to $OUT (default /tmp)
#   PREBUILT=build-gpu-check/app/kvscope-cli scripts/gpu-check.sh   # use that binary if it runs
#
# nlohmann/json: without the system package the build falls back to .deps/include/nlohmann
# (copy /usr/include/nlohmann there and carry it); CLI11 likewise to .deps/include/CLI
# (copy /usr/include/CLI). Sized for a 15-minute device lease: about 4 minutes on an H200
# with a prebuilt binary; every step has its own timeout, and the summary is printed anyway.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp}
BUILD=${BUILD:-build-gpu-device}
PREBUILT=${PREBUILT:-build-gpu-check/app/kvscope-cli}
mkdir -p "$OUT"
start=$(date +%s)
say() { printf '== %s (%ss)\n' "$*" "$(($(date +%s) - start))"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "error: no NVIDIA GPU visible (nvidia-smi -L failed)" >&2
    exit 2
fi
nvidia-smi -L
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu \
    --format=csv || true
lscpu | grep -E "Model name|^CPU\(s\)" || true

CLI=""
if [[ -x "$PREBUILT" ]] && "$PREBUILT" --version >/dev/null 2>&1; then
    CLI="$PREBUILT"
    say "using the prebuilt $CLI"
    command -v cuobjdump >/dev/null 2>&1 && cuobjdump --list-elf "$CLI" | head -5 || true
else
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
fi

say "self-check (every CUDA kernel against the double reference)"
selfrc=0
timeout 150 "$CLI" measure --backend cuda --self-check >"$OUT/self-check.txt" 2>&1 || selfrc=$?
grep -E "FAIL|self-check:|error" "$OUT/self-check.txt" | head -20 || true
# A failing shape is not timed (measure checks every point first), so the sweep still runs.
[[ $selfrc -eq 0 ]] || echo "self-check exited $selfrc"

run() { # name, then measure arguments
    local name=$1
    shift
    say "measure $name"
    local rc=0
    timeout 75 "$CLI" measure --backend cuda "$@" --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || { echo "($name exited $rc)"; tail -3 "$OUT/$name.txt"; }
}
# GQA family at S >= 8192 with enough blocks to fill the GPU, bf16 and fp8 KV.
run llama70b-bf16 --model llama-3-70b --context 8192 --batch 16 --kv-dtype bf16
run llama70b-fp8 --model llama-3-70b --context 8192 --batch 16 --kv-dtype fp8_e4m3
run llama8b-fp16 --model llama-3-8b --context 16384 --batch 8 --kv-dtype fp16
# Few blocks (B 1): the split-KV path at long context.
run llama8b-b1-bf16 --model llama-3-8b --context 32768 --batch 1 --kv-dtype bf16
# MLA: 16 heads per rank (DeepSeek-V3 at TP 8) and 128 heads (TP 1, compute-shaped).
run dsv3-tp8 --model deepseek-v3 --tp 8 --context 16384 --batch 64
run dsv3-tp1 --model deepseek-v3 --tp 1 --context 8192 --batch 16
say "whole decode step"
timeout 60 "$CLI" measure --backend cuda --step --model llama-3-8b --batch 1,16,64 >"$OUT/step.txt" 2>&1 ||
    echo "(step exited $?)"

if command -v compute-sanitizer >/dev/null 2>&1; then
    say "compute-sanitizer memcheck (small shapes)"
    timeout 90 compute-sanitizer --tool memcheck --print-limit 5 "$CLI" measure --backend cuda \
        --self-check --model deepseek-v2-lite --context 700 --batch 3 >"$OUT/memcheck.txt" 2>&1 ||
        echo "(memcheck exited $?)"
    grep -E "ERROR SUMMARY|Invalid|self-check:" "$OUT/memcheck.txt" | head -8 || true
fi

say "summary"
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
rows, fam = [], None
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    try:
        doc = json.load(open(path))
    except Exception:
        continue
    c = doc.get("ceilings", {})
    if fam is None and c.get("read_family"):
        fam = c
    for p in doc.get("points", []):
        pl = p.get("placement", {})
        rows.append((os.path.basename(path)[:-5], p["variant"], p["q_heads"], p.get("kv_heads", 0),
                     p["context"], p["batch"], p["kv_dtype"], p["kernel"][5:], p["splits"],
                     p["bytes_per_s"] / 1e9, pl.get("read_ceiling_bytes_per_s", 0) / 1e9,
                     100 * pl.get("fraction_of_read", 0), 100 * pl.get("fraction_of_roof", 0),
                     pl.get("bound", "?")[:3], "ABOVE" if pl.get("above_ceiling") else
                     ("unstable" if p.get("unstable") else "")))
if fam:
    print("read family (GB/s): " + ", ".join("%s %.0f" % (f["kernel"], f["bytes_per_s"] / 1e9)
                                             for f in fam["read_family"]))
    print("L2-resident read %.0f GB/s; peaks %s" % (fam.get("l2_read_bytes_per_s", 0) / 1e9,
          ", ".join("%s %.0f TFLOP/s" % (k, v / 1e12) for k, v in sorted(fam["peak_flop_per_s"].items()))))
print("%-15s %-7s %4s %4s %6s %3s %-8s %-17s %3s %6s %6s %5s %5s %-4s %s" % (
    "run", "variant", "h", "hkv", "S", "B", "dtype", "kernel", "spl", "GB/s", "ceil", "%read",
    "%roof", "bnd", "flag"))
for r in rows:
    print("%-15s %-7s %4d %4d %6d %3d %-8s %-17s %3d %6.0f %6.0f %5.1f %5.1f %-4s %s" % r)
print("points: %d, above their ceiling: %d" % (len(rows), sum(1 for r in rows if r[-1] == "ABOVE")))
PY
grep -vE "^(backend|$)" "$OUT/step.txt" | head -12 || true
# At most 8 files come back from a lease: keep the logs and JSON in one archive.
(cd "$OUT" && tar -czf results.tgz --exclude results.tgz --exclude '*.log' -- * && find . -maxdepth 1 \( -name '*.json' -o -name '*.txt' \) -delete)
say "done"
