// The environment switches of the CPU backend, for A/B runs of one binary.
#pragma once

#include <cstdlib>
#include <cstring>

namespace kvscope::gpu::detail::cpu {

/// An A/B switch of the CPU backend: on unless the environment variable is "0".
inline bool cpuSwitchOn(const char* name) {
    const char* e = std::getenv(name);
    return !(e && std::strcmp(e, "0") == 0);
}

} // namespace kvscope::gpu::detail::cpu
