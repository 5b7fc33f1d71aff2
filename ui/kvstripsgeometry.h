// What the strips view's files share (ui/kvstripsview.cpp, kvstripslayout.cpp,
// kvstripspaint.cpp): the keys that let an item animate from one layout to the next, and the
// layout's margins in pixels at 1x (the view scales its fonts with the widget font).
#pragma once

#include "ui/qstrings.h" // q(), which the strips' files call unqualified

#include <cstdint>

namespace kvscope::ui::strips {

inline constexpr std::uint64_t kQueryTag = 1ull << 56;
inline constexpr std::uint64_t kStripTag = 2ull << 56;
inline constexpr std::uint64_t kLatentTag = 3ull << 56;
inline constexpr std::uint64_t kBundleTag = 4ull << 56;

inline std::uint64_t stripKey(std::int64_t head, std::int64_t copy) {
    return kStripTag | (static_cast<std::uint64_t>(head) << 24) | static_cast<std::uint64_t>(copy);
}

inline constexpr double kLeft = 84, kRight = 18, kBottom = 40, kCapH = 18;

} // namespace kvscope::ui::strips
