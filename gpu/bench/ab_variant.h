// One variant of the CPU kernels for kernel_ab.cpp: scripts/kernel-ab.sh compiles the kernel
// sources of two trees with the namespace `cpu` renamed (cpuA, cpuB), and this adapter once per
// tree, so both variants live in one process and can be timed in alternation.
#pragma once

#include "gpu/backend.h"

#include <cstdint>

struct AbShape {
    int rows = 8; // query rows per KV stream (g; MLA: heads)
    kvscope::gpu::KvDtype dtype = kvscope::gpu::KvDtype::Bf16;
    bool mla = false; // absorbed MLA (576 / 512), else GQA d 128
    int keyDim = 128, valueDim = 128;
    std::int64_t rowBytes = 256; // bytes per K (and V) token row
    bool pairedValuesB = false;  // variant B reads V in token pairs (SegmentBf16::valuesPaired)
    bool gatheredA = false, gatheredB = false; // tiles gathered from sub-streams (row kernels)
};

/// Per-thread scratch of one variant, opaque to the harness.
struct AbScratch;
AbScratch* abNewScratchA();
AbScratch* abNewScratchB();
void abFreeScratchA(AbScratch*);
void abFreeScratchB(AbScratch*);

/// Attention of `rows` bf16 query rows over S tokens of K (and V) rows, as the CPU engine runs a
/// work item: bf16 / fp8 KV on the AMX kernel where it serves the shape, else the vdpbf16ps
/// kernel; fp16 / fp32 KV on the portable kernel at this CPU's widest vector (its query rows
/// the bf16 ones in fp32).
void abRunA(const AbShape&, const std::uint16_t* q, const std::uint8_t* k, const std::uint8_t* v,
            std::int64_t tokens, float* out, float* lse, AbScratch*);
void abRunB(const AbShape&, const std::uint16_t* q, const std::uint8_t* k, const std::uint8_t* v,
            std::int64_t tokens, float* out, float* lse, AbScratch*);
