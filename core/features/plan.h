// Plan a deployment: for a model, a context length and a target concurrency, the smallest
// deployments that fit (GPU type × TP × KV dtype, data-parallel replicas when one TP group is
// not enough), ranked, and why every other candidate fails.
#pragma once

#include "core/law/law.h"
#include "core/model/gpu.h"
#include "core/model/model.h"
#include "core/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope {

struct PlanRequest {
    ModelSpec model;
    std::int64_t context = 8192;   ///< tokens per request (S)
    std::int64_t concurrency = 1;  ///< concurrent requests of S to hold
    std::vector<GpuSpec> gpus;     ///< empty: every GPU preset
    std::vector<KvDtype> kvDtypes; ///< empty: auto + fp8 (+ fp8_ds_mla for an MLA model)
    std::vector<std::int64_t> tps; ///< empty: 1, 2, 4, … up to maxTp, plus every valid TP
    std::int64_t maxTp = 64;
    std::int64_t maxGpus = 1024; ///< candidates needing more GPUs are rejected
    Deployment base;             ///< pool model, util, weight dtype, block size, …
};

/// A deployment that holds the target: `replicas` independent TP groups of `tp` GPUs each.
struct PlanOption {
    std::string gpu; ///< GPU preset id
    std::string gpuName;
    std::int64_t tp = 1;
    std::int64_t replicas = 1;       ///< data-parallel copies of the TP group
    KvDtype kvDtype = KvDtype::Auto; ///< as requested
    std::string kvDtypeResolved;     ///< what Auto became ("bf16")
    std::int64_t gpus = 1;           ///< tp × replicas
    std::int64_t maxConcurrencyPerReplica = 0;
    std::int64_t maxConcurrency = 0; ///< per replica × replicas
    std::int64_t tokensPerReplica = 0;
    double headroom = 0; ///< maxConcurrency / target − 1 (0 = fits exactly)
    std::int64_t poolBytesPerRank = 0;
    std::int64_t cellBytesPerTokenPerRank = 0;
    std::string note; ///< "2 data-parallel replicas of TP=8", replication, …
    Report report;    ///< one replica, batch = its share of the target
};

/// A candidate that does not hold the target, and why in one line.
struct PlanRejection {
    std::string gpu;
    std::int64_t tp = 1;
    KvDtype kvDtype = KvDtype::Auto;
    std::string reason; ///< "invalid-tp", "invalid", "weights-dont-fit", "too-few-tokens",
                        ///< "too-many-gpus"
    std::string detail; ///< the engine's rule or the numbers
};

struct PlanResult {
    PlanRequest request;
    std::vector<PlanOption> options;       ///< best first; every one re-verified with evaluate
    std::vector<PlanRejection> rejections; ///< in candidate order
};

/// Ranks: fewest GPUs, then most headroom, then fewest replicas (one TP group needs no router),
/// then smaller TP, then GPU id and KV dtype for a stable order.
bool planOptionBefore(const PlanOption& a, const PlanOption& b);

/// Runs the planner. Errors only for an unusable request (context, concurrency, lists).
Result<PlanResult> planDeployment(const PlanRequest& request);

/// Re-checks one option with evaluate: one replica at batch = ceil(target / replicas) must fit
/// (max concurrency ≥ that share) under the option's TP and KV dtype.
Status verifyPlanOption(const PlanRequest& request, const GpuSpec& gpu, const PlanOption& option);

/// The KV dtypes planned by default for a model.
std::vector<KvDtype> defaultPlanKvDtypes(const ModelSpec& m);

/// Renderings for `kvscope-cli plan`.
std::string planText(const PlanResult& r, std::size_t maxRejections = 30);
/// {"model","context","concurrency","options":[{gpu,tp,kv_dtype,gpus,max_concurrency,
/// replicas,...}],"rejected":[{gpu,tp,kv_dtype,reason,detail}]}
std::string planJson(const PlanResult& r);
std::string planCsv(const PlanResult& r);
std::string planMarkdown(const PlanResult& r);

} // namespace kvscope
