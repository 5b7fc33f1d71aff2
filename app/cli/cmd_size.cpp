// kvscope-cli size: one deployment, every number, with provenance.
#include "args.h"
#include "command.h"
#include "core/format.h"
#include "size_flags.h"

#include <iostream>

namespace {

int runSize(const kvscope::cli::Args& args) {
    auto in = kvscope::cli::parseSizeFlags(args);
    if (!in.ok())
        return kvscope::cli::fail(in.error().message());
    auto report = kvscope::evaluate(in->model, in->gpu, in->deployment);
    if (!report.ok())
        return kvscope::cli::fail(report.error().message());
    if (in->json)
        std::cout << kvscope::jsonReport(in->model, in->gpu, report.value()) << '\n';
    else
        std::cout << kvscope::textReport(in->model, in->gpu, report.value());
    return 0;
}

} // namespace

KVSCOPE_CLI_COMMAND({"size",
                     "size --model <id|path> [--tp N] [--dcp N] [--h-kv N|latent] [--kv-dtype "
                     "auto|bf16|fp16|fp8|fp32|fp8_ds_mla] [--weight-dtype auto|bf16|fp8] "
                     "[--context S] [--batch B] [--gpu <id|path>] [--gpu-mem-util U] "
                     "[--pool-model vllm|datasheet] [--pool-gib P] [--max-num-batched-tokens N] "
                     "[--block-size N] [--engine vllm[@V]|sglang[@V]] [--pp N] "
                     "[--mem-fraction-static F] [--json]",
                     "Bytes per token, pool, tokens held, concurrency and roofline of one "
                     "deployment",
                     &runSize});
