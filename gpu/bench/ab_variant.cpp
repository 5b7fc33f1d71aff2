// The adapter of one kernel variant (see ab_variant.h): built with -Dcpu=cpuA -DAB_VARIANT=A or
// -Dcpu=cpuB -DAB_VARIANT=B against that variant's tree.
#include "ab_variant.h"

#include "gpu/cpu/amx_kernel.h"

#define AB_CAT2(a, b) a##b
#define AB_CAT(a, b) AB_CAT2(a, b)

struct AbScratch {
    kvscope::gpu::detail::cpu::ScratchAmx amx;
    kvscope::gpu::detail::cpu::ScratchBf16 dot;
};

AbScratch* AB_CAT(abNewScratch, AB_VARIANT)() {
    return new AbScratch;
}
void AB_CAT(abFreeScratch, AB_VARIANT)(AbScratch* s) {
    delete s;
}

void AB_CAT(abRun, AB_VARIANT)(const AbShape& shape, const std::uint16_t* q, const std::uint8_t* k,
                               const std::uint8_t* v, std::int64_t tokens, float* out, float* lse,
                               AbScratch* s) {
    using namespace kvscope::gpu::detail::cpu;
    SegmentBf16 sg;
    sg.q = q;
    sg.rows = shape.rows;
    sg.keys = k;
    sg.values = shape.mla ? k : v;
    sg.keyRowBytes = sg.valueRowBytes = shape.rowBytes;
    sg.t0 = 0;
    sg.t1 = tokens;
    sg.dtype = shape.fp8 ? kvscope::gpu::KvDtype::Fp8E4m3 : kvscope::gpu::KvDtype::Bf16;
    sg.scoreScale = 0.125f * 1.4426950f;
    sg.out = out;
    sg.lse = lse;
    if (amxServes(shape.rows, sg.dtype))
        attendAmx(sg, shape.keyDim, shape.valueDim, s->amx);
    else
        attendBf16(sg, shape.keyDim, shape.valueDim, s->dot);
}
