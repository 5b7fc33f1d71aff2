// The adapter of one kernel variant (see ab_variant.h): built with -Dcpu=cpuA -DAB_VARIANT=A or
// -Dcpu=cpuB -DAB_VARIANT=B against that variant's tree.
#include "ab_variant.h"

#include "gpu/cpu/amx_kernel.h"
#include "gpu/cpu/portable_kernel.h"
#include "gpu/numerics.h"

#include <cmath>
#include <string_view>
#include <vector>

#define AB_CAT2(a, b) a##b
#define AB_CAT(a, b) AB_CAT2(a, b)

struct AbScratch {
    kvscope::gpu::detail::cpu::ScratchAmx amx;
    kvscope::gpu::detail::cpu::ScratchBf16 dot;
    kvscope::gpu::detail::cpu::Scratch portable;
    std::vector<float> q; // the portable kernel's fp32 query rows
};

AbScratch* AB_CAT(abNewScratch, AB_VARIANT)() {
    return new AbScratch;
}
void AB_CAT(abFreeScratch, AB_VARIANT)(AbScratch* s) {
    delete s;
}

namespace {

using kvscope::gpu::KvDtype;
#define AB_STR2(x) #x
#define AB_STR(x) AB_STR2(x)
constexpr bool kVariantB = std::string_view(AB_STR(AB_VARIANT)) == "B";
/// Segment(Bf16)::gathered where the tree has it (A's tree may predate it).
template <class Segment> void setGathered(Segment& sg, bool on) {
    if constexpr (requires { sg.gathered; })
        sg.gathered = on;
}

/// The portable kernel (fp16 / fp32 KV, and every dtype where the bf16 dot-product kernel is not
/// enabled, as the engine picks); q pre-scaled as the engine does (scale · log2 e).
void runPortable(const AbShape& shape, const std::uint16_t* q, const std::uint8_t* k,
                 const std::uint8_t* v, std::int64_t tokens, float* out, float* lse, AbScratch* s) {
    using namespace kvscope::gpu::detail::cpu;
    const float scale = 1.4426950f / std::sqrt(float(shape.keyDim));
    s->q.resize(std::size_t(shape.rows * shape.keyDim));
    for (std::size_t i = 0; i < s->q.size(); ++i)
        s->q[i] = kvscope::gpu::num::bf16ToFloat(q[i]) * scale;
    const std::int64_t rowBytes = shape.rowBytes;
    Segment sg{s->q.data(),
               shape.rows,
               shape.keyDim,
               shape.valueDim,
               k,
               shape.mla ? k : v,
               rowBytes,
               rowBytes,
               0,
               tokens,
               shape.dtype,
               out,
               lse};
    setGathered(sg, kVariantB ? shape.gatheredB : shape.gatheredA);
    portableKernel(portableWidth(), shape.keyDim, shape.valueDim)(sg, s->portable);
}

/// SegmentBf16::valuesPaired where the tree has it (A's tree may predate it).
template <class Segment> void setPairedValues(Segment& sg, bool on) {
    if constexpr (requires { sg.valuesPaired; })
        sg.valuesPaired = on;
}

} // namespace

void AB_CAT(abRun, AB_VARIANT)(const AbShape& shape, const std::uint16_t* q, const std::uint8_t* k,
                               const std::uint8_t* v, std::int64_t tokens, float* out, float* lse,
                               AbScratch* s) {
    using namespace kvscope::gpu::detail::cpu;
    if (shape.dtype == KvDtype::Fp16 || shape.dtype == KvDtype::Fp32 || !bf16DotEnabled()) {
        runPortable(shape, q, k, v, tokens, out, lse, s);
        return;
    }
    SegmentBf16 sg;
    sg.q = q;
    sg.rows = shape.rows;
    sg.keys = k;
    sg.values = shape.mla ? k : v;
    sg.keyRowBytes = sg.valueRowBytes = shape.rowBytes;
    sg.t0 = 0;
    sg.t1 = tokens;
    sg.dtype = shape.dtype;
    sg.scoreScale = 0.125f * 1.4426950f;
    sg.out = out;
    sg.lse = lse;
    setPairedValues(sg, shape.pairedValuesB && kVariantB);
    setGathered(sg, kVariantB ? shape.gatheredB : shape.gatheredA);
    if (amxServes(shape.rows, sg.dtype))
        attendAmx(sg, shape.keyDim, shape.valueDim, s->amx);
    else
        attendBf16(sg, shape.keyDim, shape.valueDim, s->dot);
}
