// The portable decode-attention kernel: fp16/fp32 KV, and every KV dtype on CPUs without
// AVX512_BF16. fp32 arithmetic on GCC vector types of W floats, one instantiation per vector
// width (16: AVX-512, 8: AVX2 + FMA, 4: anything), picked at run time. The body is
// portable_body.h, built once per width's instruction set by portable_kernel.cpp.
#pragma once

#include "gpu/backend.h"
#include "gpu/cpu/buffer.h"

#include <cstdint>
#include <vector>

namespace kvscope::gpu::detail::cpu {

constexpr std::int64_t kTileTokens = 32;

/// Online-softmax attention of `rows` query rows (each keyDim wide, pre-scaled by
/// log2(e)·scale) over tokens [t0, t1) of one KV stream. Values are the first valueDim
/// elements of the value rows (MLA: of the key rows themselves). Writes the normalised output
/// and the per-row log2-sum-exp.
struct Segment {
    const float* q; // [rows][keyDim]
    std::int64_t rows, keyDim, valueDim;
    const std::uint8_t* keys; // token t at keys + t * keyRowBytes
    const std::uint8_t* values;
    std::int64_t keyRowBytes, valueRowBytes;
    std::int64_t t0, t1;
    KvDtype dtype;
    float* out; // [rows][valueDim], normalised
    float* lse; // [rows], log2 domain
    // Full tiles gathered from 8 sub-streams of the segment (row_map.h's gatherPlan) rather than
    // contiguous; the engine times both (CpuEngine::choosePlan).
    bool gathered = false;
};

/// 64-byte aligned, so no vector load or store of a tile row splits over two cache lines.
struct Scratch {
    AlignedVector<float> k, v;  // the tile's K and V rows in fp32
    AlignedVector<float> acc;   // [rows][valueDim]
    AlignedVector<float> m, l;  // running max and sum per row
    AlignedVector<float> lv;    // narrow layout: the sum per row in W lanes, [rows][W]
    AlignedVector<float> qt;    // wide layout: [keyDim][rows padded to the width]
    AlignedVector<float> s, p;  // scores, probabilities: [rows][tile], wide [tile][rows]
    AlignedVector<float> alpha; // [rows] rescale of this tile
};

using PortableKernel = void (*)(const Segment&, Scratch&);

/// The vector width of the portable kernel on this CPU: 16 with AVX-512, 8 with AVX2 and FMA,
/// else 4. KVSCOPE_CPU_VECTOR=4|8|16 narrows it (tests run every width the CPU can).
int portableWidth();

/// The first fp8 e4m3 code the width's vector decoder converts to other bits than the scalar
/// reference (num::fp8e4m3ToFloat), -1 if none, -2 if this CPU or build has no such width.
int portableFp8Mismatch(int width);

/// The kernel for a width and key/value widths (GQA 64/128/256, MLA 576/512), nullptr else.
PortableKernel portableKernel(int width, std::int64_t keyDim, std::int64_t valueDim);

} // namespace kvscope::gpu::detail::cpu
