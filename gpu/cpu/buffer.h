// 64-byte aligned byte buffers that never throw: allocate() reports failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

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

} // namespace kvscope::gpu::detail::cpu
