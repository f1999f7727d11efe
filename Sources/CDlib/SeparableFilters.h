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
// the end; the columns left over take the taps one after the other; the parts are added to
// the output in dlib's order. So the saliency image is dlib's bit for bit
// (`sl_filter_mismatches`), and with it every score and box.
#include <dlib/image_processing/scan_fhog_pyramid.h>

#include <algorithm>
#include <vector>

class SeparableFilters {
public:
    using FilterBank = dlib::scan_fhog_pyramid<dlib::pyramid_down<6>>::fhog_filterbank;

    // What `dlib::impl::apply_filters_to_fhog(filters, feats, saliency)` returns and writes.
    dlib::rectangle apply(const FilterBank &filters, const dlib::array<dlib::array2d<float>> &feats,
                          dlib::array2d<float> &saliency) {
        if (!fits(filters, feats)) return dlib::impl::apply_filters_to_fhog(filters, feats, saliency);
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
                along_rows(feats[channel], parts[part], passes_[part]);
            }
            down_columns(filters.col_filters[channel], saliency, first);
            first = false;
        }
        return inner;
    }

private:
    static constexpr long taps = 10;
    static constexpr long half = taps / 2;        // dlib's first_row and first_col
    static constexpr long rest = (taps - 1) / 2;  // rows and columns after the last output

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

    struct Taps {
        dlib::simd8f wide[taps];
        float narrow[taps];
        explicit Taps(const dlib::matrix<float, 0, 1> &filter) {
            for (long n = 0; n < taps; ++n) {
                narrow[n] = filter(n);
                wide[n] = filter(n);
            }
        }
    };

    // A sum over 8 columns at once, as dlib forms it.
    template <typename Load> static inline dlib::simd8f sum8(const Taps &w, Load load) {
        dlib::simd8f a = 0, b = 0, c = 0;
        long n = 0;
        for (; n < taps - 2; n += 3) {
            a += load(n) * w.wide[n];
            b += load(n + 1) * w.wide[n + 1];
            c += load(n + 2) * w.wide[n + 2];
        }
        for (; n < taps; ++n) a += load(n) * w.wide[n];
        a += b + c;
        return a;
    }

    // A sum over one of the columns left over, as dlib forms it.
    template <typename Load> static inline float sum1(const Taps &w, Load load) {
        float sum = 0;
        for (long n = 0; n < taps; ++n) sum += load(n) * w.narrow[n];
        return sum;
    }

    static dlib::simd8f load8(const float *at) {
        dlib::simd8f v;
        v.load(at);
        return v;
    }

    // Where column c of row r of a part's pass along the rows lies: columns from `half` on
    // in blocks of 8, each block's rows one after the other, so that the pass down the
    // columns finds the 10 rows it reads at fixed distances from one pointer.
    static long at_block(long r, long c, long rows) { return ((c - half) / 8 * rows + r) * 8 + (c - half) % 8; }

    // One part's pass along every row into `out`.
    static void along_rows(const dlib::array2d<float> &in, const dlib::matrix<float, 0, 1> &filter,
                           std::vector<float> &out) {
        const Taps w(filter);
        const long rows = in.nr(), columns = in.nc(), last = columns - rest;
        out.resize(((last - half + 7) / 8) * rows * 8);
        for (long r = 0; r < rows; ++r) {
            const float *line = &in[r][0] - half;
            long c = half;
            for (; c < last - 7; c += 8) {
                sum8(w, [&](long n) { return load8(line + c + n); }).store(out.data() + at_block(r, c, rows));
            }
            for (; c < last; ++c) out[at_block(r, c, rows)] = sum1(w, [&](long n) { return line[c + n]; });
        }
    }

    // The pass down the columns of each of a channel's parts, added to `saliency` in order
    // (the very first part of all is written, not added). The frontal detector's channels
    // have one to three parts; those counts get code of their own, with the parts unrolled.
    void down_columns(const std::vector<dlib::matrix<float, 0, 1>> &filters, dlib::array2d<float> &saliency,
                      bool first) {
        taps_.clear();
        for (const auto &filter : filters) taps_.emplace_back(filter);
        switch (filters.size()) {
        case 1: return down_columns<1>(saliency, 0, first);
        case 2: return down_columns<2>(saliency, 0, first);
        case 3: return down_columns<3>(saliency, 0, first);
        default:
            for (unsigned long part = 0; part < filters.size(); ++part) {
                down_columns<1>(saliency, part, first && part == 0);
            }
        }
    }

    // Parts `from` … `from + parts - 1`, a block of 8 columns at a time, down its rows.
    template <unsigned long parts> void down_columns(dlib::array2d<float> &saliency, unsigned long from, bool first) {
        const long rows = saliency.nr(), columns = saliency.nc(), last_row = rows - rest, last = columns - rest;
        const Taps *w = &taps_[from];
        long c = half;
        for (; c < last - 7; c += 8) {
            const float *top[parts];
            for (unsigned long part = 0; part < parts; ++part) {
                top[part] = passes_[from + part].data() + at_block(0, c, rows);
            }
            for (long r = half; r < last_row; ++r) {
                float *to = &saliency[r][c];
                dlib::simd8f sum = first ? dlib::simd8f(0) : load8(to);
                for (unsigned long part = 0; part < parts; ++part) {
                    const float *at = top[part] + (r - half) * 8;
                    const dlib::simd8f term = sum8(w[part], [&](long n) { return load8(at + n * 8); });
                    sum = first && part == 0 ? term : term + sum;
                }
                sum.store(to);
            }
        }
        for (; c < last; ++c) {
            for (long r = half; r < last_row; ++r) {
                float *to = &saliency[r][c];
                float sum = first ? 0 : *to;
                for (unsigned long part = 0; part < parts; ++part) {
                    const float *at = passes_[from + part].data() + at_block(r - half, c, rows);
                    const float term = sum1(w[part], [&](long n) { return at[n * 8]; });
                    sum = first && part == 0 ? term : sum + term;
                }
                *to = sum;
            }
        }
    }

    std::vector<std::vector<float>> passes_;  // a channel's parts after the pass along the rows
    std::vector<Taps> taps_;                   // a channel's parts' column taps
};

#endif
