// One variant of the bf16 / fp8 CPU kernels for kernel_ab.cpp: scripts/kernel-ab.sh compiles
// the kernel sources of two trees with the namespace `cpu` renamed (cpuA, cpuB), and this
// adapter once per tree, so both variants live in one process and can be timed in alternation.
#pragma once

#include <cstdint>

struct AbShape {
    int rows = 8;     // query rows per KV stream (g; MLA: heads)
    bool fp8 = false; // KV dtype: fp8 e4m3, else bf16
    bool mla = false; // absorbed MLA (576 / 512), else GQA d 128
    int keyDim = 128, valueDim = 128;
    std::int64_t rowBytes = 256; // bytes per K (and V) token row
};

/// Per-thread scratch of one variant, opaque to the harness.
struct AbScratch;
AbScratch* abNewScratchA();
AbScratch* abNewScratchB();
void abFreeScratchA(AbScratch*);
void abFreeScratchB(AbScratch*);

/// Attention of `rows` bf16 query rows over S tokens of K (and V) rows, as the CPU engine runs a
/// work item: the AMX kernel where it serves the shape, else the vdpbf16ps kernel.
void abRunA(const AbShape&, const std::uint16_t* q, const std::uint8_t* k, const std::uint8_t* v,
            std::int64_t tokens, float* out, float* lse, AbScratch*);
void abRunB(const AbShape&, const std::uint16_t* q, const std::uint8_t* k, const std::uint8_t* v,
            std::int64_t tokens, float* out, float* lse, AbScratch*);
