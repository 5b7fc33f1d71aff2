// The check-and-time harness shared by every engine: fresh random inputs, poisoned outputs, a
// double-precision reference on sampled rows, input sets rotated beyond the last cache,
// warm-up and the median of repeats.
#include "gpu/engine.h"
#include "gpu/numerics.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>

namespace kvscope::gpu::detail {

double softmaxScale(const DecodeShape& s) {
    const double dim =
        s.kind == Attention::Mla ? double(s.kvLoraRank + s.ropeDim) : double(s.headDim);
    return 1.0 / std::sqrt(dim);
}

namespace {

/// The stored value of a generated element, decoded exactly (what every kernel reads).
double storedValue(KvDtype storage, float x) {
    switch (storage) {
    case KvDtype::Bf16:
        return num::bf16ToFloat(num::floatToBf16(x));
    case KvDtype::Fp16:
        return num::fp16ToFloat(num::floatToFp16(x));
    case KvDtype::Fp8E4m3:
        return num::fp8e4m3ToFloat(num::floatToFp8e4m3(x));
    case KvDtype::Fp32:
        return x;
    }
    return x;
}

/// Activation storage type for a KV dtype (queries and outputs).
KvDtype activationType(KvDtype kv) {
    return kv == KvDtype::Fp32 ? KvDtype::Fp32
                               : (kv == KvDtype::Fp16 ? KvDtype::Fp16 : KvDtype::Bf16);
}

std::uint64_t freshSeed() {
    static std::atomic<std::uint64_t> counter{0};
    std::random_device rd;
    const std::uint64_t t =
        std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    return num::mix64(t ^ (std::uint64_t(rd()) << 32) ^ counter.fetch_add(0x9e3779b9u));
}

/// Rows of the output the reference recomputes: per group (GQA: a (batch, kv head) pair; MLA:
/// a batch entry) the heads to check.
struct SampledGroup {
    std::int64_t batch = 0, kvHead = 0;
    std::vector<std::int64_t> heads; // absolute query-head indices
};

std::vector<std::int64_t> spread(std::int64_t first, std::int64_t count, std::int64_t most) {
    std::vector<std::int64_t> out;
    if (count <= most) {
        for (std::int64_t i = 0; i < count; ++i)
            out.push_back(first + i);
        return out;
    }
    for (std::int64_t i = 0; i < most; ++i) // evenly spread, first and last included
        out.push_back(first + i * (count - 1) / (most - 1));
    return out;
}

std::vector<SampledGroup> sampleRows(const DecodeShape& s, std::uint64_t seed) {
    std::vector<SampledGroup> groups;
    std::mt19937_64 rng(seed);
    const std::int64_t kvGroups = s.kind == Attention::Mla ? 1 : s.kvHeads;
    const std::int64_t total = s.batch * kvGroups;
    std::vector<std::int64_t> picks;
    if (total <= 8) {
        for (std::int64_t i = 0; i < total; ++i)
            picks.push_back(i);
    } else {
        picks = {0, total - 1, std::int64_t(rng() % std::uint64_t(total))};
        std::sort(picks.begin(), picks.end());
        picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
    }
    const std::int64_t g = s.kind == Attention::Mla ? s.qHeads : s.groupSize();
    for (std::int64_t p : picks) {
        SampledGroup sg;
        sg.batch = p / kvGroups;
        sg.kvHead = p % kvGroups;
        sg.heads = spread(sg.kvHead * g, g, 32);
        groups.push_back(std::move(sg));
    }
    return groups;
}

/// Softmax(q·K^T·scale)·V in double for one query row; keys/values are [S][dim] row-major.
void referenceRow(const std::vector<double>& q, const std::vector<double>& keys,
                  std::int64_t keyDim, const std::vector<double>& values, std::int64_t valueStride,
                  std::int64_t valueDim, std::int64_t S, double scale, std::vector<double>* out) {
    std::vector<double> scores(static_cast<std::size_t>(S));
    double maxScore = -std::numeric_limits<double>::infinity();
    for (std::int64_t t = 0; t < S; ++t) {
        const double* k = &keys[std::size_t(t * keyDim)];
        double acc = 0;
        for (std::int64_t j = 0; j < keyDim; ++j)
            acc += q[std::size_t(j)] * k[j];
        scores[std::size_t(t)] = acc * scale;
        maxScore = std::max(maxScore, scores[std::size_t(t)]);
    }
    double sum = 0;
    for (auto& x : scores) {
        x = std::exp(x - maxScore);
        sum += x;
    }
    out->assign(std::size_t(valueDim), 0.0);
    for (std::int64_t t = 0; t < S; ++t) {
        const double p = scores[std::size_t(t)] / sum;
        const double* v = &values[std::size_t(t * valueStride)];
        for (std::int64_t j = 0; j < valueDim; ++j)
            (*out)[std::size_t(j)] += p * v[j];
    }
}

/// Max over the sampled rows of ‖out − ref‖ / ‖ref‖ for input set `seed`; +inf on NaN.
double compareWithReference(const DecodeShape& s, std::uint64_t seed, const std::vector<float>& out,
                            const Progress& progress, bool* cancelled) {
    const KvDtype act = activationType(s.dtype);
    const std::int64_t dq = s.queryDim(), dv = s.valueDim(), S = s.context;
    const double scale = softmaxScale(s);
    double worst = 0;
    const auto groups = sampleRows(s, seed ^ 0x5eedull);
    std::size_t done = 0;
    for (const SampledGroup& sg : groups) {
        if (progress && !progress(0.5 + 0.4 * double(done++) / double(groups.size()),
                                  "reference check " + describe(s))) {
            *cancelled = true;
            return worst;
        }
        // Keys and values of this group, decoded from the stored format.
        std::vector<double> keys(static_cast<std::size_t>(S * dq)), values;
        std::int64_t valueStride = dq;
        if (s.kind == Attention::Mla) {
            const std::uint64_t base = std::uint64_t(sg.batch * S * dq);
            for (std::int64_t i = 0; i < S * dq; ++i)
                keys[std::size_t(i)] = storedValue(
                    s.dtype, num::uniformInput(seed, num::kLatent, base + std::uint64_t(i)));
        } else {
            values.resize(std::size_t(S * dq));
            const std::uint64_t base = std::uint64_t((sg.batch * s.kvHeads + sg.kvHead) * S * dq);
            for (std::int64_t i = 0; i < S * dq; ++i) {
                keys[std::size_t(i)] = storedValue(
                    s.dtype, num::uniformInput(seed, num::kKey, base + std::uint64_t(i)));
                values[std::size_t(i)] = storedValue(
                    s.dtype, num::uniformInput(seed, num::kValue, base + std::uint64_t(i)));
            }
        }
        const std::vector<double>& vals = s.kind == Attention::Mla ? keys : values;
        std::vector<double> q(static_cast<std::size_t>(dq)), ref;
        for (std::int64_t head : sg.heads) {
            const std::int64_t row = sg.batch * s.qHeads + head;
            for (std::int64_t j = 0; j < dq; ++j)
                q[std::size_t(j)] = storedValue(
                    act, num::uniformInput(seed, num::kQuery, std::uint64_t(row * dq + j)) *
                             num::kQueryScale);
            referenceRow(q, keys, dq, vals, valueStride, dv, S, scale, &ref);
            double errSq = 0, refSq = 0;
            bool bad = false;
            for (std::int64_t j = 0; j < dv; ++j) {
                const double o = out[std::size_t(row * dv + j)];
                if (!std::isfinite(o))
                    bad = true;
                errSq += (o - ref[std::size_t(j)]) * (o - ref[std::size_t(j)]);
                refSq += ref[std::size_t(j)] * ref[std::size_t(j)];
            }
            const double rel = bad ? std::numeric_limits<double>::infinity()
                                   : std::sqrt(errSq) / std::max(std::sqrt(refSq), 1e-30);
            worst = std::max(worst, rel);
        }
    }
    return worst;
}

double median(std::vector<double> v) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string formatE(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", x);
    return buf;
}

class HarnessBackend final : public Backend {
public:
    explicit HarnessBackend(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}
    ~HarnessBackend() override { engine_->release(); }

    std::string name() const override { return engine_->backendName(); }
    std::vector<DeviceInfo> devices() const override { return engine_->devices(); }

    std::string supports(const DecodeShape& s) const override {
        if (auto e = validateShape(s); !e.empty())
            return e;
        if (auto e = engine_->supports(s); !e.empty())
            return e;
        const DecodeCounts c = countDecode(s);
        const double budget = double(engine_->memoryBudgetBytes());
        if (c.bytes > budget) {
            char buf[200];
            std::snprintf(buf, sizeof buf,
                          "shape too large: one input set needs %.2f GiB, the %s backend may use "
                          "%.2f GiB",
                          c.bytes / 1073741824.0, engine_->backendName().c_str(),
                          budget / 1073741824.0);
            return buf;
        }
        return {};
    }

    Ceilings measureCeilings(const Progress& progress) override {
        return engine_->measureCeilings(progress);
    }

    Measurement selfCheck(const DecodeShape& s, const Progress& progress) override {
        return run(s, progress, /*timed=*/false);
    }
    Measurement measure(const DecodeShape& s, const Progress& progress) override {
        return run(s, progress, /*timed=*/true);
    }

private:
    Measurement run(const DecodeShape& s, const Progress& progress, bool timed) {
        Measurement m;
        m.shape = s;
        m.errorBound = errorBoundFor(s.dtype);
        const DecodeCounts c = countDecode(s);
        m.bytes = c.bytes;
        m.flops = c.flops;
        m.intensityFlopPerByte = c.intensity;
        auto fail = [&](std::string why) {
            engine_->release();
            m.ok = false;
            m.error = std::move(why);
            return m;
        };
        auto report = [&](double f, const std::string& what) {
            return !progress || progress(f, what);
        };
        if (auto e = supports(s); !e.empty())
            return fail(e);
        if (!report(0.0, "preparing " + describe(s)))
            return fail("cancelled");

        const int sets = timed ? rotationSets(c.bytes) : 1;
        m.seed = freshSeed();
        if (auto e = engine_->prepare(s, sets, m.seed); !e.empty())
            return fail(e);
        m.kernel = engine_->kernelName();
        m.splits = engine_->splits();

        // Check first: poisoned output, one run on set 0, every element written, reference.
        if (auto e = engine_->poisonOutput(); !e.empty())
            return fail(e);
        if (auto e = engine_->run(0); !e.empty())
            return fail(e);
        std::vector<float> out;
        if (auto e = engine_->readOutput(&out); !e.empty())
            return fail(e);
        std::size_t unwritten = 0;
        for (float x : out)
            if (std::isnan(x))
                ++unwritten;
        if (unwritten)
            return fail(std::to_string(unwritten) + " of " + std::to_string(out.size()) +
                        " output elements were not written (still poisoned)");
        bool cancelled = false;
        m.maxRelError = compareWithReference(s, m.seed, out, progress, &cancelled);
        if (cancelled)
            return fail("cancelled");
        if (!(m.maxRelError <= m.errorBound))
            return fail("mismatch: max relative error " + formatE(m.maxRelError) + " exceeds the " +
                        std::string(dtypeName(s.dtype)) + " bound " + formatE(m.errorBound) + " (" +
                        m.kernel + ", " + describe(s) + ")");
        if (!timed) {
            engine_->release();
            m.ok = true;
            return m;
        }

        if (!report(0.9, "timing " + describe(s)))
            return fail("cancelled");
        m.inputSets = sets;
        m.inputSetBytes = double(sets) * c.bytes;
        // Warm-up: every set once (at least twice in all).
        for (int i = 0; i < std::max(sets, 2); ++i)
            if (auto e = engine_->run(i % sets); !e.empty())
                return fail(e);
        if (auto e = timeAttempts(s, sets, &m); !e.empty())
            return fail(e);
        engine_->release();
        m.ok = true;
        report(1.0, "done " + describe(s));
        return m;
    }

    /// Input sets so that their total is kRotation x the last cache (at most kMaxSets, within
    /// the memory budget): repeat r runs set r % sets, which was last read sets - 1 repeats ago,
    /// so no repeat finds its inputs in the cache.
    int rotationSets(double bytes) const {
        const double cache = double(std::max<std::int64_t>(engine_->cacheBytes(), 1 << 20));
        int sets = int(
            std::clamp(std::ceil(kRotation * cache / std::max(bytes, 1.0)), 1.0, double(kMaxSets)));
        const double budget = double(engine_->memoryBudgetBytes());
        while (sets > 1 && double(sets) * bytes > budget)
            --sets;
        return sets;
    }

    /// Timed repeats between two ceiling measurements, attempted again (up to kAttempts) while
    /// the repeats spread over more than kMaxSpread of their median or the ceilings before and
    /// after differ by more than kMaxCeilingShift or the point sits above its own roof; the
    /// steadiest attempt is kept.
    std::string timeAttempts(const DecodeShape& s, int sets, Measurement* m) {
        Measurement best;
        double bestScore = std::numeric_limits<double>::infinity();
        for (int attempt = 1; attempt <= kAttempts; ++attempt) {
            Measurement a = *m;
            std::string before, after;
            const bool spots = engine_->spotCeilings(s.dtype, a.bytes, &a.readCeilingBefore,
                                                     &a.peakBefore, &before);
            if (auto e = timeRepeats(sets, &a); !e.empty())
                return e;
            if (spots &&
                engine_->spotCeilings(s.dtype, a.bytes, &a.readCeilingAfter, &a.peakAfter,
                                      &after) &&
                a.readCeilingPaired == 0)
                a.readCeilingKernel = a.readCeilingBefore > a.readCeilingAfter ? before : after;
            a.attempts = attempt;
            const double spotMax = std::max(a.readCeilingBefore, a.readCeilingAfter);
            const double shift =
                spotMax > 0 ? std::abs(a.readCeilingAfter - a.readCeilingBefore) / spotMax : 0;
            // A point above its own roof means that a ceiling or the point was timed while
            // something else held the cores for part of it: such an attempt is timed again and
            // loses to any attempt under its roof (if every attempt is above, the point is
            // reported, and flagged, as measured).
            const bool above = placeOnRoof(a, a.readCeiling(), a.peakCeiling()).aboveCeiling;
            const double score = std::max(a.spread() / kMaxSpread, shift / kMaxCeilingShift) +
                                 (above ? kAboveRoofPenalty : 0.0);
            if (score < bestScore) {
                bestScore = score;
                best = a;
            }
            best.attempts = attempt;
            if (score <= 1)
                break;
        }
        best.unstable = bestScore > 1;
        *m = best;
        return {};
    }

    /// At least kMinRepeats repeats and kMinSeconds in all (at most kMaxRepeats): median,
    /// fastest and slowest; with a ceiling piece before every repeat and after the last when
    /// the engine reads them (pairRepeats).
    std::string timeRepeats(int sets, Measurement* m) {
        std::vector<double> times, pieces;
        std::vector<std::string> pieceKernels;
        auto piece = [&] {
            double v = 0;
            std::string k;
            if (engine_->ceilingPiece(int(pieces.size()), m->bytes, &v, &k) && v > 0) {
                pieces.push_back(v);
                pieceKernels.push_back(k);
            }
        };
        double total = 0;
        for (int r = 0; r < kMaxRepeats && (r < kMinRepeats || total < kMinSeconds); ++r) {
            piece();
            double t = 0;
            if (auto e = engine_->timeRun(r % sets, &t); !e.empty())
                return e;
            if (!(t > 0) || !std::isfinite(t))
                return "timer returned a non-positive time";
            times.push_back(t);
            total += t;
        }
        piece();
        m->repeats = int(times.size());
        m->medianSeconds = median(times);
        m->minSeconds = *std::min_element(times.begin(), times.end());
        m->maxSeconds = *std::max_element(times.begin(), times.end());
        m->bytesPerSecond = m->bytes / m->medianSeconds;
        m->flopPerSecond = m->flops / m->medianSeconds;
        if (pieces.size() == times.size() + 1)
            pairRepeats(times, pieces, pieceKernels, m);
        return {};
    }

    /// Each repeat against the fastest of the pieces around it (right after it, right before
    /// it and the one before that: an engine that rotates up to three read kernels has each of
    /// them next to every repeat but the first): the median of the repeats' fractions of their
    /// ceilings gives the paired ceiling, and the kernel that gave most repeats their ceiling
    /// is named.
    static void pairRepeats(const std::vector<double>& times, const std::vector<double>& pieces,
                            const std::vector<std::string>& kernels, Measurement* m) {
        std::vector<double> fractions;
        std::map<std::string, int> wins;
        for (std::size_t r = 0; r < times.size(); ++r) {
            std::size_t best = r + 1;
            for (std::size_t i = r > 0 ? r - 1 : 0; i <= r; ++i)
                if (pieces[i] > pieces[best])
                    best = i;
            fractions.push_back(m->bytes / times[r] / pieces[best]);
            ++wins[kernels[best]];
        }
        const double fraction = median(fractions);
        if (!(fraction > 0))
            return;
        m->readCeilingPaired = m->bytesPerSecond / fraction;
        m->pairedPieces = int(pieces.size());
        m->readCeilingKernel =
            std::max_element(wins.begin(), wins.end(), [](const auto& a, const auto& b) {
                return a.second < b.second;
            })->first;
    }

    static constexpr double kRotation = 4.0; // input sets' total over the last cache
    static constexpr int kMaxSets = 4096;
    static constexpr int kMinRepeats = 7, kMaxRepeats = 50;
    static constexpr double kMinSeconds = 0.2;
    static constexpr int kAttempts = 2;
    static constexpr double kMaxSpread = 0.5;         // (max - min) / median of the repeats
    static constexpr double kMaxCeilingShift = 0.2;   // |after - before| / max of the ceilings
    static constexpr double kAboveRoofPenalty = 1000; // in the attempt's score (above: > 1)

    std::unique_ptr<Engine> engine_;
};

} // namespace

std::unique_ptr<Backend> makeHarnessBackend(std::unique_ptr<Engine> engine) {
    return std::make_unique<HarnessBackend>(std::move(engine));
}

} // namespace kvscope::gpu::detail
