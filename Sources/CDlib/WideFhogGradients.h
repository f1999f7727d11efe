#ifndef SIGHTLINE_CDLIB_WIDE_FHOG_GRADIENTS_H
#define SIGHTLINE_CDLIB_WIDE_FHOG_GRADIENTS_H
// FhogFeatures' loop over a row's pixels 16 at a time, on CPUs with AVX-512.
//
// Each lane forms its pixel's gradient, magnitude and four weights with the operations of
// dlib's 8-lane loop, in its order, so 16 lanes give the same floats as two groups of 8. As
// in `WideFilterPasses.h`, the function carries AVX-512 as a target of its own, takes raw
// pointers and calls nothing but intrinsics, and runs only where the CPU has AVX-512.
#include "ShimSupport.h"

#include <cstdint>

#ifdef SIGHTLINE_AVX512_KERNELS
namespace wide_fhog {

// 16 pixels widened to ints.
__attribute__((target("avx512f"), always_inline)) inline __m512i load16(const uint8_t *at) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(at)));
}

// `FhogFeatures::accumulate`'s loop over one row, from pixel `x` while 16 pixels fit before
// `end` (a column 1 mod 8): each pixel's (upper, lower) weights for the cell on its left and
// the one on its right into `left` and `right`, and where its bin starts in the pairs into
// `offsets`. `to_right`/`to_left`: the 16 lanes' horizontal weights; `table`: the orientation
// of each integer gradient. Returns the first pixel left.
__attribute__((target("avx512f"))) inline int gradients(const uint8_t *above, const uint8_t *line,
                                                        const uint8_t *below, int x, int end,
                                                        const float *to_right, const float *to_left, float upper,
                                                        float lower, const uint8_t *table, int stride, float *left,
                                                        float *right, int32_t *offsets) {
    const __m512 right_weight = _mm512_loadu_ps(to_right), left_weight = _mm512_loadu_ps(to_left);
    const __m512 upper_weight = _mm512_set1_ps(upper), lower_weight = _mm512_set1_ps(lower);
    // Lanes of two registers as (first, second) pairs: the first 8 pairs, then the last 8.
    const __m512i first_pairs = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i last_pairs = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const __m512i middle = _mm512_set1_epi32(255), row = _mm512_set1_epi32(511);
    for (; x + 16 <= end; x += 16) {
        const __m512i gx = _mm512_sub_epi32(load16(line + x + 1), load16(line + x - 1));
        const __m512i gy = _mm512_sub_epi32(load16(below + x), load16(above + x));
        const __m512 fx = _mm512_cvtepi32_ps(gx), fy = _mm512_cvtepi32_ps(gy);
        const __m512 v = _mm512_sqrt_ps(_mm512_add_ps(_mm512_mul_ps(fx, fx), _mm512_mul_ps(fy, fy)));
        const __m512 rightward = _mm512_mul_ps(right_weight, v), leftward = _mm512_mul_ps(left_weight, v);
        const __m512 left_upper = _mm512_mul_ps(upper_weight, leftward);
        const __m512 left_lower = _mm512_mul_ps(lower_weight, leftward);
        const __m512 right_upper = _mm512_mul_ps(upper_weight, rightward);
        const __m512 right_lower = _mm512_mul_ps(lower_weight, rightward);
        _mm512_storeu_ps(left + 2 * x, _mm512_permutex2var_ps(left_upper, first_pairs, left_lower));
        _mm512_storeu_ps(left + 2 * x + 16, _mm512_permutex2var_ps(left_upper, last_pairs, left_lower));
        _mm512_storeu_ps(right + 2 * x, _mm512_permutex2var_ps(right_upper, first_pairs, right_lower));
        _mm512_storeu_ps(right + 2 * x + 16, _mm512_permutex2var_ps(right_upper, last_pairs, right_lower));
        // The table's byte at each gradient's place, read as 4 (it has 3 to spare at its end).
        const __m512i place =
            _mm512_add_epi32(_mm512_mullo_epi32(_mm512_add_epi32(gy, middle), row), _mm512_add_epi32(gx, middle));
        const __m512i bins = _mm512_and_si512(_mm512_i32gather_epi32(place, table, 1), _mm512_set1_epi32(0xff));
        _mm512_storeu_si512(offsets + x, _mm512_mullo_epi32(bins, _mm512_set1_epi32(stride)));
    }
    return x;
}

}  // namespace wide_fhog
#endif

#endif
