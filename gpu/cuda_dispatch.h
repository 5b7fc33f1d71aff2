// Host-side helpers of the CUDA engine: CUDA / cuBLAS calls turned into error values with call
// text, file and line, and one dispatch macro per kernel knob (head dim, group size, KV dtype),
// each with an "unsupported X" branch. Internal to gpu/; included by cuda_backend.cu.
#pragma once

#include "gpu/backend.h"

#include <string>

namespace kvscope::gpu::detail {

inline std::string callError(const char* what, const char* call, const char* file, int line) {
    std::string f = file;
    if (auto slash = f.find_last_of('/'); slash != std::string::npos)
        f = f.substr(slash + 1);
    return std::string(what) + " in " + call + " (" + f + ":" + std::to_string(line) + ")";
}

} // namespace kvscope::gpu::detail

/// Evaluates a CUDA runtime call; on failure returns (from the enclosing function, whose
/// return type is std::string) "<error text> in <call> (<file>:<line>)".
#define KVSCOPE_CUDA_CALL(call)                                                                    \
    do {                                                                                           \
        const cudaError_t kvscopeErr_ = (call);                                                    \
        if (kvscopeErr_ != cudaSuccess)                                                            \
            return ::kvscope::gpu::detail::callError(cudaGetErrorString(kvscopeErr_), #call,       \
                                                     __FILE__, __LINE__);                          \
    } while (0)

/// The same for cuBLAS calls.
#define KVSCOPE_CUBLAS_CALL(call)                                                                  \
    do {                                                                                           \
        const cublasStatus_t kvscopeStatus_ = (call);                                              \
        if (kvscopeStatus_ != CUBLAS_STATUS_SUCCESS)                                               \
            return ::kvscope::gpu::detail::callError(                                              \
                ("cuBLAS status " + std::to_string(int(kvscopeStatus_))).c_str(), #call, __FILE__, \
                __LINE__);                                                                         \
    } while (0)

/// Head dim (64/128/256) as a compile-time D.
#define KVSCOPE_DISPATCH_HEAD_DIM(headDim, D, ...)                                                 \
    switch (headDim) {                                                                             \
    case 64: {                                                                                     \
        constexpr int D = 64;                                                                      \
        __VA_ARGS__ break;                                                                         \
    }                                                                                              \
    case 128: {                                                                                    \
        constexpr int D = 128;                                                                     \
        __VA_ARGS__ break;                                                                         \
    }                                                                                              \
    case 256: {                                                                                    \
        constexpr int D = 256;                                                                     \
        __VA_ARGS__ break;                                                                         \
    }                                                                                              \
    default:                                                                                       \
        return "unsupported head dim " + std::to_string(headDim) + " (64, 128 or 256)";            \
    }

/// Group size g as the number of 16-row M tiles MT (g <= 16, 32, 64, 128).
#define KVSCOPE_DISPATCH_GQA_GROUP_SIZE(group, MT, ...)                                            \
    if ((group) <= 16) {                                                                           \
        constexpr int MT = 1;                                                                      \
        __VA_ARGS__                                                                                \
    } else if ((group) <= 32) {                                                                    \
        constexpr int MT = 2;                                                                      \
        __VA_ARGS__                                                                                \
    } else if ((group) <= 64) {                                                                    \
        constexpr int MT = 4;                                                                      \
        __VA_ARGS__                                                                                \
    } else if ((group) <= 128) {                                                                   \
        constexpr int MT = 8;                                                                      \
        __VA_ARGS__                                                                                \
    } else {                                                                                       \
        return "unsupported group size " + std::to_string(group) + " (at most 128)";               \
    }

/// KV storage dtype as a kernel tag type.
#define KVSCOPE_DISPATCH_KV_DTYPE(dtype, Kv, ...)                                                  \
    switch (dtype) {                                                                               \
    case ::kvscope::gpu::KvDtype::Bf16: {                                                          \
        using Kv = ::kvscope::gpu::cuda::Bf16Kv;                                                   \
        __VA_ARGS__ break;                                                                         \
    }                                                                                              \
    case ::kvscope::gpu::KvDtype::Fp16: {                                                          \
        using Kv = ::kvscope::gpu::cuda::Fp16Kv;                                                   \
        __VA_ARGS__ break;                                                                         \
    }                                                                                              \
    case ::kvscope::gpu::KvDtype::Fp8E4m3: {                                                       \
        using Kv = ::kvscope::gpu::cuda::Fp8Kv;                                                    \
        __VA_ARGS__ break;                                                                         \
    }                                                                                              \
    default:                                                                                       \
        return "unsupported KV dtype " + std::string(dtypeName(dtype)) +                           \
               " on cuda (bf16, fp16 or fp8_e4m3)";                                                \
    }
