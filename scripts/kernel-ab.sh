#!/usr/bin/env bash
# Paired A/B timing of the CPU attention kernels (bf16 / fp8 KV: AMX and vdpbf16ps; fp16 / fp32:
# the portable kernel): variant A from a git revision, B from
# the working tree, both in one process (gpu/bench/kernel_ab.cpp), timed in alternation.
#   scripts/kernel-ab.sh [REV] [-- kernel_ab options]     REV defaults to HEAD
#   scripts/kernel-ab.sh HEAD~1 -- --rows 32 --kv fp8 --rounds 31
# The kernel sources of each tree are compiled with the namespace `cpu` renamed (cpuA, cpuB) and
# the flags CMake gives them (-O3 -ffp-contract=fast, no -march: the kernels pick their
# instruction sets at run time). Needs g++ and libcli11-dev (scripts/kvscope.sh setup).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rev=HEAD
if (($#)) && [ "$1" != "--" ]; then
    rev="$1"
    shift
fi
[ "${1:-}" = "--" ] && shift

out="$here/build/kernel-ab"
treeA="$out/tree-a"
rm -rf "$treeA"
mkdir -p "$treeA" "$out/obj"
git -C "$here" archive "$rev" gpu | tar -x -C "$treeA"

flags=(-std=c++20 -O3 -ffp-contract=fast -Wall -Wextra -Wno-psabi -I"$here/gpu/bench")
pids=()
for v in A B; do
    tree="$treeA"
    [ "$v" = B ] && tree="$here"
    for src in amx_kernel bf16_kernel portable_kernel decode; do
        g++ "${flags[@]}" -I"$tree" -Dcpu="cpu$v" -c "$tree/gpu/cpu/$src.cpp" \
            -o "$out/obj/${src}_$v.o" &
        pids+=($!)
    done
    g++ "${flags[@]}" -I"$tree" -Dcpu="cpu$v" -DAB_VARIANT="$v" -c "$here/gpu/bench/ab_variant.cpp" \
        -o "$out/obj/ab_variant_$v.o" &
    pids+=($!)
done
g++ "${flags[@]}" -O2 -I"$here" -c "$here/gpu/bench/kernel_ab.cpp" -o "$out/obj/kernel_ab.o" &
pids+=($!)
for src in inputs decode; do # the engine's input generator, for both variants' inputs
    g++ "${flags[@]}" -I"$here" -c "$here/gpu/cpu/$src.cpp" -o "$out/obj/$src.o" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
g++ -pthread "$out"/obj/*.o -o "$out/kernel_ab"
echo "A: $(git -C "$here" rev-parse --short "$rev"), B: working tree"
exec "$out/kernel_ab" "$@"
