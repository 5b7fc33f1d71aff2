// kvscope-cli sweep: the size numbers over TP ∈ {1, 2, 4, …} and every valid h_kv.
#include "args.h"
#include "command.h"
#include "core/format.h"
#include "core/step.h"
#include "size_flags.h"

#include <iomanip>
#include <iostream>

namespace {

std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos)
        return s;
    std::string out = "\"";
    for (char c : s)
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

int runSweep(const kvscope::cli::Args& args) {
    std::vector<std::string> rest;
    std::int64_t maxTp = 0;
    std::vector<std::int64_t> batches; // --batch 1,2,4,...: the decode-step table instead
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--max-tp" && i + 1 < args.size()) {
            kvscope::cli::ArgParser p({"--max-tp"}, {});
            p.parse({args[i], args[i + 1]});
            auto v = p.integer("--max-tp");
            if (!p.ok())
                return kvscope::cli::fail(p.error());
            if (!v || *v < 1 || *v > kvscope::kMaxTp)
                return kvscope::cli::fail("--max-tp: must be between 1 and " +
                                          std::to_string(kvscope::kMaxTp));
            maxTp = *v;
            ++i;
        } else if (args[i] == "--batch" && i + 1 < args.size()) {
            std::string list = args[++i];
            for (std::size_t at = 0; at <= list.size();) {
                const std::size_t comma = std::min(list.find(',', at), list.size());
                kvscope::cli::ArgParser p({"--batch"}, {});
                p.parse({"--batch", list.substr(at, comma - at)});
                auto v = p.integer("--batch");
                if (!p.ok() || !v || *v < 1 || *v > kvscope::kMaxBatch)
                    return kvscope::cli::fail("--batch: must be a comma-separated list of "
                                              "positive integers up to " +
                                              kvscope::withCommas(kvscope::kMaxBatch));
                batches.push_back(*v);
                at = comma + 1;
            }
        } else {
            rest.push_back(args[i]);
        }
    }
    auto in = kvscope::cli::parseSizeFlags(rest, {"--csv"});
    if (!in.ok())
        return kvscope::cli::fail(in.error().message());
    if (!batches.empty()) {
        std::cout << kvscope::stepTable(
            in->model, in->gpu, in->deployment,
            kvscope::stepSweep(in->model, in->gpu, in->deployment, batches), in->csv);
        return 0;
    }
    if (maxTp == 0)
        maxTp = std::min<std::int64_t>(in->model.qHeads.value, 64);
    const auto rows = kvscope::sweep(in->model, in->gpu, in->deployment, maxTp);
    if (in->csv) {
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

} // namespace

KVSCOPE_CLI_COMMAND(
    {"sweep", "sweep --model <id|path> [size flags] [--max-tp N] [--batch 1,2,4,...] [--csv]",
     "The size numbers over TP = 1, 2, 4, ... and every valid h_kv; with --batch, "
     "the decode step at --tp for every h_kv and batch",
     &runSweep});
