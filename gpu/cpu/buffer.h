// Aligned byte buffers that never throw (allocate() reports failure): 64-byte aligned, and
// from 2 MiB on in transparent huge pages.
#pragma once

#include "gpu/cpu/switches.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kvscope::gpu::detail::cpu {

constexpr std::size_t kHugePage = std::size_t(2) << 20;

/// Large buffers (the KV input sets, the read ceilings' buffer, the step's weights) in 2 MiB
/// pages unless KVSCOPE_CPU_HUGEPAGES=0 (A/B): the kernels and the ceilings that bound them read
/// the same kind of memory.
inline bool hugePagesEnabled() {
    static const bool on = cpuSwitchOn("KVSCOPE_CPU_HUGEPAGES");
    return on;
}

/// Asks for transparent huge pages over [p, p + n) (both 2 MiB aligned); a hint, no error when
/// the kernel has THP off or no huge page to give.
inline void backHugePages(void* p, std::size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, n, MADV_HUGEPAGE);
#else
    (void)p, (void)n;
#endif
}

struct Buffer {
    std::uint8_t* data = nullptr;
    std::size_t bytes = 0;
    Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    Buffer(Buffer&& o) noexcept : data(o.data), bytes(o.bytes) { o.data = nullptr, o.bytes = 0; }
    Buffer& operator=(Buffer&& o) noexcept {
        if (this != &o) {
            free();
            data = o.data;
            bytes = o.bytes;
            o.data = nullptr;
            o.bytes = 0;
        }
        return *this;
    }
    ~Buffer() { free(); }
    void free() {
        std::free(data);
        data = nullptr;
        bytes = 0;
    }
    /// n bytes, 64-byte aligned; from 2 MiB on, 2 MiB aligned and backed by transparent huge
    /// pages where the kernel gives them (see backHugePages).
    bool allocate(std::size_t n) {
        const bool huge = n >= kHugePage && hugePagesEnabled();
        const std::size_t align = huge ? kHugePage : 64;
        const std::size_t rounded = (std::max<std::size_t>(n, 1) + align - 1) / align * align;
        data = static_cast<std::uint8_t*>(std::aligned_alloc(align, rounded));
        if (data && huge)
            backHugePages(data, rounded);
        bytes = data ? n : 0;
        return data != nullptr;
    }
};

/// Allocator for kernel scratch: 64-byte aligned, so a 64-byte vector or tile row is one cache
/// line (std::vector's 16-byte alignment split every such access across two lines).
template <typename T> struct Aligned64 {
    using value_type = T;
    Aligned64() = default;
    template <typename U> Aligned64(const Aligned64<U>&) noexcept {}
    T* allocate(std::size_t n) {
        return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64)));
    }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t(64)); }
    template <typename U> bool operator==(const Aligned64<U>&) const noexcept { return true; }
};
template <typename T> using AlignedVector = std::vector<T, Aligned64<T>>;

} // namespace kvscope::gpu::detail::cpu
