#ifndef SIGHTLINE_CDLIB_WIDE_FILTER_PASSES_H
#define SIGHTLINE_CDLIB_WIDE_FILTER_PASSES_H
// SeparableFilters' two passes 16 columns at a time, on CPUs with AVX-512.
//
// dlib forms each column of an 8-column block on its own lane, with the same operations on
// every lane, so two blocks side by side in one 16-lane register come out bit for bit as
// dlib's: the same three partial sums (taps 0, 3, 6, then 9; 1, 4, 7; 2, 5, 8) added up at
// the end, each a multiply and then an add (never fused: clang fuses only within one
// expression, and each intrinsic here is one). The binary is built for AVX2 at most, so these
// functions carry AVX-512 as a target of their own and run only where the CPU has it
// (`wide_filter_passes_available`). They take raw pointers and call nothing but intrinsics,
// so no inline function of the rest of the program is ever compiled for AVX-512.
#if defined(__x86_64__) && defined(__clang__)
#include <immintrin.h>

#define SIGHTLINE_WIDE_FILTER_PASSES 1
#define SIGHTLINE_AVX512 __attribute__((target("avx512f"), always_inline)) inline

namespace wide_filter_passes {

constexpr long taps = 10;
constexpr long lanes = 16;

// A sum over 16 columns at once, each lane as dlib forms it (`SeparableFilters::sum8`):
// `in` points at tap 0 of the first column, `step` floats between one tap's and the next.
SIGHTLINE_AVX512 __m512 sum16(const __m512 *w, const float *in, long step) {
    __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps(), c = _mm512_setzero_ps();
    for (long n = 0; n < taps - 2; n += 3) {
        a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_loadu_ps(in + n * step), w[n]));
        b = _mm512_add_ps(b, _mm512_mul_ps(_mm512_loadu_ps(in + (n + 1) * step), w[n + 1]));
        c = _mm512_add_ps(c, _mm512_mul_ps(_mm512_loadu_ps(in + (n + 2) * step), w[n + 2]));
    }
    a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_loadu_ps(in + (taps - 1) * step), w[taps - 1]));
    return _mm512_add_ps(a, _mm512_add_ps(b, c));
}

SIGHTLINE_AVX512 void broadcast(const float *filter, __m512 *w) {
    for (long n = 0; n < taps; ++n) w[n] = _mm512_set1_ps(filter[n]);
}

// The pass along `rows` rows, `blocks` blocks of 16 columns each: `line` is row 0's input at
// tap 0 of the first column, each next row `line_step` floats on; `out` is row 0 of the first
// block, each next row 16 floats on and each next block `block_step` floats on.
__attribute__((target("avx512f"))) inline void along_rows(const float *filter, const float *line, long line_step,
                                                          long rows, long blocks, float *out, long block_step) {
    __m512 w[taps];
    broadcast(filter, w);
    for (long r = 0; r < rows; ++r, line += line_step, out += lanes) {
        for (long block = 0; block < blocks; ++block) {
            _mm512_storeu_ps(out + block * block_step, sum16(w, line + block * lanes, 1));
        }
    }
}

// The pass down the columns of `parts` parts for one block of 16 columns, `rows` rows of
// output into `to` (one every `to_step` floats): each part's pass along the rows is at
// `top[part]`, its rows one after the other, 16 floats each. Parts are added in order onto
// what `to` holds, or, if `first`, the first part is written.
template <unsigned long parts>
__attribute__((target("avx512f"))) inline void down_block(const float *const *filters, const float *const *top,
                                                         long rows, float *to, long to_step, bool first) {
    __m512 w[parts][taps];
    for (unsigned long part = 0; part < parts; ++part) broadcast(filters[part], w[part]);
    for (long r = 0; r < rows; ++r, to += to_step) {
        __m512 sum = first ? _mm512_setzero_ps() : _mm512_loadu_ps(to);
        for (unsigned long part = 0; part < parts; ++part) {
            const __m512 term = sum16(w[part], top[part] + r * lanes, lanes);
            sum = first && part == 0 ? term : _mm512_add_ps(term, sum);
        }
        _mm512_storeu_ps(to, sum);
    }
}

}  // namespace wide_filter_passes

#undef SIGHTLINE_AVX512
#endif

inline bool wide_filter_passes_available() {
#ifdef SIGHTLINE_WIDE_FILTER_PASSES
    static const bool available = __builtin_cpu_supports("avx512f");
    return available;
#else
    return false;
#endif
}

#endif
