#ifndef SIGHTLINE_CDLIB_SEPARABLE_FILTERS_H
#define SIGHTLINE_CDLIB_SEPARABLE_FILTERS_H
// dlib's HOG filters run over a level's features with dlib's exact floats, in fewer
// instructions.
//
// `dlib::impl::apply_filters_to_fhog` runs each of the detector's five filters as a sum of
// separable parts (54-66 of them: one to three per HOG channel), each a pass along the rows
// and one down the columns (`float_spatially_filter_image_separable`) with taps of any
// length, fetched and broadcast again for every 8 pixels, and a load and store of the
// output per part. Here the taps are a compile-time 10, broadcast once per pass, and all of a
// channel's parts are added to the output in one pass down the columns, which goes down a
// block of 8 columns at a time over the passes along the rows, kept block by block (the 10
// rows it reads lie at fixed distances from one pointer, one after the other). Every float is
// formed as dlib forms it, with dlib's own `simd8f` (AVX, or two SSE halves): 8 columns at a
// time there are three partial sums (taps 0, 3, 6, then 9; 1, 4, 7; 2, 5, 8), added up at
// the end; the columns left over (up to 7 a row) take the taps one after the other, and go
// here all at once, a lane each; the parts are added to the output in dlib's order. Only
// the sign of a zero can differ on the way (each sum starts at its first product, not at 0),
// and the output has dlib's. So the saliency image is dlib's bit for bit
// (`sl_filter_mismatches`), and with it every score and box. Where the CPU has AVX-512, the
// blocks are 16 columns wide and both passes go 16 columns at a time, the columns left over
// included (`WideFilterPasses.h`), each lane still dlib's.
#include <dlib/image_processing/scan_fhog_pyramid.h>

#include "WideFilterPasses.h"

#include <algorithm>
#include <cstdint>
#include <vector>

class SeparableFilters {
public:
    using FilterBank = dlib::scan_fhog_pyramid<dlib::pyramid_down<6>>::fhog_filterbank;

    // `wide`: 16 columns at a time, where the CPU has AVX-512 (a test runs both).
    explicit SeparableFilters(bool wide = avx512_kernels_available())
        : wide_(wide && avx512_kernels_available()) {}

    // What `dlib::impl::apply_filters_to_fhog(filters, feats, saliency)` returns and writes.
    dlib::rectangle apply(const FilterBank &filters, const dlib::array<dlib::array2d<float>> &feats,
                          dlib::array2d<float> &saliency) {
        if (!fits(filters, feats)) return dlib::impl::apply_filters_to_fhog(filters, feats, saliency);
        return wide_ ? apply<16>(filters, feats, saliency) : apply<8>(filters, feats, saliency);
    }

private:
    static constexpr long taps = 10;
    static constexpr long half = taps / 2;        // dlib's first_row and first_col
    static constexpr long rest = (taps - 1) / 2;  // rows and columns after the last output

    // With the passes along the rows kept in blocks `width` columns wide.
    template <long width>
    dlib::rectangle apply(const FilterBank &filters, const dlib::array<dlib::array2d<float>> &feats,
                          dlib::array2d<float> &saliency) {
        const long rows = feats[0].nr(), columns = feats[0].nc();
        saliency.set_size(rows, columns);
        const dlib::rectangle inner(half, half, columns - rest - 1, rows - rest - 1);
        dlib::zero_border_pixels(saliency, inner);
        bool first = true;
        for (unsigned long channel = 0; channel < filters.row_filters.size(); ++channel) {
            const auto &parts = filters.row_filters[channel];
            if (parts.empty()) continue;
            passes_.resize(std::max(passes_.size(), parts.size()));
            for (unsigned long part = 0; part < parts.size(); ++part) {
                along_rows<width>(feats[channel], parts[part], passes_[part]);
            }
            down_columns<width>(filters.col_filters[channel], saliency, first);
            first = false;
        }
        return inner;
    }

    // dlib's separable path with 10 taps everywhere, on features a window fits in; anything
    // else goes to dlib.
    static bool fits(const FilterBank &filters, const dlib::array<dlib::array2d<float>> &feats) {
        if (feats.size() == 0 || feats[0].nr() < taps || feats[0].nc() < taps) return false;
        // apply_filters_to_fhog's own test for taking the separable path.
        const double separable = filters.num_separable_filters();
        if (separable == 0 ||
            separable > filters.filters.size() * std::min(filters.filters[0].nr(), filters.filters[0].nc()) / 3.0) {
            return false;
        }
        for (unsigned long channel = 0; channel < filters.row_filters.size(); ++channel) {
            for (unsigned long part = 0; part < filters.row_filters[channel].size(); ++part) {
                if (filters.row_filters[channel][part].size() != taps ||
                    filters.col_filters[channel][part].size() != taps) {
                    return false;
                }
            }
        }
        return true;
    }

    // A part's taps, each broadcast to the 8 lanes of `sum8`.
    struct Taps {
        dlib::simd8f lanes[taps];
        explicit Taps(const dlib::matrix<float, 0, 1> &filter) {
            for (long n = 0; n < taps; ++n) lanes[n] = filter(n);
        }
    };

    // A sum over 8 columns at once, as dlib forms it but for the sign of a zero: dlib starts
    // each partial sum at 0 and adds the first product to it, here it starts at the first
    // product. That differs only where the product is -0 (0 + -0 is +0), and so does every
    // float formed from it, in the sign of a zero alone; `normalised` puts that right in the
    // saliency image, for two additions fewer in every sum.
    template <typename Load> static inline dlib::simd8f sum8(const Taps &w, Load load) {
        dlib::simd8f a = load(0) * w.lanes[0], b = load(1) * w.lanes[1], c = load(2) * w.lanes[2];
        long n = 3;
        for (; n < taps - 2; n += 3) {
            a += load(n) * w.lanes[n];
            b += load(n + 1) * w.lanes[n + 1];
            c += load(n + 2) * w.lanes[n + 2];
        }
        for (; n < taps; ++n) a += load(n) * w.lanes[n];
        a += b + c;
        return a;
    }

    // The columns left over (fewer than 8) at once, each lane as dlib forms such a column one
    // by one: the taps added one after the other (from the first product on, as in `sum8`).
    template <typename Load> static inline dlib::simd8f sum8_one_by_one(const Taps &w, Load load) {
        dlib::simd8f sum = load(0) * w.lanes[0];
        for (long n = 1; n < taps; ++n) sum += load(n) * w.lanes[n];
        return sum;
    }

    // A sum as it goes into the saliency image: -0 as +0, which is what dlib's sums, started
    // at +0, have there (`sum8`); any other float as it is.
    static dlib::simd8f normalised(const dlib::simd8f &sum) { return sum + dlib::simd8f(0); }

    static dlib::simd8f load8(const float *at) {
        dlib::simd8f v;
        v.load(at);
        return v;
    }

    // The first `count` (1 to 7) of 8 floats, zeros after them; and their store. Masked where
    // the CPU has AVX: a copy to the stack and a read of 8 from it would wait for the copy's
    // stores to reach the cache.
#ifdef __AVX__
    static __m256i first_lanes(long count) {
        static const int32_t ramp[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
        return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(ramp + 8 - count));
    }
    static dlib::simd8f load8_first(const float *at, long count) { return _mm256_maskload_ps(at, first_lanes(count)); }
    static void store8_first(dlib::simd8f v, float *at, long count) { _mm256_maskstore_ps(at, first_lanes(count), v); }
#else
    static dlib::simd8f load8_first(const float *at, long count) {
        float lanes[8] = {};
        std::copy(at, at + count, lanes);
        return load8(lanes);
    }
    static void store8_first(dlib::simd8f v, float *at, long count) {
        float lanes[8];
        v.store(lanes);
        std::copy(lanes, lanes + count, at);
    }
#endif

    // Where column c of row r of a part's pass along the rows lies: columns from `half` on
    // in blocks of `width`, each block's rows one after the other, so that the pass down the
    // columns finds the 10 rows it reads at fixed distances from one pointer.
    template <long width> static long at_block(long r, long c, long rows) {
        return ((c - half) / width * rows + r) * width + (c - half) % width;
    }

    // A part's pass along the rows starts at a cache line, in the vector that holds it: a read
    // of 16 floats from anywhere else would span two lines (and take twice as long).
    static constexpr std::size_t cache_line = 64;
    static float *start(std::vector<float> &pass) {
        const auto at = reinterpret_cast<std::uintptr_t>(pass.data());
        return pass.data() + (cache_line - at % cache_line) % cache_line / sizeof(float);
    }

    // One part's pass along every row into `out`.
    template <long width>
    static void along_rows(const dlib::array2d<float> &in, const dlib::matrix<float, 0, 1> &filter,
                           std::vector<float> &out) {
        const long rows = in.nr(), columns = in.nc(), last = columns - rest;
        out.resize(((last - half + width - 1) / width) * rows * width + cache_line / sizeof(float));
        float *const blocks_start = start(out);
#ifdef SIGHTLINE_AVX512_KERNELS
        if constexpr (width == 16) {
            wide_filter_passes::along_rows(&filter(0), &in[0][0], in.width_step() / sizeof(float), rows, last - half,
                                           blocks_start, rows * width);
            return;
        }
#endif
        const Taps w(filter);
        // Row by row: the sums of a row's columns left over (a chain of 10 additions) overlap
        // with the next row's.
        for (long r = 0; r < rows; ++r) {
            const float *line = &in[r][0] - half;
            long c = half;
            for (; c < last - 7; c += 8) {
                sum8(w, [&](long n) { return load8(line + c + n); }).store(blocks_start + at_block<width>(r, c, rows));
            }
            if (c < last) {
                // Lanes beyond the last column read zeros (their results are never read).
                sum8_one_by_one(w, [&](long n) { return load8_first(line + c + n, last - c); })
                    .store(blocks_start + at_block<width>(r, c, rows));
            }
        }
    }

    // The pass down the columns of each of a channel's parts, added to `saliency` in order
    // (the very first part of all is written, not added). The frontal detector's channels
    // have one to three parts; those counts get code of their own, with the parts unrolled.
    template <long width>
    void down_columns(const std::vector<dlib::matrix<float, 0, 1>> &filters, dlib::array2d<float> &saliency,
                      bool first) {
        // The 16-column kernels take the taps as they are; the 8-column sums, broadcast.
        taps_.clear();
#ifdef SIGHTLINE_AVX512_KERNELS
        if (width == 8)
#endif
            for (const auto &filter : filters) taps_.emplace_back(filter);
        switch (filters.size()) {
        case 1: return down_columns<width, 1>(filters, saliency, 0, first);
        case 2: return down_columns<width, 2>(filters, saliency, 0, first);
        case 3: return down_columns<width, 3>(filters, saliency, 0, first);
        default:
            for (unsigned long part = 0; part < filters.size(); ++part) {
                down_columns<width, 1>(filters, saliency, part, first && part == 0);
            }
        }
    }

    // Parts `from` … `from + parts - 1`, a block of 16 or 8 columns at a time, down its rows.
    template <long width, unsigned long parts>
    void down_columns(const std::vector<dlib::matrix<float, 0, 1>> &filters, dlib::array2d<float> &saliency,
                      unsigned long from, bool first) {
        const long rows = saliency.nr(), columns = saliency.nc(), last_row = rows - rest, last = columns - rest;
        long c = half;
#ifdef SIGHTLINE_AVX512_KERNELS
        if constexpr (width == 16) {
            for (; c < last; c += 16) {
                const float *taps[parts], *top[parts];
                for (unsigned long part = 0; part < parts; ++part) {
                    taps[part] = &filters[from + part](0);
                    top[part] = start(passes_[from + part]) + at_block<width>(0, c, rows);
                }
                wide_filter_passes::down_block<parts>(taps, top, last_row - half, &saliency[half][c],
                                                      saliency.width_step() / sizeof(float), first,
                                                      std::min(last - c, width));
            }
            return;
        }
#endif
        const Taps *w = &taps_[from];
        for (; c < last - 7; c += 8) {
            const float *top[parts];
            for (unsigned long part = 0; part < parts; ++part) {
                top[part] = start(passes_[from + part]) + at_block<width>(0, c, rows);
            }
            for (long r = half; r < last_row; ++r) {
                float *to = &saliency[r][c];
                dlib::simd8f sum = first ? dlib::simd8f(0) : load8(to);
                for (unsigned long part = 0; part < parts; ++part) {
                    const float *at = top[part] + (r - half) * width;
                    const dlib::simd8f term = sum8(w[part], [&](long n) { return load8(at + n * width); });
                    sum = first && part == 0 ? term : term + sum;
                }
                normalised(sum).store(to);
            }
        }
        if (c < last) {
            // The columns left over lie side by side in their block's rows (with room for 8).
            const long count = last - c;
            const float *top[parts];
            for (unsigned long part = 0; part < parts; ++part) {
                top[part] = start(passes_[from + part]) + at_block<width>(0, c, rows);
            }
            for (long r = half; r < last_row; ++r) {
                float *to = &saliency[r][c];
                dlib::simd8f sum = first ? dlib::simd8f(0) : load8_first(to, count);
                for (unsigned long part = 0; part < parts; ++part) {
                    const float *at = top[part] + (r - half) * width;
                    const dlib::simd8f term = sum8_one_by_one(w[part], [&](long n) { return load8(at + n * width); });
                    sum = first && part == 0 ? term : sum + term;
                }
                store8_first(normalised(sum), to, count);
            }
        }
    }

    bool wide_;                                // blocks of 16 columns, or of 8
    std::vector<std::vector<float>> passes_;  // a channel's parts after the pass along the rows
    std::vector<Taps> taps_;                   // a channel's parts' column taps
};

#endif
