// The CPU's measured ceilings and what the engine needs to know about the machine.
#pragma once

#include "gpu/backend.h"
#include "gpu/cpu/thread_pool.h"

#include <cstdint>
#include <string>

namespace kvscope::gpu::detail::cpu {

/// Largest cache level of cpu0 from sysfs, 0 when unreadable.
std::int64_t lastLevelCacheBytes();
/// "model name" of /proc/cpuinfo, "CPU" when unreadable.
std::string cpuModelName();
/// Physical memory, bytes (0 when unknown).
std::int64_t physicalMemoryBytes();

/// Read bandwidth and the arithmetic peak per KV dtype, on every thread of the pool.
Ceilings measureCeilings(ThreadPool& pool, std::int64_t llcBytes, const Progress& progress);

} // namespace kvscope::gpu::detail::cpu
