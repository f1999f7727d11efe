#ifndef SIGHTLINE_CDLIB_WIDE_PYRAMID_CHUNKS_H
#define SIGHTLINE_CDLIB_WIDE_PYRAMID_CHUNKS_H
// PyramidStep's chunks of 8 output columns two at a time, on CPUs with AVX-512.
//
// Each lane blends its four source pixels with the multiplies and adds of dlib's 4-lane
// column, in its order (never fused: each intrinsic is one operation), so 16 lanes give the
// floats of four of dlib's groups. dlib then truncates value + 0.5 in double; for the
// non-negative values a blend of bytes makes, that is the value's whole part plus one when
// its fraction (exact in float) is half or more, which stays in float lanes. As in
// `WideFilterPasses.h`, the function carries AVX-512 as a target of its own, takes raw
// pointers and calls nothing but intrinsics, and runs only where the CPU has AVX-512.
#include "ShimSupport.h"

#include <cstdint>

#ifdef SIGHTLINE_AVX512_KERNELS
namespace wide_pyramid {

// The 8 bytes `shuffle` picks from the 16 at `a`, then the 8 `next_shuffle` picks from the
// 16 at `b`, as 16 floats.
__attribute__((target("avx512f"), always_inline)) inline __m512 gather16(const uint8_t *a, __m128i shuffle,
                                                                         const uint8_t *b, __m128i next_shuffle) {
    const __m128i low = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(a)), shuffle);
    const __m128i high = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b)), next_shuffle);
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi64(low, high)));
}

// Output columns 8 * first … of one row, 16 at a time while two whole chunks are left before
// `end`. A chunk has `base` (where its 16 source bytes start in a row) and `shuffle` (where
// each of its 8 columns' left neighbour lies in them; the right one is the byte after);
// `fractions`: each output column's horizontal weight; `tb_fraction`/`inv_tb_fraction`: the
// row's vertical ones. Returns the first chunk left.
template <typename Chunk>
__attribute__((target("avx512f"))) inline long chunk_pairs(const Chunk *chunks, const float *fractions,
                                                           const uint8_t *top, const uint8_t *bottom, uint8_t *dest,
                                                           float tb_fraction, float inv_tb_fraction, long first,
                                                           long end) {
    const __m512 tb_frac = _mm512_set1_ps(tb_fraction);
    const __m512 inv_tb_frac = _mm512_set1_ps(inv_tb_fraction);
    const __m512 one = _mm512_set1_ps(1);
    const __m512 half = _mm512_set1_ps(0.5f);
    const __m128i next = _mm_set1_epi8(1);
    long chunk = first;
    for (; chunk + 2 <= end; chunk += 2) {
        const Chunk &a = chunks[chunk];
        const Chunk &b = chunks[chunk + 1];
        const __m128i left_a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(a.shuffle));
        const __m128i left_b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b.shuffle));
        const __m128i right_a = _mm_add_epi8(left_a, next);
        const __m128i right_b = _mm_add_epi8(left_b, next);
        const __m512 tl = gather16(top + a.base, left_a, top + b.base, left_b);
        const __m512 tr = gather16(top + a.base, right_a, top + b.base, right_b);
        const __m512 bl = gather16(bottom + a.base, left_a, bottom + b.base, left_b);
        const __m512 br = gather16(bottom + a.base, right_a, bottom + b.base, right_b);
        const __m512 lr_frac = _mm512_loadu_ps(fractions + 8 * chunk);
        const __m512 inv_lr_frac = _mm512_sub_ps(one, lr_frac);
        const __m512 tlf = _mm512_mul_ps(inv_tb_frac, inv_lr_frac);
        const __m512 trf = _mm512_mul_ps(inv_tb_frac, lr_frac);
        const __m512 blf = _mm512_mul_ps(tb_frac, inv_lr_frac);
        const __m512 brf = _mm512_mul_ps(tb_frac, lr_frac);
        __m512 value = _mm512_add_ps(_mm512_mul_ps(tlf, tl), _mm512_mul_ps(trf, tr));
        value = _mm512_add_ps(value, _mm512_mul_ps(blf, bl));
        value = _mm512_add_ps(value, _mm512_mul_ps(brf, br));
        const __m512 whole = _mm512_roundscale_ps(value, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        const __mmask16 up = _mm512_cmp_ps_mask(_mm512_sub_ps(value, whole), half, _CMP_GE_OQ);
        const __m512 rounded = _mm512_mask_add_ps(whole, up, whole, one);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dest + 8 * chunk),
                         _mm512_cvtusepi32_epi8(_mm512_cvttps_epi32(rounded)));
    }
    return chunk;
}

}  // namespace wide_pyramid
#endif

#endif
