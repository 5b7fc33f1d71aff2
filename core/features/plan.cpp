#include "core/features/plan.h"

#include "core/features/export.h"
#include "core/format.h"
#include "core/model/presets.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

namespace kvscope {

using nlohmann::json;

namespace {

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

std::vector<std::int64_t> candidateTps(const PlanRequest& req) {
    if (!req.tps.empty()) {
        std::set<std::int64_t> s(req.tps.begin(), req.tps.end());
        return {s.begin(), s.end()};
    }
    std::set<std::int64_t> s;
    for (std::int64_t tp = 1; tp <= req.maxTp; tp *= 2)
        s.insert(tp);
    for (std::int64_t tp : validTpSizes(req.model, req.model.kvHeads.value, req.maxTp))
        s.insert(tp);
    return {s.begin(), s.end()};
}

Deployment candidate(const PlanRequest& req, std::int64_t tp, KvDtype kv, std::int64_t batch) {
    Deployment d = req.base;
    d.tp = tp;
    d.dcp = 1;
    d.kvHeads.reset();
    d.kvDtype = kv;
    d.context = req.context;
    d.batch = batch;
    return d;
}

} // namespace

std::vector<KvDtype> defaultPlanKvDtypes(const ModelSpec& m) {
    std::vector<KvDtype> out = {KvDtype::Auto, KvDtype::FP8};
    if (m.mla)
        out.push_back(KvDtype::FP8DsMla);
    return out;
}

bool planOptionBefore(const PlanOption& a, const PlanOption& b) {
    if (a.gpus != b.gpus)
        return a.gpus < b.gpus;
    if (a.headroom != b.headroom)
        return a.headroom > b.headroom;
    if (a.replicas != b.replicas)
        return a.replicas < b.replicas;
    if (a.tp != b.tp)
        return a.tp < b.tp;
    if (a.gpu != b.gpu)
        return a.gpu < b.gpu;
    return a.kvDtypeResolved < b.kvDtypeResolved;
}

Status verifyPlanOption(const PlanRequest& req, const GpuSpec& gpu, const PlanOption& o) {
    if (o.replicas < 1 || o.tp < 1 || o.gpus != o.tp * o.replicas)
        return makeError("gpus", "must be tp × replicas");
    const std::int64_t share = ceilDiv(req.concurrency, o.replicas);
    auto r = evaluate(req.model, gpu, candidate(req, o.tp, o.kvDtype, share));
    if (!r.ok())
        return r.error();
    if (r->maxConcurrency < share)
        return makeError("max_concurrency", "one replica holds " +
                                                std::to_string(r->maxConcurrency) +
                                                " requests, needs " + std::to_string(share));
    if (r->maxConcurrency * o.replicas < req.concurrency)
        return makeError("max_concurrency", "the replicas do not reach the target");
    return Ok{};
}

namespace {

/// Checks the request's ranges and fills in the defaults: every GPU preset, the model's default
/// KV dtypes.
Status completeRequest(PlanRequest& req) {
    if (req.context < 1 || req.context > kMaxContext)
        return makeError("context", "must be a positive integer of at most " +
                                        std::to_string(kMaxContext) + " tokens");
    if (req.concurrency < 1 || req.concurrency > kMaxBatch)
        return makeError("concurrency",
                         "must be a positive integer of at most " + std::to_string(kMaxBatch));
    if (req.maxTp < 1 || req.maxTp > kMaxTp)
        return makeError("max-tp", "must be in [1, " + std::to_string(kMaxTp) + "]");
    if (req.maxGpus < 1)
        return makeError("max-gpus", "must be a positive integer");
    if (req.gpus.empty()) {
        for (const auto& p : gpuPresets()) {
            auto g = loadGpu(p.id);
            if (!g.ok())
                return makeError("gpus", "preset " + p.id + ": " + g.error().message());
            req.gpus.push_back(g.value());
        }
        if (req.gpus.empty())
            return makeError("gpus", "no GPU presets are bundled; pass --gpus");
    }
    if (req.kvDtypes.empty())
        req.kvDtypes = defaultPlanKvDtypes(req.model);
    for (std::int64_t tp : req.tps)
        if (tp < 1 || tp > kMaxTp)
            return makeError("tp", "must be in [1, " + std::to_string(kMaxTp) + "]");
    return Ok{};
}

/// One TP group of a candidate at one request, or why the candidate cannot hold the target:
/// the engines' rules, weights that leave no pool, a pool too small for one request, or more
/// replicas than --max-gpus allows.
struct SizedCandidate {
    std::optional<Report> report; ///< set when the candidate holds the target
    std::int64_t replicas = 0;
    PlanRejection rejection;
};

SizedCandidate sizeCandidate(const PlanRequest& req, const GpuSpec& gpu, std::int64_t tp,
                             KvDtype kv) {
    SizedCandidate c{std::nullopt, 0, PlanRejection{gpu.id, tp, kv, {}, {}}};
    PlanRejection& rej = c.rejection;
    const Deployment one = candidate(req, tp, kv, 1);
    if (auto ok = validate(req.model, gpu, one); !ok.ok()) {
        rej.reason = ok.error().field == "tp" ? "invalid-tp" : "invalid";
        rej.detail = ok.error().message();
        return c;
    }
    auto r = evaluate(req.model, gpu, one);
    if (!r.ok()) {
        rej.reason = "invalid";
        rej.detail = r.error().message();
        return c;
    }
    const PoolBreakdown& pool = r->pool;
    if (pool.poolBytes <= 0) {
        rej.reason = "weights-dont-fit";
        const double overhead = double(pool.activationPeakBytes + pool.nonTorchBytes());
        rej.detail = "weights " + humanBytes(double(pool.weightBytes)) + " per rank" +
                     (overhead > 0 ? " (+ " + humanBytes(overhead) + " activations and non-torch)"
                                   : std::string()) +
                     " exceed util × memory " + humanBytes(double(pool.budgetBytes));
        return c;
    }
    if (r->maxConcurrency < 1) {
        rej.reason = "too-few-tokens";
        rej.detail = "one request of " + withCommas(req.context) + " tokens needs " +
                     humanBytes(double(r->requestBytesPerRank)) + " per rank; the pool holds " +
                     humanBytes(double(pool.poolBytes)) + " (" + withCommas(r->tokensCapacity) +
                     " tokens)";
        return c;
    }
    const std::int64_t replicas = ceilDiv(req.concurrency, r->maxConcurrency);
    if (replicas > req.maxGpus || tp * replicas > req.maxGpus) {
        rej.reason = "too-many-gpus";
        rej.detail = "one TP group holds " + withCommas(r->maxConcurrency) + " requests; " +
                     withCommas(req.concurrency) + " need " + std::to_string(replicas) +
                     " replicas, over --max-gpus " + std::to_string(req.maxGpus);
        return c;
    }
    c.report = std::move(r).value();
    c.replicas = replicas;
    return c;
}

/// The option `replicas` TP groups of a sized candidate make, with its note (data-parallel
/// replicas, replicated KV heads).
PlanOption makeOption(const PlanRequest& req, const GpuSpec& gpu, std::int64_t tp, KvDtype kv,
                      const Report& r, std::int64_t replicas) {
    PlanOption o;
    o.gpu = gpu.id;
    o.gpuName = gpu.name;
    o.tp = tp;
    o.replicas = replicas;
    o.kvDtype = kv;
    o.kvDtypeResolved = toString(r.kvDtype);
    o.gpus = tp * replicas;
    o.maxConcurrencyPerReplica = r.maxConcurrency;
    o.maxConcurrency = r.maxConcurrency * replicas;
    o.tokensPerReplica = r.tokensCapacity;
    o.headroom = double(o.maxConcurrency) / double(req.concurrency) - 1.0;
    o.poolBytesPerRank = r.pool.poolBytes;
    o.cellBytesPerTokenPerRank = r.cellBytesPerTokenPerRank;
    if (replicas > 1)
        o.note = std::to_string(replicas) + " data-parallel replicas of TP=" + std::to_string(tp) +
                 " (" + withCommas(r.maxConcurrency) +
                 (r.maxConcurrency == 1 ? " request each)" : " requests each)");
    if (r.kvReplicated && !req.model.mla)
        o.note += std::string(o.note.empty() ? "" : "; ") + "KV heads replicated ×" +
                  std::to_string(r.kvCopies) + " past h_kv";
    return o;
}

/// One candidate into `out`: its rejection, or its option once re-verified with the share of
/// the target each replica carries. A candidate whose KV dtype resolves to one already planned
/// for the same GPU and TP is skipped.
void planCandidate(const PlanRequest& req, const GpuSpec& gpu, std::int64_t tp, KvDtype kv,
                   PlanResult& out) {
    SizedCandidate c = sizeCandidate(req, gpu, tp, kv);
    if (!c.report) {
        out.rejections.push_back(c.rejection);
        return;
    }
    PlanOption o = makeOption(req, gpu, tp, kv, *c.report, c.replicas);
    const bool duplicate =
        std::any_of(out.options.begin(), out.options.end(), [&](const PlanOption& x) {
            return x.gpu == o.gpu && x.tp == o.tp && x.kvDtypeResolved == o.kvDtypeResolved;
        });
    if (duplicate)
        return;
    auto share =
        evaluate(req.model, gpu, candidate(req, tp, kv, ceilDiv(req.concurrency, c.replicas)));
    if (!share.ok())
        return;
    o.report = share.value();
    if (!verifyPlanOption(req, gpu, o).ok())
        return;
    out.options.push_back(std::move(o));
}

} // namespace

Result<PlanResult> planDeployment(const PlanRequest& reqIn) {
    PlanRequest req = reqIn;
    if (auto s = completeRequest(req); !s.ok())
        return s.error();
    PlanResult out;
    out.request = req;
    for (const GpuSpec& gpu : req.gpus)
        for (KvDtype kv : req.kvDtypes)
            for (std::int64_t tp : candidateTps(req))
                planCandidate(req, gpu, tp, kv, out);
    std::stable_sort(out.options.begin(), out.options.end(), planOptionBefore);
    return out;
}

namespace {

std::string headroomText(double h) {
    return (h >= 0 ? "+" : "") + fixed(100.0 * h, 1) + " %";
}

std::string reasonLabel(const std::string& r) {
    if (r == "invalid-tp")
        return "invalid TP";
    if (r == "weights-dont-fit")
        return "weights don't fit";
    if (r == "too-few-tokens")
        return "too few tokens";
    if (r == "too-many-gpus")
        return "too many GPUs";
    return "invalid";
}

std::string requestLine(const PlanResult& r) {
    const Deployment& b = r.request.base;
    std::string s = r.request.model.name + ": " + withCommas(r.request.concurrency) +
                    " concurrent requests of " + withCommas(r.request.context) +
                    " tokens (pool model " + toString(b.poolModel) + ", util " +
                    fixed(b.gpuMemUtil, 2);
    if (b.poolGiB)
        s += ", pool fixed at " + fixed(*b.poolGiB, 1) + " GiB per rank";
    return s + ")";
}

} // namespace

std::string planText(const PlanResult& r, std::size_t maxRejections) {
    std::ostringstream out;
    out << requestLine(r) << "\n\n";
    if (r.options.empty()) {
        out << "No deployment fits.\n";
    } else {
        out << "Deployments that fit, best first:\n";
        out << "  #  GPU               TP  replicas  KV dtype    GPUs  max concurrency  headroom\n";
        std::size_t i = 0;
        for (const auto& o : r.options) {
            char line[256];
            std::snprintf(line, sizeof line, "%3zu  %-16s %3lld  %8lld  %-10s %5lld  %15s  %8s",
                          ++i, o.gpu.c_str(), static_cast<long long>(o.tp),
                          static_cast<long long>(o.replicas), o.kvDtypeResolved.c_str(),
                          static_cast<long long>(o.gpus), withCommas(o.maxConcurrency).c_str(),
                          headroomText(o.headroom).c_str());
            out << line;
            if (!o.note.empty())
                out << "  " << o.note;
            out << "\n";
        }
    }
    if (!r.rejections.empty()) {
        out << "\nWhy the others fail (" << r.rejections.size() << "):\n";
        std::size_t shown = 0;
        for (const auto& x : r.rejections) {
            if (shown++ == maxRejections) {
                out << "  … " << (r.rejections.size() - maxRejections)
                    << " more (use --json for all)\n";
                break;
            }
            out << "  " << x.gpu << " TP=" << x.tp << " " << toString(x.kvDtype) << ": "
                << reasonLabel(x.reason) << " — " << x.detail << "\n";
        }
    }
    return out.str();
}

std::string planJson(const PlanResult& r) {
    json j = json::object();
    j["model"] = r.request.model.name;
    j["context"] = r.request.context;
    j["concurrency"] = r.request.concurrency;
    j["pool_model"] = toString(r.request.base.poolModel);
    j["util"] = r.request.base.gpuMemUtil;
    json options = json::array();
    for (const auto& o : r.options) {
        json e = json::object();
        e["gpu"] = o.gpu;
        e["tp"] = o.tp;
        e["kv_dtype"] = o.kvDtypeResolved;
        e["kv_dtype_requested"] = toString(o.kvDtype);
        e["gpus"] = o.gpus;
        e["max_concurrency"] = o.maxConcurrency;
        e["replicas"] = o.replicas;
        e["dcp"] = 1;
        e["max_concurrency_per_replica"] = o.maxConcurrencyPerReplica;
        e["tokens_per_replica"] = o.tokensPerReplica;
        e["headroom"] = o.headroom;
        e["pool_bytes_per_rank"] = o.poolBytesPerRank;
        e["cell_bytes_per_token_per_rank"] = o.cellBytesPerTokenPerRank;
        e["note"] = o.note;
        options.push_back(e);
    }
    j["options"] = options;
    json rejected = json::array();
    for (const auto& x : r.rejections)
        rejected.push_back({{"gpu", x.gpu},
                            {"tp", x.tp},
                            {"kv_dtype", toString(x.kvDtype)},
                            {"reason", x.reason},
                            {"detail", x.detail}});
    j["rejected"] = rejected;
    return j.dump(2) + "\n";
}

std::string planCsv(const PlanResult& r) {
    std::ostringstream out;
    out << "rank,gpu,tp,replicas,kv_dtype,gpus,max_concurrency,headroom,note\n";
    std::size_t i = 0;
    for (const auto& o : r.options)
        out << ++i << ',' << csvField(o.gpu) << ',' << o.tp << ',' << o.replicas << ','
            << o.kvDtypeResolved << ',' << o.gpus << ',' << o.maxConcurrency << ','
            << fixed(o.headroom, 4) << ',' << csvField(o.note) << '\n';
    return out.str();
}

std::string planMarkdown(const PlanResult& r) {
    std::ostringstream out;
    out << "### " << markdownCell(requestLine(r)) << "\n\n";
    out << "| # | GPU | TP | Replicas | KV dtype | GPUs | Max concurrency | Headroom | Note |\n";
    out << "|---:|---|---:|---:|---|---:|---:|---:|---|\n";
    std::size_t i = 0;
    for (const auto& o : r.options)
        out << "| " << ++i << " | " << markdownCell(o.gpu) << " | " << o.tp << " | " << o.replicas
            << " | " << o.kvDtypeResolved << " | " << o.gpus << " | "
            << withCommas(o.maxConcurrency) << " | " << headroomText(o.headroom) << " | "
            << markdownCell(o.note) << " |\n";
    if (!r.rejections.empty()) {
        out << "\n| GPU | TP | KV dtype | Why it fails |\n|---|---:|---|---|\n";
        for (const auto& x : r.rejections)
            out << "| " << markdownCell(x.gpu) << " | " << x.tp << " | " << toString(x.kvDtype)
                << " | " << reasonLabel(x.reason) << ": " << markdownCell(x.detail) << " |\n";
    }
    return out.str();
}

} // namespace kvscope
