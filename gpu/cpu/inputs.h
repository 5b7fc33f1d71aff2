// Generated kernel inputs: num::uniformInput values stored in a KV or activation format, so the
// reference can regenerate any element on its own.
#pragma once

#include "gpu/backend.h"

#include <cstdint>

namespace kvscope::gpu::detail::cpu {

/// Elements [first, first + n) of one input tensor (seed, tensor id, scale) in `dtype`'s
/// storage format, written to dst (which points at element `first`).
void fillInputs(KvDtype dtype, std::uint8_t* dst, std::int64_t first, std::int64_t n,
                std::uint64_t seed, std::uint32_t tensor, float scale);

/// `rows` rows (an even number) of `width` elements of elementBytes each, from src to dst (not
/// overlapping) in token pairs: element j of row 2p, then element j of row 2p + 1, for every j
/// (the V layout of SegmentBf16::valuesPaired).
void pairRows(const std::uint8_t* src, std::uint8_t* dst, std::int64_t rows, std::int64_t width,
              std::int64_t elementBytes);

} // namespace kvscope::gpu::detail::cpu
