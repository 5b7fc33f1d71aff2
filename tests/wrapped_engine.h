// A CPU engine behind a wrapper for the harness tests: every call goes to the real CPU engine
// unless a test's subclass overrides it (to break it on purpose, or to script its timings).
#pragma once

#include "gpu/engine.h"

#include <memory>
#include <string>
#include <vector>

namespace kvscope::gpu::testing {

class WrappedCpuEngine : public detail::Engine {
public:
    WrappedCpuEngine() : inner_(detail::makeCpuEngine()) {}
    std::vector<DeviceInfo> devices() const override { return inner_->devices(); }
    std::string supports(const DecodeShape& s) const override { return inner_->supports(s); }
    Ceilings measureCeilings(const Progress& p) override { return inner_->measureCeilings(p); }
    std::int64_t cacheBytes() const override { return inner_->cacheBytes(); }
    std::int64_t memoryBudgetBytes() const override { return inner_->memoryBudgetBytes(); }
    std::string prepare(const DecodeShape& s, int sets, std::uint64_t seed) override {
        return inner_->prepare(s, sets, seed);
    }
    std::string poisonOutput() override { return inner_->poisonOutput(); }
    std::string run(int set) override { return inner_->run(set); }
    std::string timeRun(int set, double* t) override { return inner_->timeRun(set, t); }
    std::string readOutput(std::vector<float>* out) override { return inner_->readOutput(out); }
    int splits() const override { return 1; }
    void release() override { inner_->release(); }

protected:
    std::unique_ptr<detail::Engine> inner_;
};

} // namespace kvscope::gpu::testing
