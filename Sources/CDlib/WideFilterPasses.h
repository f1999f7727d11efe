#ifndef SIGHTLINE_CDLIB_WIDE_FILTER_PASSES_H
#define SIGHTLINE_CDLIB_WIDE_FILTER_PASSES_H
// SeparableFilters' two passes 16 columns at a time, on CPUs with AVX-512.
//
// dlib forms each column of an 8-column block on its own lane, with the same operations on
// every lane, so two blocks side by side in one 16-lane register come out bit for bit as
// dlib's: the same three partial sums (taps 0, 3, 6, then 9; 1, 4, 7; 2, 5, 8) added up at
// the end, each a multiply and then an add (never fused: clang fuses only within one
// expression, and each intrinsic here is one). The columns after the last whole pair of
// blocks go in one more register, whose lanes take dlib's sums for a block and for columns
// one by one side by side, through masks (`sum16`). The binary is built for AVX2 at most, so
// these functions carry AVX-512 as a target of their own and run only where the CPU has it
// (`avx512_kernels_available`). They take raw pointers and call nothing but intrinsics
// and each other, so no inline function of the rest of the program is ever compiled for
// AVX-512.
#include "ShimSupport.h"

#ifdef SIGHTLINE_AVX512_KERNELS
#define SIGHTLINE_AVX512 __attribute__((target("avx512f"), always_inline)) inline

namespace wide_filter_passes {

constexpr long taps = 10;
constexpr long width = 16;  // columns in a block

// Which of a block's 16 columns there are, and which of them dlib takes 8 at a time (the
// rest it takes one by one). A block of the passes is 16 whole columns, except the last of a
// row, which holds what is left: fewer than 16, the first 8 of them as one of dlib's 8-column
// blocks if there are that many.
struct Lanes {
    __mmask16 present, grouped;
    static constexpr Lanes whole() { return {0xffff, 0xffff}; }
    static Lanes first(long count) {
        return {static_cast<__mmask16>((1u << count) - 1), static_cast<__mmask16>(count >= 8 ? 0xff : 0)};
    }
};

// Tap n's input times its weight, in the lanes there are.
SIGHTLINE_AVX512 __m512 product(const __m512 *w, const float *in, long step, Lanes lanes, long n) {
    return _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes.present, in + n * step), w[n]);
}

// A sum over 16 columns at once, each lane as dlib forms its column but for the sign of a
// zero: `in` points at tap 0 of the first column, `step` floats between one tap's and the
// next.
//
// Every lane adds the products of taps 0, 3, 6 and 9 to `a` in turn. The lanes of dlib's
// 8-column blocks (`SeparableFilters::sum8`) add those of taps 1, 4, 7 to `b` and of 2, 5, 8
// to `c`, and end as a + (b + c). The other lanes add all ten to `a` in turn, as dlib's
// one-by-one columns do, and end as a + (0 + 0), which is `a`. Lanes past the last column read
// zeros, not memory.
//
// Each sum starts at its first product, not at 0, as `SeparableFilters::sum8` explains:
// `down_block` stores +0 for -0, and the saliency image is dlib's bit for bit.
SIGHTLINE_AVX512 __m512 sum16(const __m512 *w, const float *in, long step, Lanes lanes) {
    const __mmask16 one_by_one = lanes.present & ~lanes.grouped;
    __m512 p0 = product(w, in, step, lanes, 0), p1 = product(w, in, step, lanes, 1),
           p2 = product(w, in, step, lanes, 2);
    __m512 a = p0;
    __m512 b = _mm512_maskz_mov_ps(lanes.grouped, p1);
    a = _mm512_mask_add_ps(a, one_by_one, a, p1);
    __m512 c = _mm512_maskz_mov_ps(lanes.grouped, p2);
    a = _mm512_mask_add_ps(a, one_by_one, a, p2);
    for (long n = 3; n < taps - 2; n += 3) {
        p0 = product(w, in, step, lanes, n);
        p1 = product(w, in, step, lanes, n + 1);
        p2 = product(w, in, step, lanes, n + 2);
        a = _mm512_add_ps(a, p0);
        b = _mm512_mask_add_ps(b, lanes.grouped, b, p1);
        a = _mm512_mask_add_ps(a, one_by_one, a, p1);
        c = _mm512_mask_add_ps(c, lanes.grouped, c, p2);
        a = _mm512_mask_add_ps(a, one_by_one, a, p2);
    }
    a = _mm512_add_ps(a, product(w, in, step, lanes, taps - 1));
    return _mm512_add_ps(a, _mm512_add_ps(b, c));
}

SIGHTLINE_AVX512 void broadcast(const float *filter, __m512 *w) {
    for (long n = 0; n < taps; ++n) w[n] = _mm512_set1_ps(filter[n]);
}

// The pass along `rows` rows of `columns` columns, in blocks of 16: `line` is row 0's input
// at tap 0 of the first column, each next row `line_step` floats on; `out` is row 0 of the
// first block, each next row 16 floats on and each next block `block_step` floats on.
__attribute__((target("avx512f"))) inline void along_rows(const float *filter, const float *line, long line_step,
                                                          long rows, long columns, float *out, long block_step) {
    __m512 w[taps];
    broadcast(filter, w);
    const long blocks = columns / width, rest = columns % width;
    const Lanes last = Lanes::first(rest);
    for (long r = 0; r < rows; ++r, line += line_step, out += width) {
        for (long block = 0; block < blocks; ++block) {
            _mm512_storeu_ps(out + block * block_step, sum16(w, line + block * width, 1, Lanes::whole()));
        }
        if (rest > 0) _mm512_storeu_ps(out + blocks * block_step, sum16(w, line + blocks * width, 1, last));
    }
}

// `down_block`'s rows, with the lanes given.
template <unsigned long parts>
SIGHTLINE_AVX512 void down_rows(const __m512 (*w)[taps], const float *const *top, long rows, float *to, long to_step,
                                bool first, Lanes lanes) {
    for (long r = 0; r < rows; ++r, to += to_step) {
        __m512 sum = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(lanes.present, to);
        for (unsigned long part = 0; part < parts; ++part) {
            const __m512 term = sum16(w[part], top[part] + r * width, width, lanes);
            sum = first && part == 0 ? term : _mm512_add_ps(term, sum);
        }
        // + 0: -0 becomes +0, as dlib's sums have it; any other float stays.
        _mm512_mask_storeu_ps(to, lanes.present, _mm512_add_ps(sum, _mm512_setzero_ps()));
    }
}

// The pass down the columns of `parts` parts for one block of `columns` columns (16, or
// fewer in a row's last block), `rows` rows of output into `to` (one every `to_step` floats):
// each part's pass along the rows is at `top[part]`, its rows one after the other, 16 floats
// each. Parts are added in order onto what `to` holds, or, if `first`, the first part is
// written.
template <unsigned long parts>
__attribute__((target("avx512f"))) inline void down_block(const float *const *filters, const float *const *top,
                                                         long rows, float *to, long to_step, bool first,
                                                         long columns) {
    __m512 w[parts][taps];
    for (unsigned long part = 0; part < parts; ++part) broadcast(filters[part], w[part]);
    // Whole blocks with masks the compiler sees, so that it leaves them out.
    if (columns == width) {
        down_rows<parts>(w, top, rows, to, to_step, first, Lanes::whole());
    } else {
        down_rows<parts>(w, top, rows, to, to_step, first, Lanes::first(columns));
    }
}

}  // namespace wide_filter_passes

#undef SIGHTLINE_AVX512
#endif

#endif
