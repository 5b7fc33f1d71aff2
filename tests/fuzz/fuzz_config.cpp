// libFuzzer target: any bytes through the config parser, then the law over a few deployments.
// Property: never crash, never hang, never throw; an error is a one-line value.
#include "core/law/law.h"
#include "core/model/model.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

kvscope::GpuSpec h100() {
    kvscope::GpuSpec g;
    g.id = "h100";
    g.name = "H100";
    g.memoryBytes = 80'000'000'000;
    g.driverMemoryBytes = 85'031'714'816;
    g.bandwidthBytesPerS = 3.35e12;
    g.peakBf16FlopPerS = 989.4e12;
    g.peakFp32FlopPerS = 66.9e12;
    return g;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto m = kvscope::parseModelConfig(text, "fuzz");
    if (!m.ok()) {
        if (m.error().message().find('\n') != std::string::npos)
            std::abort();
        return 0;
    }
    static const kvscope::GpuSpec gpu = h100();
    for (std::int64_t tp : {1, 2, 8, 16}) {
        kvscope::Deployment d;
        d.tp = tp;
        d.context = 1 + static_cast<std::int64_t>(size) * 997;
        auto r = kvscope::evaluate(m.value(), gpu, d);
        if (r.ok() && (r.value().cellBytesPerTokenPerRank <= 0 || r.value().tokensCapacity < 0))
            std::abort();
        d.poolModel = kvscope::PoolModel::Datasheet;
        d.kvHeads = 1;
        (void)kvscope::evaluate(m.value(), gpu, d);
    }
    return 0;
}
