// 64-byte aligned byte buffers that never throw: allocate() reports failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace kvscope::gpu::detail::cpu {

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
        if (data)
            ::operator delete(data, std::align_val_t(64), std::nothrow);
        data = nullptr;
        bytes = 0;
    }
    bool allocate(std::size_t n) {
        data = static_cast<std::uint8_t*>(
            ::operator new(n ? n : 64, std::align_val_t(64), std::nothrow));
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
