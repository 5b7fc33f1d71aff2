// Vector helpers shared by the bf16 dot-product kernel and the AMX kernel: fp8 e4m3 -> bf16
// (exact; AVX512_VBMI where present, else vpermi2w), 2^x for x <= 0, and the __m512i ->
// __m512bh cast.
#pragma once

#include "gpu/cpu/bf16_kernel.h"
#include "gpu/cpu/row_map.h"
#include "gpu/cpu/simd.h"
#include "gpu/numerics.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace kvscope::gpu::detail::cpu {

/// fp8 e4m3 -> bf16 bits, exact (3 mantissa bits and exponents 2^-9..2^8 fit in bf16).
inline const std::uint16_t* fp8ToBf16Table() {
    static const auto table = [] {
        std::array<std::uint16_t, 256> t{};
        for (int i = 0; i < 256; ++i)
            t[std::size_t(i)] =
                std::uint16_t(num::floatToBits(num::fp8e4m3ToFloat(std::uint8_t(i))) >> 16);
        return t;
    }();
    return table.data();
}

#if KVSCOPE_HAVE_BF16_KERNEL
/// 2^x for x <= 0 (as exp2NegW): degree-7 polynomial, then scalef by the integer part.
KVSCOPE_BF16_TARGET inline __m512 exp2Neg512(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-125.0f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 t = _mm512_mul_ps(_mm512_sub_ps(x, n), _mm512_set1_ps(0.69314718056f));
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/// 2^x for x <= 8 to 7.5e-5 relative: a degree-3 polynomial in the fraction (weighted least
/// squares on the relative error over [0, 1)), then scalef by the integer part. For weights
/// that are rounded to bf16 next (2^-9 relative); the clamp keeps scalef's result normal (a
/// denormal result could take a microcode assist). Two operations fewer per vector than the
/// degree-5 Taylor polynomial it replaced (1.6e-4).
KVSCOPE_BF16_TARGET inline __m512 exp2Bf16Weights512(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-125.0f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(0.078024116f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.22606791f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.69583316f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.99992527f));
    return _mm512_scalef_ps(p, n);
}

KVSCOPE_BF16_TARGET inline __m512bh asBh(__m512i v) {
    __m512bh r;
    std::memcpy(&r, &v, sizeof r);
    return r;
}

/// acc + both bf16 values of every pair (lane i: acc[i] + lo[i] + hi[i]): one vdpbf16ps against
/// bf16 1.0, the products exact. The softmax sums the weights exactly as P·V will see them.
KVSCOPE_BF16_TARGET inline __m512 addBf16Pairs(__m512 acc, __m512bh pairs) {
    return _mm512_dpbf16_ps(acc, pairs, asBh(_mm512_set1_epi16(0x3f80)));
}

/// Two weight vectors rounded to bf16 and paired lane by lane: dword i = (a[i], b[i])
/// (vcvtne2ps2bf16, then vpermw puts word i of each 256-bit half side by side).
KVSCOPE_BF16_TARGET inline __m512i bf16LanePairs(__m512 a, __m512 b) {
    alignas(64) static constexpr std::uint16_t kIdx[32] = {
        0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
        8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512bh pb = _mm512_cvtne2ps_pbh(b, a);
    __m512i bits;
    std::memcpy(&bits, &pb, sizeof bits);
    return _mm512_permutexvar_epi16(_mm512_load_si512(kIdx), bits);
}

/// The 128 non-negative fp8 e4m3 codes as bf16 bits, in four vectors for vpermi2w lookups.
struct Fp8Lut {
    __m512i t[4];
};
KVSCOPE_BF16_TARGET inline Fp8Lut fp8Lut() {
    Fp8Lut l;
    for (int i = 0; i < 4; ++i)
        l.t[i] = _mm512_loadu_si512(fp8ToBf16Table() + 32 * i);
    return l;
}

/// 32 fp8 e4m3 values -> bf16, exactly: the magnitude (7 bits) is looked up in the scalar table
/// with two vpermi2w (64 entries each) and a blend on bit 6; the sign bit moves to bit 15.
KVSCOPE_BF16_TARGET inline __m512i fp8x32ToBf16(const std::uint8_t* src, const Fp8Lut& lut) {
    const __m512i w =
        _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
    const __m512i lo = _mm512_permutex2var_epi16(lut.t[0], w, lut.t[1]);
    const __m512i hi = _mm512_permutex2var_epi16(lut.t[2], w, lut.t[3]);
    const __mmask32 upper = _mm512_test_epi16_mask(w, _mm512_set1_epi16(0x40));
    const __m512i sign = _mm512_slli_epi16(_mm512_and_si512(w, _mm512_set1_epi16(0x80)), 8);
    return _mm512_or_si512(_mm512_mask_blend_epi16(upper, lo, hi), sign);
}

/// n rows of `width` fp8 codes (width a multiple of 32, rows `stride` bytes apart) -> bf16
/// rows of `width` values at dst, 32 values per step: the fallback for CPUs without VBMI.
KVSCOPE_BF16_TARGET inline void fp8RowsToBf16Table(const std::uint8_t* src, std::int64_t stride,
                                                   int n, int width, std::uint16_t* dst) {
    const Fp8Lut lut = fp8Lut();
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < width; j += 32)
            _mm512_storeu_si512(dst + std::ptrdiff_t(i) * width + j,
                                fp8x32ToBf16(src + i * stride + j, lut));
}

/// AVX512_VBMI only here, never in KVSCOPE_BF16_TARGET: Cooper Lake has AVX512_BF16 but no
/// VBMI, and GCC may emit VBMI instructions anywhere in a function whose target carries it.
#define KVSCOPE_VBMI_TARGET __attribute__((target("avx512f,avx512bw,avx512vbmi")))

/// The VBMI decoder's tables: the high and the low byte of the bf16 bits of the 128 magnitudes
/// (from fp8ToBf16Table), each in 64 entries under a 6-bit index built from the code by
/// fp8x64ToBf16Vbmi, and the byte order that makes two in-lane unpacks of 64 bytes give the
/// words in code order (byte 16L + j of a 128-bit lane L takes code 8L + j, byte 16L + 8 + j
/// code 32 + 8L + j).
struct Fp8VbmiTables {
    alignas(64) std::uint8_t hi[64], lo[64], order[64];
};
/// The lookup indices (vpermb reads bits 0..5 of each byte, so what a word shift carries into
/// bits 6..7 is ignored). Low byte: the code with bit 6 ORed into bit 4, so that bits 3..5 are
/// zero exactly for the subnormals, whose low bytes are not the normals' (m << 4). High byte:
/// the code >> 1 (exponent and mantissa bits 2..1, all a normal's high byte depends on) with
/// bit 0 ORed into bit 0, which tells zero (0x00) from 2^-9 (0x3b) among the subnormals.
constexpr int fp8LoIndex(int code) {
    return (code | ((code >> 2) & 0x10)) & 0x3f;
}
constexpr int fp8HiIndex(int code) {
    return ((code >> 1) | (code & 1)) & 0x3f;
}
inline const Fp8VbmiTables& fp8VbmiTables() {
    static const Fp8VbmiTables tables = [] {
        Fp8VbmiTables t{};
        for (int i = 0; i < 128; ++i) { // codes sharing an index share the byte (fp8VectorMismatch)
            t.hi[fp8HiIndex(i)] = std::uint8_t(fp8ToBf16Table()[i] >> 8);
            t.lo[fp8LoIndex(i)] = std::uint8_t(fp8ToBf16Table()[i] & 0xff);
        }
        for (int lane = 0; lane < 4; ++lane)
            for (int j = 0; j < 8; ++j) {
                t.order[16 * lane + j] = std::uint8_t(8 * lane + j);
                t.order[16 * lane + 8 + j] = std::uint8_t(32 + 8 * lane + j);
            }
        return t;
    }();
    return tables;
}

/// The tables in registers.
struct Fp8VbmiLut {
    __m512i hi, lo, order;
};
KVSCOPE_VBMI_TARGET inline Fp8VbmiLut fp8VbmiLut() {
    const Fp8VbmiTables& t = fp8VbmiTables();
    return {_mm512_load_si512(t.hi), _mm512_load_si512(t.lo), _mm512_load_si512(t.order)};
}
/// 64 codes -> bf16 words 0..31 (w0) and 32..63 (w1): five operations on the shuffle port
/// (three vpermb, two unpacks) and four on the other vector port (two shifts, two
/// ternary-logic ops) plus the sign's ternary-logic op, against eight shuffle-port uops for two
/// 128-entry vpermi2b lookups and two vpermt2b interleaves (decode alone, one core: 2.3-2.4 ->
/// 1.9-2.0 ns per 64 codes). A function, not a lambda in the row loop: a lambda does not
/// inherit its enclosing function's target.
KVSCOPE_VBMI_TARGET inline __attribute__((always_inline)) void
fp8x64ToBf16Vbmi(__m512i c, const Fp8VbmiLut& l, __m512i& w0, __m512i& w1) {
    c = _mm512_permutexvar_epi8(l.order, c);
    const __m512i loIdx = _mm512_ternarylogic_epi32( // c | ((c >> 2) & 0x10)
        c, _mm512_srli_epi16(c, 2), _mm512_set1_epi8(0x10), 0xf8);
    const __m512i hiIdx = _mm512_ternarylogic_epi32( // (c >> 1) | (c & 1)
        _mm512_srli_epi16(c, 1), c, _mm512_set1_epi8(0x01), 0xf8);
    const __m512i lo = _mm512_permutexvar_epi8(loIdx, l.lo);
    const __m512i hi = _mm512_ternarylogic_epi32( // hi | (c & 0x80)
        _mm512_permutexvar_epi8(hiIdx, l.hi), c, _mm512_set1_epi8(char(0x80)), 0xf8);
    w0 = _mm512_unpacklo_epi8(lo, hi);
    w1 = _mm512_unpackhi_epi8(lo, hi);
}

/// As fp8RowsToBf16Table, 64 values per step and any width (fp8x64ToBf16Vbmi). The last step of a
/// row (width % 64 values) is masked. Exact: the same bits as the scalar table for all 256 codes
/// (fp8VectorMismatch checks them).
KVSCOPE_VBMI_TARGET __attribute__((noinline)) inline void fp8RowsToBf16Vbmi(const std::uint8_t* src,
                                                                            std::int64_t stride,
                                                                            int n, int width,
                                                                            std::uint16_t* dst) {
    const Fp8VbmiLut l = fp8VbmiLut();
    const int tail = width % 64;
    for (int i = 0; i < n; ++i) {
        const std::uint8_t* s = src + i * stride;
        std::uint16_t* d = dst + std::ptrdiff_t(i) * width;
        __m512i w0, w1;
        int j = 0;
        for (; j + 64 <= width; j += 64) {
            fp8x64ToBf16Vbmi(_mm512_loadu_si512(s + j), l, w0, w1);
            _mm512_storeu_si512(d + j, w0);
            _mm512_storeu_si512(d + j + 32, w1);
        }
        if (tail) {
            fp8x64ToBf16Vbmi(_mm512_maskz_loadu_epi8((1ull << tail) - 1, s + j), l, w0, w1);
            _mm512_mask_storeu_epi16(d + j, __mmask32((1ull << std::min(tail, 32)) - 1), w0);
            if (tail > 32)
                _mm512_mask_storeu_epi16(d + j + 32, __mmask32((1ull << (tail - 32)) - 1), w1);
        }
    }
}
#endif

/// AVX512_VBMI (vpermb) is present (and this build has the bf16 kernel); checked once.
inline bool cpuHasVbmi() {
#if KVSCOPE_HAVE_BF16_KERNEL
    static const bool ok =
        __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
    return ok;
#else
    return false;
#endif
}

/// The fp8 decoder the kernels run: VBMI where the CPU has it (and the bf16 kernel exists),
/// else the vpermi2w table decoder. KVSCOPE_CPU_FP8=table forces the latter (A/B runs and
/// tests); read on every call, so callers ask once per segment.
enum class Fp8Decoder { Table, Vbmi };
inline Fp8Decoder fp8Decoder() {
    const char* force = std::getenv("KVSCOPE_CPU_FP8");
    if (cpuHasVbmi() && !(force && std::strcmp(force, "table") == 0))
        return Fp8Decoder::Vbmi;
    return Fp8Decoder::Table;
}

#if KVSCOPE_HAVE_BF16_KERNEL
/// n <= rows fp8 rows of `width` codes (a multiple of 32) decoded exactly into a `rows`-row
/// bf16 tile at dst whose rows past n are zero. Requires the bf16 kernel's CPU (AVX512_BF16).
inline void stageFp8Rows(const std::uint8_t* src, std::int64_t stride, int n, int rows, int width,
                         std::uint16_t* dst, Fp8Decoder dec) {
    std::memset(dst + std::ptrdiff_t(n) * width, 0, std::size_t(rows - n) * std::size_t(width) * 2);
    if (dec == Fp8Decoder::Vbmi)
        fp8RowsToBf16Vbmi(src, stride, n, width, dst);
    else
        fp8RowsToBf16Table(src, stride, n, width, dst);
}

/// n <= rows rows through `src` (rows a multiple of 16; bf16 copied, fp8 decoded with `dec`)
/// into a contiguous `rows`-row bf16 tile at dst whose rows past n are zero.
inline void stageRows(const RowMap& src, int n, int rows, int width, bool fp8, Fp8Decoder dec,
                      std::uint16_t* dst) {
    // Contiguous fp8 rows go through one decoder call: a call per group of 8 rows paid its
    // prologue (tables and constants into registers) 8 times per tile. Paired from DRAM (NOTES.md,
    // "twenty-seventh session"): fp8 g 1 0.94, g 2 0.97, g 16 0.92, g 4 and 8 1.01.
    if (fp8 && src.contiguousRows()) {
        stageFp8Rows(src.base, src.stride, n, rows, width, dst, dec);
        return;
    }
    const int step = src.group(); // rows evenly strided in the source
    for (int g = 0; g < rows; g += step) {
        const int m = std::clamp(n - g, 0, step);
        std::uint16_t* d = dst + std::ptrdiff_t(g) * width;
        if (fp8 && m > 0) {
            stageFp8Rows(src.row(g), src.stride, m, step, width, d, dec);
            continue;
        }
        std::memset(d + std::ptrdiff_t(m) * width, 0,
                    std::size_t(step - m) * std::size_t(width) * 2);
        for (int i = 0; i < m; ++i)
            std::memcpy(d + std::ptrdiff_t(i) * width, src.row(g + i), std::size_t(width) * 2);
    }
}
#endif

} // namespace kvscope::gpu::detail::cpu
