// CPU engine: the same decode math as the CUDA kernels (GQA family and absorbed MLA), split
// over KV chunks on a std::thread pool and merged by log-sum-exp. Two kernels: bf16/fp8 KV on
// vdpbf16ps where the CPU has AVX512_BF16 (bf16_kernel.cpp), and a portable fp32 kernel on GCC
// vector types, one instantiation per vector width picked at run time (portable_kernel.cpp).
// Design and figures: gpu/NOTES.md.
#include "gpu/engine.h"

#include "gpu/cpu/amx_kernel.h"
#include "gpu/cpu/bf16_kernel.h"
#include "gpu/cpu/buffer.h"
#include "gpu/cpu/ceilings.h"
#include "gpu/cpu/decode.h"
#include "gpu/cpu/inputs.h"
#include "gpu/cpu/portable_kernel.h"
#include "gpu/cpu/row_map.h"
#include "gpu/cpu/thread_pool.h"
#include "gpu/numerics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

namespace kvscope::gpu::detail {
namespace {

using namespace cpu;

/// Where one work item (stream, split) reads and writes.
struct ItemPlace {
    std::int64_t firstRow, rows;       // query rows of the stream ([b][head] in order)
    const std::uint8_t *keys, *values; // the stream's K and V (MLA: V == K)
    std::int64_t rowBytes;             // bytes per K/V token row
    std::int64_t t0, t1;               // tokens of the split
    float *out, *lse;                  // the split's partial outputs
};

class CpuEngine final : public Engine {
public:
    CpuEngine()
        : pool_(std::max(1u, std::thread::hardware_concurrency())), llc_(lastLevelCacheBytes()),
          ceilings_(pool_, llc_, cacheLevelBytes(2), memoryBudgetBytes()) {}

    std::string backendName() const override { return "cpu"; }

    std::vector<DeviceInfo> devices() const override {
        return {cpuDeviceInfo(int(pool_.size()), llc_)};
    }

    std::string supports(const DecodeShape& s) const override {
        if (s.kind == Attention::Mla && (s.kvLoraRank != 512 || s.ropeDim != 64))
            return "unsupported MLA widths r=" + std::to_string(s.kvLoraRank) +
                   ", d_rope=" + std::to_string(s.ropeDim) +
                   " (the kernels are built for 512 + 64)";
        return {};
    }

    std::int64_t cacheBytes() const override { return llc_ > 0 ? llc_ : (32ll << 20); }

    std::int64_t memoryBudgetBytes() const override {
        const std::int64_t phys = physicalMemoryBytes();
        return std::min<std::int64_t>(phys > 0 ? phys / 4 : (2ll << 30), 8ll << 30);
    }

    Ceilings measureCeilings(const Progress& progress) override {
        return ceilings_.measure(progress);
    }

    bool spotCeilings(KvDtype dtype, double pointBytes, double* read, double* peak,
                      std::string* kernel) override {
        // The peak of the unit this shape's kernel computes on.
        const ComputeUnit unit = amx_       ? ComputeUnit::Amx
                                 : bf16Dot_ ? ComputeUnit::Bf16Dot
                                            : ComputeUnit::Fma;
        return ceilings_.spot(dtype == shape_.dtype ? unit : kernelUnit(dtype), pointBytes, read,
                              peak, kernel);
    }

    bool ceilingPiece(int which, double pointBytes, double* read, std::string* kernel) override {
        // Read a cold input set of the point itself: the one the repeats reach half a
        // rotation from now (the harness runs repeat r on set r % sets, and piece r comes
        // right before it), so the piece and the repeats read the same pages.
        if (!sets_.empty()) {
            const InputSet& in = sets_[(std::size_t(which) + sets_.size() / 2) % sets_.size()];
            std::vector<CeilingMeter::Region> regions;
            for (const Buffer* b : {&in.k, &in.v})
                if (b->bytes)
                    regions.push_back({b->data, std::int64_t(b->bytes)});
            if (ceilings_.pieceOf(which, regions, read, kernel))
                return true;
        }
        return ceilings_.piece(which, pointBytes, read, kernel);
    }

    std::string prepare(const DecodeShape& s, int sets, std::uint64_t seed) override {
        release();
        shape_ = s;
        if (auto e = chooseKernel(s); !e.empty())
            return e;
        if (auto e = acquireInputs(s, sets); !e.empty())
            return e;
        fillSets(s, seed);
        const std::int64_t ab = activationBytesPerElement(s.dtype);
        const std::int64_t outElems = s.batch * s.qHeads * s.valueDim();
        if (!out_.allocate(std::size_t(outElems * ab))) {
            release();
            return "out of memory allocating the output";
        }
        const std::int64_t rows = s.batch * s.qHeads;
        partialOut_.assign(std::size_t(splits_ * outElems), 0.0f);
        partialLse_.assign(std::size_t(splits_ * rows), 0.0f);
        if (auto e = choosePlan(sets); !e.empty()) {
            release();
            return e;
        }
        return {};
    }

    std::string poisonOutput() override {
        std::memset(out_.data, 0xff, out_.bytes); // NaN in bf16, fp16 and fp32
        return {};
    }

    std::string run(int set) override {
        if (set < 0 || std::size_t(set) >= sets_.size())
            return "input set " + std::to_string(set) + " was not prepared";
        const InputSet& in = sets_[std::size_t(set)];
        // Work item = (stream, split): one KV stream's chunk for all its query rows.
        pool_.parallelFor(streams_ * splits_, [&](std::int64_t item) {
            const ItemPlace at = place(in, item);
            if (bf16Dot_)
                runBf16(in, at);
            else
                runPortable(in, at);
        });
        combineSplits();
        return {};
    }

    std::string timeRun(int set, double* seconds) override {
        const auto t0 = std::chrono::steady_clock::now();
        auto e = run(set);
        *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return e;
    }

    std::string readOutput(std::vector<float>* out) override {
        const KvDtype act = activationType(shape_.dtype);
        const std::int64_t ab = activationBytesPerElement(shape_.dtype);
        const std::int64_t n = std::int64_t(out_.bytes) / ab;
        out->resize(std::size_t(n));
        for (std::int64_t i = 0; i < n; ++i)
            (*out)[std::size_t(i)] = decodeValue(act, out_.data + i * ab);
        if (act == KvDtype::Fp16) // the fast decoder treats exponent 31 as finite: poison is NaN
            for (std::int64_t i = 0; i < n; ++i) {
                std::uint16_t h;
                std::memcpy(&h, out_.data + i * ab, 2);
                if ((h & 0x7c00u) == 0x7c00u)
                    (*out)[std::size_t(i)] = std::numeric_limits<float>::quiet_NaN();
            }
        return {};
    }

    std::string kernelName() const override {
        const std::string name = shape_.kind == Attention::Mla ? "cpu-mla-absorbed" : "cpu-gqa";
        if (amx_)
            return name + "-amx";
        return name + (gathered_ ? "-gathered" : "") +
               (bf16Dot_       ? "-bf16dot"
                : width_ == 16 ? "-avx512"
                : width_ == 8  ? "-avx2"
                               : "-vec4");
    }
    int splits() const override { return splits_; }

    void release() override {
        for (InputSet& in : sets_) // kept for the next prepare(); freed with the engine
            for (Buffer* b : {&in.q, &in.k, &in.v})
                if (b->data)
                    spare_.push_back(std::move(*b));
        sets_.clear();
        out_ = Buffer{};
        partialOut_.clear();
        partialOut_.shrink_to_fit();
        partialLse_.clear();
    }

private:
    struct InputSet {
        Buffer q, k, v;
    };

    /// Whether the shape's kernel reads tiles either contiguous or gathered (SegmentBf16 and
    /// Segment::gathered): the portable kernel, and the vdpbf16ps kernel's streams that score
    /// in rows; the AMX kernel reads its own blocks.
    bool planMatters() const {
        const std::int64_t rows =
            shape_.kind == Attention::Mla ? shape_.qHeads : shape_.groupSize();
        return !bf16Dot_ || (!amx_ && bf16ScoresInRows(rows));
    }

    /// Contiguous or gathered tiles. Which reads faster from DRAM depends on the host: on the
    /// AMD EPYC VM of NOTES.md ("sixteenth session") contiguous tiles with the next one
    /// prefetched took 0.71-0.83 of gathered's time at bf16 g 1-2 (fp16 g 1 0.88); on the Intel
    /// Xeon VM ("twenty-fourth session") gathered took 0.84 of contiguous's at bf16 g 1. So a
    /// timed point (several input sets) runs both plans in turn on cold sets, before anything
    /// else reads them, and keeps the faster; KVSCOPE_CPU_GATHER=0 or 1 forces one, and an
    /// untimed check reads contiguous tiles.
    std::string choosePlan(int sets) {
        const bool matters = planMatters();
        const int forced = gatherForced();
        gathered_ = matters && forced == 1;
        if (!matters || forced >= 0 || sets < 2)
            return {};
        double best[2] = {std::numeric_limits<double>::infinity(),
                          std::numeric_limits<double>::infinity()};
        constexpr int kOrder[] = {0, 1, 1, 0, 0, 1}; // either plan first as often
        for (int i = 0; i < 6; ++i) {
            gathered_ = kOrder[i] == 1;
            double t = 0;
            if (auto e = timeRun(i % sets, &t); !e.empty())
                return e;
            best[kOrder[i]] = std::min(best[kOrder[i]], t);
        }
        gathered_ = best[1] < best[0];
        return {};
    }

    /// Kernel, vector width and splits for the shape.
    std::string chooseKernel(const DecodeShape& s) {
        const std::int64_t dq = s.queryDim();
        // The bf16 dot-product kernel: bf16 or fp8 KV (bf16 queries) on AVX512_BF16 CPUs.
        // Both kernels are built for the same widths (GQA 64/128/256, MLA 576/512).
        width_ = portableWidth();
        portable_ = portableKernel(width_, dq, s.valueDim());
        if (!portable_)
            return "unsupported key/value widths " + std::to_string(dq) + "/" +
                   std::to_string(s.valueDim()) + " for the CPU kernels";
        bf16Dot_ = bf16DotEnabled() && (s.dtype == KvDtype::Bf16 || s.dtype == KvDtype::Fp8E4m3);
        amx_ = bf16Dot_ && amxServes(s.kind == Attention::Mla ? s.qHeads : s.groupSize(), s.dtype);
        // V stored in token pairs where the kernel reads it so (the vdpbf16ps kernel's GQA
        // streams of 16k and of 8 rows, the AMX kernel's per amxPairedValues): no interleave per
        // tile. The splits then start at even tokens, and S must be even.
        pairedValues_ = bf16Dot_ && s.kind == Attention::Gqa && s.context % 2 == 0 &&
                        (amx_ ? amxPairedValues(s.groupSize(), s.dtype)
                              : bf16PairedValues(s.groupSize(), s.valueDim()));
        // Splits: enough work items to keep every thread busy, at least 256 tokens each.
        streams_ = s.kind == Attention::Mla ? s.batch : s.batch * s.kvHeads;
        const std::int64_t want = 4 * std::int64_t(pool_.size());
        splits_ = int(std::clamp<std::int64_t>((want + streams_ - 1) / streams_, 1,
                                               std::clamp<std::int64_t>(s.context / 256, 1, 256)));
        return {};
    }

    /// Input buffers: the previous shape's where they are large enough (their pages are
    /// already mapped: fresh ones page-faulted through a quarter of a sweep), then the spares
    /// left over are freed before anything new is allocated.
    std::string acquireInputs(const DecodeShape& s, int sets) {
        const std::int64_t kb = kvBytesPerElement(s.dtype), ab = activationBytesPerElement(s.dtype);
        std::vector<Buffer*> wanted;
        std::vector<std::size_t> wantBytes;
        sets_.resize(std::size_t(sets));
        for (InputSet& in : sets_) {
            wanted.insert(wanted.end(), {&in.q, &in.k});
            wantBytes.insert(wantBytes.end(),
                             {std::size_t(qElems(s) * ab), std::size_t(kvElems(s) * kb)});
            if (s.kind == Attention::Gqa) {
                wanted.push_back(&in.v);
                wantBytes.push_back(std::size_t(kvElems(s) * kb));
            }
        }
        std::sort(spare_.begin(), spare_.end(),
                  [](const Buffer& a, const Buffer& b) { return a.bytes < b.bytes; });
        for (std::size_t i = 0; i < wanted.size(); ++i)
            for (Buffer& b : spare_)
                if (b.data && b.bytes >= wantBytes[i]) { // the smallest that fits
                    *wanted[i] = std::move(b);
                    break;
                }
        spare_.clear();
        for (std::size_t i = 0; i < wanted.size(); ++i)
            if (!wanted[i]->data && !wanted[i]->allocate(wantBytes[i])) {
                release();
                spare_.clear();
                return "out of memory allocating the input sets for " + describe(s);
            }
        return {};
    }

    void fillSets(const DecodeShape& s, std::uint64_t seed) {
        const KvDtype act = activationType(s.dtype);
        for (std::size_t set = 0; set < sets_.size(); ++set) {
            InputSet& in = sets_[set];
            const std::uint64_t sd = seed + std::uint64_t(set);
            fill(in.q.data, qElems(s), act, sd, num::kQuery, num::kQueryScale);
            fill(in.k.data, kvElems(s), s.dtype, sd,
                 s.kind == Attention::Mla ? num::kLatent : num::kKey, 1.0f);
            if (s.kind == Attention::Gqa)
                fill(in.v.data, kvElems(s), s.dtype, sd, num::kValue, 1.0f);
            if (pairedValues_)
                pairRowsInPlace(in.v.data, kvElems(s) / s.headDim, s.headDim,
                                kvBytesPerElement(s.dtype));
        }
    }

    /// The V rows rewritten in place in token pairs (SegmentBf16::valuesPaired), a pair at a
    /// time through a copy of its two rows.
    void pairRowsInPlace(std::uint8_t* data, std::int64_t rows, std::int64_t width,
                         std::int64_t eb) {
        const std::int64_t pairs = rows / 2, parts = 4 * std::int64_t(pool_.size());
        const std::int64_t per = (pairs + parts - 1) / parts, pairBytes = 2 * width * eb;
        pool_.parallelFor(parts, [&](std::int64_t part) {
            std::vector<std::uint8_t> two(static_cast<std::size_t>(pairBytes));
            for (std::int64_t p = part * per; p < std::min(pairs, (part + 1) * per); ++p) {
                std::uint8_t* at = data + p * pairBytes;
                std::memcpy(two.data(), at, two.size());
                pairRows(two.data(), at, 2, width, eb);
            }
        });
    }

    static std::int64_t qElems(const DecodeShape& s) { return s.batch * s.qHeads * s.queryDim(); }
    static std::int64_t kvElems(const DecodeShape& s) {
        return s.kind == Attention::Mla ? s.batch * s.context * s.queryDim()
                                        : s.batch * s.kvHeads * s.context * s.headDim;
    }

    ItemPlace place(const InputSet& in, std::int64_t item) {
        const DecodeShape& s = shape_;
        const bool mla = s.kind == Attention::Mla;
        const std::int64_t dq = s.queryDim(), dv = s.valueDim(), S = s.context;
        const std::int64_t rows = s.batch * s.qHeads;
        std::int64_t chunk = (S + splits_ - 1) / splits_;
        if (pairedValues_) // whole token pairs per split
            chunk += chunk % 2;
        const std::int64_t stream = item / splits_, split = item % splits_;
        ItemPlace at;
        at.rows = mla ? s.qHeads : s.groupSize();
        at.firstRow = stream * at.rows;
        at.rowBytes = dq * kvBytesPerElement(s.dtype);
        at.keys = in.k.data + stream * S * at.rowBytes;
        at.values = mla ? at.keys : in.v.data + stream * S * at.rowBytes;
        at.t0 = std::min(S, split * chunk);
        at.t1 = std::min(S, at.t0 + chunk);
        at.out = partialOut_.data() + (split * rows + at.firstRow) * dv;
        at.lse = partialLse_.data() + split * rows + at.firstRow;
        return at;
    }

    void runBf16(const InputSet& in, const ItemPlace& at) const {
        SegmentBf16 sg;
        sg.q = reinterpret_cast<const std::uint16_t*>(in.q.data) + at.firstRow * shape_.queryDim();
        sg.rows = at.rows;
        sg.keyRowBytes = sg.valueRowBytes = at.rowBytes;
        sg.keys = at.keys;
        sg.values = at.values;
        sg.t0 = at.t0;
        sg.t1 = at.t1;
        sg.dtype = shape_.dtype;
        sg.scoreScale = qScale();
        sg.out = at.out;
        sg.lse = at.lse;
        sg.valuesPaired = pairedValues_;
        sg.gathered = gathered_;
        if (amx_) {
            thread_local ScratchAmx scratch;
            attendAmx(sg, shape_.queryDim(), shape_.valueDim(), scratch); // widths checked earlier
            return;
        }
        thread_local ScratchBf16 scratch;
        attendBf16(sg, shape_.queryDim(), shape_.valueDim(), scratch);
    }

    void runPortable(const InputSet& in, const ItemPlace& at) const {
        const KvDtype act = activationType(shape_.dtype);
        const std::int64_t ab = activationBytesPerElement(shape_.dtype), dq = shape_.queryDim();
        const float scale = qScale();
        thread_local std::vector<float> q;
        q.resize(std::size_t(at.rows * dq));
        for (std::int64_t r = 0; r < at.rows; ++r)
            for (std::int64_t j = 0; j < dq; ++j)
                q[std::size_t(r * dq + j)] =
                    decodeValue(act, in.q.data + ((at.firstRow + r) * dq + j) * ab) * scale;
        Segment sg;
        sg.q = q.data();
        sg.rows = at.rows;
        sg.keyDim = dq;
        sg.valueDim = shape_.valueDim();
        sg.keyRowBytes = sg.valueRowBytes = at.rowBytes;
        sg.keys = at.keys;
        sg.values = at.values;
        sg.t0 = at.t0;
        sg.t1 = at.t1;
        sg.dtype = shape_.dtype;
        sg.out = at.out;
        sg.lse = at.lse;
        sg.gathered = gathered_;
        thread_local Scratch scratch;
        portable_(sg, scratch); // widths checked in prepare()
    }

    float qScale() const { return float(softmaxScale(shape_) * 1.4426950408889634); } // log2(e)

    /// Merges the splits (log-sum-exp) and stores the output in the activation type.
    void combineSplits() {
        const KvDtype act = activationType(shape_.dtype);
        const std::int64_t ab = activationBytesPerElement(shape_.dtype), dv = shape_.valueDim();
        const std::int64_t rows = shape_.batch * shape_.qHeads;
        const std::int64_t rowsPerItem =
            std::max<std::int64_t>(1, rows / (4 * std::int64_t(pool_.size())));
        pool_.parallelFor((rows + rowsPerItem - 1) / rowsPerItem, [&](std::int64_t item) {
            for (std::int64_t row = item * rowsPerItem;
                 row < std::min(rows, (item + 1) * rowsPerItem); ++row) {
                float mMax = -std::numeric_limits<float>::infinity();
                for (int sp = 0; sp < splits_; ++sp)
                    mMax = std::max(mMax, partialLse_[std::size_t(sp * rows + row)]);
                float wsum = 0;
                float w[256];
                const int ns = std::min(splits_, 256);
                for (int sp = 0; sp < ns; ++sp) {
                    const float lse = partialLse_[std::size_t(sp * rows + row)];
                    w[sp] = lse == -std::numeric_limits<float>::infinity() ? 0.0f
                                                                           : std::exp2(lse - mMax);
                    wsum += w[sp];
                }
                for (std::int64_t j = 0; j < dv; ++j) {
                    float o = 0;
                    for (int sp = 0; sp < ns; ++sp)
                        o += w[sp] * partialOut_[std::size_t((sp * rows + row) * dv + j)];
                    encodeValue(act, wsum > 0 ? o / wsum : 0.0f, out_.data + (row * dv + j) * ab);
                }
            }
        });
    }

    void fill(std::uint8_t* dst, std::int64_t n, KvDtype dtype, std::uint64_t seed,
              std::uint32_t tensor, float scale) {
        const std::int64_t eb = kvBytesPerElement(dtype);
        const std::int64_t parts = 4 * std::int64_t(pool_.size());
        const std::int64_t per = (n + parts - 1) / parts;
        pool_.parallelFor(parts, [&](std::int64_t p) {
            const std::int64_t b = p * per, e = std::min(n, b + per);
            if (b < e)
                fillInputs(dtype, dst + b * eb, b, e - b, seed, tensor, scale);
        });
    }

    ThreadPool pool_;
    std::int64_t llc_ = 0;
    CeilingMeter ceilings_;
    DecodeShape shape_;
    int splits_ = 1;
    std::int64_t streams_ = 1;
    bool bf16Dot_ = false;
    bool amx_ = false;
    bool pairedValues_ = false; // V stored in token pairs (SegmentBf16::valuesPaired)
    bool gathered_ = false;     // tiles gathered from sub-streams (choosePlan)
    int width_ = 4;             // the portable kernel's vector width
    PortableKernel portable_ = nullptr;
    std::vector<InputSet> sets_;
    std::vector<Buffer> spare_; // input buffers of the last shape, for the next prepare()
    Buffer out_;
    std::vector<float> partialOut_, partialLse_;
};

} // namespace

std::unique_ptr<Engine> makeCpuEngine() {
    return std::make_unique<CpuEngine>();
}

int cpuFp8VectorMismatch() {
    return cpu::fp8VectorMismatch();
}
int cpuPortableFp8Mismatch(int width) {
    return cpu::portableFp8Mismatch(width);
}

bool cpuHasAmxKernel() {
    return cpu::cpuHasAmx();
}

} // namespace kvscope::gpu::detail
