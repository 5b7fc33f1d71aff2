// kvscope-cli sweep: the size numbers over TP ∈ {1, 2, 4, …} and every valid h_kv.
#include "command.h"
#include "core/features/export.h"
#include "core/format.h"
#include "core/law/step.h"
#include "options.h"
#include "size_flags.h"

#include <iomanip>
#include <iostream>
#include <memory>

namespace {

using kvscope::csvField;

struct SweepArgs {
    kvscope::FieldTexts texts;
    std::int64_t maxTp = 0;            ///< 0: min(query heads, 64)
    std::vector<std::int64_t> batches; ///< --batch 1,2,4,...: the decode-step table instead
    bool csv = false;
};

int runSweep(const SweepArgs& a) {
    auto in = kvscope::cli::resolveSizeInputs(a.texts);
    if (!in.ok())
        return kvscope::cli::fail(in.error().message());
    if (!a.batches.empty()) {
        std::cout << kvscope::stepTable(
            in->model, in->gpu, in->deployment,
            kvscope::stepSweep(in->model, in->gpu, in->deployment, a.batches), a.csv);
        return 0;
    }
    std::int64_t maxTp = a.maxTp;
    if (maxTp == 0)
        maxTp = std::min<std::int64_t>(in->model.qHeads.value, 64);
    const auto rows = kvscope::sweep(in->model, in->gpu, in->deployment, maxTp);
    if (a.csv) {
        std::cout << "tp,variant,kv_heads,kv_heads_per_rank,kv_replicated,cell_bytes_per_token,"
                     "cell_bytes_per_token_per_rank,pool_bytes_per_rank,tokens_capacity,"
                     "max_concurrency,intensity_flop_per_byte,attainable_fraction_of_peak,"
                     "weight_bytes_per_rank,error\n";
        for (const auto& row : rows) {
            std::cout << row.tp << ',' << csvField(row.variant) << ',' << row.kvHeads << ',';
            if (!row.report.ok()) {
                std::cout << ",,,,,,,,,," << csvField(row.report.error().message()) << '\n';
                continue;
            }
            const auto& r = row.report.value();
            std::cout << r.kvHeadsPerRank << ',' << (r.kvReplicated ? "true" : "false") << ','
                      << r.cellBytesPerToken << ',' << r.cellBytesPerTokenPerRank << ','
                      << r.pool.poolBytes << ',' << r.tokensCapacity << ',' << r.maxConcurrency
                      << ',' << kvscope::fixed(r.intensityFlopPerByte, 4) << ','
                      << kvscope::fixed(r.attainableFractionOfPeak, 6) << ','
                      << r.weightBytesPerRank << ',' << csvField(r.fits ? "" : r.noFitReason)
                      << '\n';
        }
        return 0;
    }
    std::cout << "kvscope sweep: " << in->model.name << " on " << in->gpu.name << ", context "
              << kvscope::withCommas(in->deployment.context) << ", pool model "
              << kvscope::toString(in->deployment.poolModel) << "\n\n";
    std::cout << std::left << std::setw(5) << "TP" << std::setw(12) << "variant" << std::setw(8)
              << "KV/rank" << std::setw(12) << "cell/rank" << std::setw(11) << "pool/rank"
              << std::setw(14) << "tokens" << std::setw(9) << "concur." << std::setw(10) << "FLOP/B"
              << "% peak\n";
    for (const auto& row : rows) {
        std::cout << std::left << std::setw(5) << row.tp << std::setw(12) << row.variant;
        if (!row.report.ok()) {
            std::cout << "refused: " << row.report.error().rule << '\n';
            continue;
        }
        const auto& r = row.report.value();
        std::cout << std::setw(8)
                  << (std::to_string(r.kvHeadsPerRank) + (r.kvReplicated ? "*" : ""))
                  << std::setw(12)
                  << kvscope::humanBytes(static_cast<double>(r.cellBytesPerTokenPerRank))
                  << std::setw(11)
                  << (r.pool.poolBytes > 0
                          ? kvscope::humanBytes(static_cast<double>(r.pool.poolBytes))
                          : std::string("none"))
                  << std::setw(14) << kvscope::withCommas(r.tokensCapacity) << std::setw(9)
                  << r.maxConcurrency << std::setw(10) << kvscope::fixed(r.intensityFlopPerByte, 1)
                  << kvscope::fixed(100 * r.attainableFractionOfPeak, 1) << '\n';
    }
    std::cout << "\n* replicated: fewer KV heads than ranks, each rank holds a full copy\n";
    return 0;
}

kvscope::cli::Runner setupSweep(CLI::App& app) {
    auto a = std::make_shared<SweepArgs>();
    // Every size option but --batch, which sweep takes as a list.
    kvscope::cli::addFieldOptions(app, a->texts,
                                  [](const kvscope::Field& f) { return f.key != "batch"; });
    app.add_option("--batch", a->batches,
                   "Batch sizes: print the decode step at --tp for every h_kv and batch")
        ->type_name("B,B,...")
        ->delimiter(',')
        ->check(
            kvscope::cli::integerIn(1, kvscope::kMaxBatch,
                                    "must be a comma-separated list of positive integers up to " +
                                        kvscope::withCommas(kvscope::kMaxBatch)));
    app.add_option("--max-tp", a->maxTp, "Largest TP size to sweep (default: min(heads, 64))")
        ->type_name("N")
        ->check(kvscope::cli::integerIn(
            1, kvscope::kMaxTp, "must be between 1 and " + std::to_string(kvscope::kMaxTp)));
    app.add_flag("--csv", a->csv, "Print CSV, one row per (TP, variant)");
    return [a] { return runSweep(*a); };
}

} // namespace

KVSCOPE_CLI_COMMAND({"sweep",
                     "The size numbers over TP = 1, 2, 4, ... and every valid h_kv; with --batch, "
                     "the decode step at --tp for every h_kv and batch",
                     &setupSweep});
