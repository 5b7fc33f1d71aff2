// kvscope-cli measure: run the model's attention variants on a measurement backend (CPU or
// CUDA), check each against the double-precision reference, time it, and place it against the
// measured ceilings (read bandwidth and arithmetic peak).
#include "command.h"
#include "core/law/law.h"
#include "core/model/model.h"
#include "core/model/presets.h"
#include "gpu/backend.h"
#include "gpu/measure_table.h"
#include "gpu/measurement_json.h"
#include "gpu/measureplan.h"
#include "gpu/step.h"
#include "options.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::cli {
namespace {

using Planned = PlannedShape;
using gpu::fmt; // the measurement table's cell formatting (gpu/measure_table.h)
using gpu::pad;

/// The coverage set of --self-check without --model: every kernel, knob and dtype the
/// backend takes, odd group sizes and contexts (padding, masking), split and unsplit grids.
std::vector<Planned> coverageShapes(const std::string& backend) {
    std::vector<Planned> out;
    const std::vector<gpu::KvDtype> dtypes =
        backend == "cuda" ? std::vector<gpu::KvDtype>{gpu::KvDtype::Bf16, gpu::KvDtype::Fp16,
                                                      gpu::KvDtype::Fp8E4m3}
                          : std::vector<gpu::KvDtype>{gpu::KvDtype::Bf16, gpu::KvDtype::Fp16,
                                                      gpu::KvDtype::Fp8E4m3, gpu::KvDtype::Fp32};
    struct G {
        std::int64_t batch, h, hkv, d, s;
    };
    const std::vector<G> gqa = {
        {1, 32, 32, 128, 1000}, // MHA, g = 1
        {2, 32, 8, 128, 4097},  // GQA-8 (g = 4), context not a multiple of any tile
        {1, 32, 1, 128, 3000},  // MQA, g = 32
        {1, 12, 2, 64, 777},    // g = 6: padded M tile
        {1, 40, 2, 128, 2048},  // g = 20: two M tiles, one partial
        {1, 64, 1, 64, 1500},   // g = 64
        {1, 128, 1, 128, 1024}, // g = 128: two M tiles per warp
        {1, 16, 2, 256, 1300},  // head dim 256
        {1, 64, 1, 256, 600},   // head dim 256, g = 64
        {64, 32, 8, 128, 512},  // many blocks: no split
        {3, 8, 8, 64, 5},       // tiny context
    };
    for (gpu::KvDtype dt : dtypes) {
        for (const G& g : gqa) {
            Planned p;
            p.shape.kind = gpu::Attention::Gqa;
            p.shape.batch = g.batch;
            p.shape.qHeads = g.h;
            p.shape.kvHeads = g.hkv;
            p.shape.headDim = g.d;
            p.shape.context = g.s;
            p.shape.dtype = dt;
            p.variant = g.hkv == g.h ? "MHA"
                        : g.hkv == 1 ? "MQA"
                                     : "GQA-" + std::to_string(g.hkv); // KV groups
            out.push_back(p);
        }
        for (auto [b, h, s] : std::vector<std::array<std::int64_t, 3>>{
                 {1, 16, 2000}, {2, 128, 1100}, {1, 20, 333}, {40, 16, 300}}) {
            Planned p;
            p.shape.kind = gpu::Attention::Mla;
            p.shape.batch = b;
            p.shape.qHeads = h;
            p.shape.kvHeads = 1;
            p.shape.context = s;
            p.shape.dtype = dt;
            p.variant = "MLA";
            out.push_back(p);
        }
    }
    return out;
}

struct MeasureArgs {
    std::string backend = "cpu", model, tp, context, batch, kvDtype = "bf16", sweep = "variants",
                json;
    bool selfCheck = false;
    bool step = false; ///< --step: the whole decode step; --batch is then a list
};

/// first, 2 first, 4 first, ... while below `last`, then `last` (the sweep's points).
std::vector<std::int64_t> doublingTo(std::int64_t first, std::int64_t last) {
    std::vector<std::int64_t> out;
    for (std::int64_t v = first; v < last; v *= 2)
        out.push_back(v);
    out.push_back(last);
    return out;
}

std::optional<std::int64_t> number(const std::string& text) {
    if (text.empty())
        return std::nullopt;
    return std::stoll(text); // the schema's validator checked it
}

/// `measure --step`: the whole decode step of a scaled layer stack of the model (its real
/// per-rank shapes) at each batch of `--batch 1,4,16`, against the step roof.
int runStepMeasure(const MeasureArgs& a, std::int64_t tpSize, std::int64_t context,
                   gpu::KvDtype dtype) {
    const std::string& backendName = a.backend;
    if (a.model.empty())
        return fail("--model: required (a preset id or a config.json path)");
    std::vector<std::int64_t> batches;
    {
        const std::string list = a.batch.empty() ? "1,4,16" : a.batch;
        std::size_t at = 0;
        while (at <= list.size()) {
            const std::size_t comma = std::min(list.find(',', at), list.size());
            const std::string item = list.substr(at, comma - at);
            const auto b = wholeInteger(item);
            if (!b || *b < 1 || *b > kMaxBatch)
                return fail("--batch: with --step, a comma-separated list of batch sizes between "
                            "1 and " +
                            std::to_string(kMaxBatch) + ", got '" + list + "'");
            batches.push_back(*b);
            at = comma + 1;
        }
    }
    auto loaded = loadModel(a.model);
    if (!loaded.ok())
        return fail(loaded.error().message());
    const ModelSpec& m = loaded.value();
    std::string why;
    auto backend = gpu::makeStepBackend(backendName, &why);
    if (!backend)
        return fail(why);
    std::vector<gpu::StepShape> shapes;
    for (std::int64_t b : batches) {
        const PlannedStep p = planStep(m, tpSize, context, b, dtype);
        if (!p.skip.empty())
            return fail("--step: " + m.name + ": " + p.skip);
        if (auto e = backend->supports(p.shape); !e.empty())
            return fail("--step: " + e);
        shapes.push_back(p.shape);
    }
    const auto devices = backend->devices();
    gpu::MeasurementSet set;
    set.backend = backendName;
    set.device = devices.empty() ? backendName : devices.front().name;
    set.model = m.name;
    set.ceilings = backend->measureCeilings();
    if (!set.ceilings.ok)
        return fail("ceilings: " + set.ceilings.error);
    std::cout << "backend " << backendName << " on " << set.device << ", model " << m.name
              << " at TP=" << tpSize << ", decode step of " << shapes.front().layers << " of "
              << shapes.front().modelLayers << " layers (scaled), S=" << context << "\n"
              << gpu::formatCeilings(set.ceilings, gpu::KvDtype::Bf16) << "\n";
    int failures = 0;
    for (const gpu::StepShape& s : shapes) {
        gpu::StepMeasurement r = backend->measureStep(s);
        failures += !r.ok;
        set.steps.push_back(r);
        std::cout << "  " << gpu::describe(s) << "  " << r.kernel << "\n" << std::flush;
    }
    std::cout << gpu::stepTable(set.steps);
    if (!a.json.empty()) {
        std::string err;
        if (!gpu::saveMeasurementJson(set, a.json, &err))
            return fail("--json: " + err);
        std::cout << "wrote " << a.json << "\n";
    }
    return failures ? 1 : 0;
}

/// --sweep variants: every KV layout of the model at one shape; context: 1024, 2048, ... up to
/// `context`; batch: 1, 2, 4, ... up to `maxBatch`.
std::vector<Planned> sweepShapes(const ModelSpec& m, const std::string& sweep, std::int64_t tpSize,
                                 std::int64_t context, std::int64_t batch, std::int64_t maxBatch,
                                 gpu::KvDtype dtype) {
    std::vector<Planned> plan;
    if (sweep == "variants") {
        plan = variantShapes(m, tpSize, context, batch, dtype);
    } else if (sweep == "context") {
        for (std::int64_t s : doublingTo(1024, context))
            plan.push_back(naturalShape(m, tpSize, s, batch, dtype));
    } else {
        for (std::int64_t b : doublingTo(1, maxBatch))
            plan.push_back(naturalShape(m, tpSize, context, b, dtype));
    }
    return plan;
}

/// Marks the shapes `backend` cannot take (reported, not run); "" when at least one is left,
/// else the first reason (none at all is invalid input).
std::string markUnsupported(gpu::Backend& backend, std::vector<Planned>& plan) {
    std::size_t runnable = 0;
    std::string firstReason;
    for (Planned& p : plan) {
        if (p.skip.empty())
            p.skip = backend.supports(p.shape);
        if (p.skip.empty())
            ++runnable;
        else if (firstReason.empty())
            firstReason = p.variant + ": " + p.skip;
    }
    if (runnable > 0)
        return {};
    return firstReason.empty() ? "nothing to measure" : firstReason;
}

/// --self-check: each shape against the double-precision reference, one line each; exit 1 when
/// any fails.
int printSelfCheck(gpu::Backend& backend, const std::vector<Planned>& plan) {
    int failures = 0;
    std::cout << pad("variant", 8, false) << "  " << pad("shape", 40, false) << pad("kernel", 26)
              << pad("splits", 7) << pad("max rel err", 13) << pad("bound", 9) << "  result\n";
    for (const Planned& p : plan) {
        if (!p.skip.empty()) {
            std::cout << pad(p.variant, 8, false) << "  " << pad(gpu::describe(p.shape), 40, false)
                      << "  skipped: " << p.skip << "\n";
            continue;
        }
        const gpu::Measurement m = backend.selfCheck(p.shape);
        if (!m.ok)
            ++failures;
        std::cout << pad(p.variant, 8, false) << "  " << pad(gpu::describe(p.shape), 40, false)
                  << pad(m.kernel, 26) << pad(std::to_string(m.splits), 7)
                  << pad(fmt("%.2e", m.maxRelError), 13) << pad(fmt("%.0e", m.errorBound), 9)
                  << "  " << (m.ok ? "PASS" : "FAIL: " + m.error) << "\n";
    }
    std::cout << "\nself-check: " << (plan.size() - failures) << " checked, " << failures
              << " failed\n";
    return failures ? 1 : 0;
}

/// Times each shape into `set` and prints the table; writes `jsonPath` when given. Exit 1 when
/// a point fails.
int printMeasureTable(gpu::Backend& backend, std::vector<Planned>& plan, gpu::MeasurementSet& set,
                      const std::string& jsonPath) {
    int failures = 0;
    std::cout << gpu::measureTableHeader();
    for (Planned& p : plan) {
        if (!p.skip.empty()) {
            std::cout << gpu::measureTableRow(p.variant, p.shape, nullptr, "skipped: " + p.skip,
                                              set.ceilings);
            continue;
        }
        gpu::Measurement m = backend.measure(p.shape);
        m.variant = p.variant;
        if (!m.ok) {
            ++failures;
            std::cout << gpu::measureTableRow(p.variant, p.shape, nullptr, "FAIL: " + m.error,
                                              set.ceilings);
            continue;
        }
        std::cout << gpu::measureTableRow(p.variant, p.shape, &m, "", set.ceilings) << std::flush;
        set.points.push_back(m);
    }
    std::cout << gpu::measureTableFooter(set.points, set.ceilings);

    if (const std::optional<std::string> path =
            jsonPath.empty() ? std::nullopt : std::optional<std::string>(jsonPath)) {
        std::string err;
        if (!gpu::saveMeasurementJson(set, *path, &err))
            return fail("--json: " + err);
        std::cout << "wrote " << *path << "\n";
    }
    return failures ? 1 : 0;
}

/// The first lines: backend, device, model and TP, then the ceilings measured (not for
/// --self-check, which measures none).
void printMeasureBanner(const gpu::MeasurementSet& set, std::int64_t tpSize, bool selfCheckOnly,
                        gpu::KvDtype dtype) {
    std::cout << "backend " << set.backend << " on " << set.device;
    if (!set.model.empty())
        std::cout << ", model " << set.model << " at TP=" << tpSize;
    std::cout << "\n";
    if (!selfCheckOnly) {
        std::cout << gpu::formatCeilings(set.ceilings, dtype);
        if (!set.ceilings.error.empty())
            std::cout << "[" << set.ceilings.error << "]\n";
        std::cout << "\n";
    }
}

/// The flags of a measure run that times or checks attention shapes (not --step), checked, with
/// the backend's defaults filled in.
struct MeasureFlags {
    std::string backend;
    std::int64_t tp = 1, context = 0, batch = 0;
    std::optional<std::int64_t> batchFlag; ///< --batch as given: also the batch sweep's end
    gpu::KvDtype dtype = gpu::KvDtype::Bf16;
    std::string sweep;
    std::optional<std::string> model;
};

/// --kv-dtype as a KV dtype. 0, or the exit status of the one error line printed.
int readKvDtype(const MeasureArgs& a, gpu::KvDtype& out) {
    const auto dtype = gpu::parseDtype(a.kvDtype);
    if (!dtype)
        return fail("--kv-dtype: unknown '" + a.kvDtype + "' (bf16, fp16, fp8_e4m3 or fp32)");
    out = *dtype;
    return 0;
}

/// Checks the flags in the order the errors are reported. 0, or the exit status of the one error
/// line printed.
int readMeasureFlags(const MeasureArgs& a, MeasureFlags& f) {
    f.backend = a.backend;
    if (!a.batch.empty()) {
        std::string text = a.batch;
        if (auto why = fieldValidator(*findField("batch", FieldGroup::Deployment))(text);
            !why.empty())
            return fail("--batch: " + why);
    }
    f.batchFlag = number(a.batch);
    f.tp = number(a.tp).value_or(1);
    if (f.tp < 1 || f.tp > kMaxTp)
        return fail("--tp: must be between 1 and " + std::to_string(kMaxTp));
    const bool cuda = f.backend == "cuda";
    f.context = number(a.context).value_or(cuda ? 8192 : 4096);
    if (f.context < 1 || f.context > kMaxContext)
        return fail("--context: must be between 1 and " + std::to_string(kMaxContext) + " tokens");
    f.batch = f.batchFlag.value_or(cuda ? 16 : 1);
    if (f.batch < 1 || f.batch > kMaxBatch)
        return fail("--batch: must be between 1 and " + std::to_string(kMaxBatch));
    if (int rc = readKvDtype(a, f.dtype); rc != 0)
        return rc;
    f.sweep = a.sweep;
    if (f.sweep != "variants" && f.sweep != "context" && f.sweep != "batch")
        return fail("--sweep: must be variants, context or batch, got '" + f.sweep + "'");
    if (!a.model.empty())
        f.model = a.model;
    if (!f.model && !a.selfCheck)
        return fail("--model: required (a preset id or a config.json path)");
    return 0;
}

/// The shapes to run: the model's sweep, or without --model the coverage set of --self-check.
/// Sets `modelName`. 0, or the exit status of the one error line printed.
int planMeasureShapes(const MeasureFlags& f, std::vector<Planned>& plan, std::string& modelName) {
    if (!f.model) {
        plan = coverageShapes(f.backend);
        return 0;
    }
    auto loaded = loadModel(*f.model);
    if (!loaded.ok())
        return fail(loaded.error().message());
    const ModelSpec& m = loaded.value();
    modelName = m.name;
    const std::int64_t h = m.qHeads.value;
    if (h % f.tp != 0)
        return fail("--tp: " + std::to_string(f.tp) + " does not divide the " + std::to_string(h) +
                    " query heads of " + m.name);
    const std::int64_t maxBatch = f.batchFlag.value_or(f.backend == "cuda" ? 64 : 8);
    plan = sweepShapes(m, f.sweep, f.tp, f.context, f.batch, maxBatch, f.dtype);
    return 0;
}

int runMeasure(const MeasureArgs& a) {
    const std::string backendName = a.backend;
    if (backendName != "cpu" && backendName != "cuda")
        return fail("--backend: must be cpu or cuda, got '" + backendName + "'");
    if (a.step) {
        gpu::KvDtype dt{};
        if (int rc = readKvDtype(a, dt); rc != 0)
            return rc;
        return runStepMeasure(a, number(a.tp).value_or(1), number(a.context).value_or(4096), dt);
    }
    MeasureFlags f;
    if (int rc = readMeasureFlags(a, f); rc != 0)
        return rc;
    std::vector<Planned> plan;
    std::string modelName;
    if (int rc = planMeasureShapes(f, plan, modelName); rc != 0)
        return rc;

    std::string why;
    auto backend = gpu::makeBackend(backendName, &why);
    if (!backend)
        return fail(why);
    const auto devices = backend->devices();
    const std::string deviceName = devices.empty() ? backendName : devices.front().name;

    // Shapes the backend cannot take are reported, not run; none at all is invalid input.
    if (const std::string none = markUnsupported(*backend, plan); !none.empty())
        return fail(none);

    const bool selfCheckOnly = a.selfCheck;
    gpu::MeasurementSet set;
    set.backend = backendName;
    set.device = deviceName;
    set.model = modelName;
    if (!selfCheckOnly) {
        set.ceilings = backend->measureCeilings();
        if (!set.ceilings.ok)
            return fail("ceilings: " + set.ceilings.error);
    }

    printMeasureBanner(set, f.tp, selfCheckOnly, f.dtype);
    if (selfCheckOnly)
        return printSelfCheck(*backend, plan);
    return printMeasureTable(*backend, plan, set, a.json);
}

Runner setupMeasure(CLI::App& app) {
    auto a = std::make_shared<MeasureArgs>();
    app.add_option("--backend", a->backend, "Measurement backend")
        ->type_name("cpu|cuda")
        ->default_str("cpu");
    app.add_option("--model", a->model, findField("model")->help)->type_name("ID|PATH");
    auto schemaOption = [&](const char* key, std::string& target, const char* defaults) {
        const Field& f = *findField(key, FieldGroup::Deployment);
        app.add_option(f.flag, target, f.help)
            ->type_name("N")
            ->check(fieldValidator(f))
            ->default_str(defaults);
    };
    schemaOption("tp", a->tp, "1");
    schemaOption("context", a->context, "cpu 4096, cuda 8192");
    app.add_option("--batch", a->batch,
                   findField("batch", FieldGroup::Deployment)->help +
                       "; with --step, a comma-separated list")
        ->type_name("N|LIST")
        ->default_str("cpu 1, cuda 16; --step 1,4,16");
    app.add_option("--kv-dtype", a->kvDtype, "KV dtype the kernels read")
        ->type_name("bf16|fp16|fp8_e4m3|fp32")
        ->default_str("bf16");
    app.add_option("--sweep", a->sweep, "What to vary")
        ->type_name("variants|context|batch")
        ->default_str("variants");
    app.add_option("--json", a->json, "Write the measurements (kvscope --measurements FILE)")
        ->type_name("FILE");
    app.add_flag("--self-check", a->selfCheck,
                 "Check every kernel against the double-precision reference, no timing "
                 "(--model optional)");
    app.add_flag("--step", a->step,
                 "Time the whole decode step of a scaled layer stack of the model at each batch "
                 "of --batch, against the step roof");
    return [a] { return runMeasure(*a); };
}

} // namespace

KVSCOPE_CLI_COMMAND({"measure",
                     "Time decode attention of a model's variants against the measured ceilings",
                     &setupMeasure});

} // namespace kvscope::cli
