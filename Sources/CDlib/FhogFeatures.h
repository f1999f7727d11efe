#ifndef SIGHTLINE_CDLIB_FHOG_FEATURES_H
#define SIGHTLINE_CDLIB_FHOG_FEATURES_H
// dlib's HOG features of an 8-bit grey image (`extract_fhog_features` with 8-pixel cells)
// with dlib's exact floats, in fewer instructions.
//
// dlib snaps each pixel's gradient to one of 18 orientations with 9 dot products, then adds
// its magnitude, weighted, to 4 cells' histograms one float at a time: 32 scalar
// read-add-writes per 8 pixels, where neighbouring pixels often hit the same bin and wait
// for each other's store. Then it normalises every cell with 4-wide SIMD and a horizontal
// sum per feature. Here:
// - The orientation comes from a table of every integer gradient (-255…255 each way),
//   filled once with dlib's own comparisons of dlib's own dot products.
// - Each pixel's 4 weighted magnitudes are formed 8 pixels at a time as dlib forms them
//   (its SIMD columns as `vy * (vx * v)`, its last columns one by one as `(vy * vx) * v`).
// - They are added to the histograms in an order that keeps every bin's own sequence of
//   additions (row after row, left to right, as dlib's) but puts other cells between two
//   additions to the same cell, so none waits for the last; a pixel's additions to the
//   cell above and the one below are one 2-float addition.
// - The bins of 8 pixels are looked up in one gather; where the CPU has AVX-512, a row's
//   gradients, weights and bins go 16 pixels at a time (`WideFhogGradients.h`), each lane
//   with the same operations.
// - The normalisation runs across 8 cells at once, each lane doing one cell's dlib
//   arithmetic: the same sums in the same order, and dlib's horizontal sum of 4 lanes as
//   the same two additions its build makes.
// Float addition is not associative, so only the order of each bin's additions matters for
// exactness, and that is dlib's; `sl_fhog_mismatches` compares every feature bit for bit.
#include <dlib/image_transforms/fhog.h>
#include <dlib/simd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ShimSupport.h"
#include "WideFhogGradients.h"

class FhogFeatures {
public:
    using Features = dlib::array<dlib::array2d<float>>;

    // `wide`: a row's pixels 16 at a time, where the CPU has AVX-512 (a test runs both).
    explicit FhogFeatures(bool wide = avx512_kernels_available()) : wide_(wide && avx512_kernels_available()) {}

    // What `dlib::extract_fhog_features(image, hog, 8, rows_padding, columns_padding)`
    // writes into `hog`, which holds nothing or what this class or dlib wrote into it.
    void extract(const LumaView &image, Features &hog, int rows_padding, int columns_padding) {
        cells_rows_ = static_cast<int>(static_cast<float>(image.rows) / 8.0f + 0.5f);
        cells_columns_ = static_cast<int>(static_cast<float>(image.columns) / 8.0f + 0.5f);
        // Images with no full block of cells: dlib's own answer (no features, 31 planes).
        if (cells_rows_ < 3 || cells_columns_ < 3) {
            dlib::extract_fhog_features(image, hog, 8, rows_padding, columns_padding);
            return;
        }
        // Every row of the histograms and norms is this wide, so that 8 lanes at a time
        // never leave them (the lanes past the last cell are never stored).
        width_ = (cells_columns_ + 2 + 7) / 8 * 8 + 8;
        // Not cleared: `accumulate` writes every row that `normalise` reads.
        histograms_.resize(static_cast<size_t>(cells_rows_ + 2) * bins * width_);
        accumulate(image);
        normalise(hog, rows_padding, columns_padding);
    }

private:
    static constexpr int bins = 18;
    static constexpr unsigned long planes = 31;  // dlib's HOG features per cell
    static constexpr int gradients = 511;  // -255 … 255

    // The orientation dlib snaps the integer gradient (gx, gy) to, at
    // [(gy + 255) * 511 + gx + 255].
    static const std::vector<uint8_t> &orientations() {
        static const std::vector<uint8_t> table = [] {
            // impl_extract_fhog_features' unit vectors and its one-by-one comparisons (its
            // SIMD comparisons decide the same: a dot that beats the best is positive).
            dlib::matrix<float, 2, 1> directions[9];
            directions[0] = 1.0000, 0.0000;
            directions[1] = 0.9397, 0.3420;
            directions[2] = 0.7660, 0.6428;
            directions[3] = 0.500, 0.8660;
            directions[4] = 0.1736, 0.9848;
            directions[5] = -0.1736, 0.9848;
            directions[6] = -0.5000, 0.8660;
            directions[7] = -0.7660, 0.6428;
            directions[8] = -0.9397, 0.3420;
            // 3 bytes to spare at the end, for the gathers' 4-byte reads.
            std::vector<uint8_t> bins(gradients * gradients + 3);
            for (int gy = -255; gy <= 255; ++gy) {
                for (int gx = -255; gx <= 255; ++gx) {
                    dlib::matrix<float, 2, 1> grad;
                    grad = gx, gy;
                    float best_dot = 0;
                    int best_o = 0;
                    for (int o = 0; o < 9; o++) {
                        const float dot = dlib::dot(directions[o], grad);
                        if (dot > best_dot) {
                            best_dot = dot;
                            best_o = o;
                        } else if (-dot > best_dot) {
                            best_dot = -dot;
                            best_o = o + 9;
                        }
                    }
                    bins[(gy + 255) * gradients + gx + 255] = static_cast<uint8_t>(best_o);
                }
            }
            return bins;
        }();
        return table;
    }

    float *histogram_row(int row) { return histograms_.data() + static_cast<size_t>(row) * bins * width_; }

    // 8 pixels widened to ints.
    static dlib::simd8i load8(const uint8_t *at) {
#if defined(__AVX2__)
        return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(at)));
#else
        return dlib::simd8i(at[0], at[1], at[2], at[3], at[4], at[5], at[6], at[7]);
#endif
    }

    // Every pixel's gradient into the cells' orientation histograms, as dlib's first loop.
    //
    // Pixel row y adds to histogram rows gy = (y + 4) / 8 and gy + 1 (dlib's iyp + 1 and
    // iyp + 2), so each histogram row takes the additions of 8 pixel rows as the lower row,
    // then of the next 8 as the upper. While pixel rows with the same gy are added, their
    // upper and lower sums sit side by side in `pairs_`, so one 2-float addition makes both;
    // when gy moves on, the upper sums are final (copied out) and the lower ones go on as the
    // next upper. Each sum sees the same additions in the same order as dlib's.
    void accumulate(const LumaView &image) {
        const std::vector<uint8_t> &orientation = orientations();
        const int visible_rows = static_cast<int>(std::min<long>(cells_rows_ * 8L, image.rows)) - 1;
        const int visible_columns = static_cast<int>(std::min<long>(cells_columns_ * 8L, image.columns)) - 1;
        // dlib's SIMD loop takes columns 1, 9, … while 8 fit before visible_columns - 7;
        // the rest one by one.
        int simd_end = 1;
        while (simd_end < visible_columns - 7) simd_end += 8;
        const size_t columns = static_cast<size_t>(visible_columns) + 8;
        left_.resize(2 * columns);
        right_.resize(2 * columns);
        offsets_.resize(columns);
        pairs_.assign(static_cast<size_t>(bins) * width_ * 2, 0.0f);
        // The horizontal weights of dlib's SIMD columns: every group of 8 starts at a column
        // 1 mod 8, so each lane's weight is the same in every group.
        const dlib::simd8f first(1, 2, 3, 4, 5, 6, 7, 8);
        const dlib::simd8f xp = (first + 0.5) / 8.0f + 0.5;
        const dlib::simd8f vx0 = xp - dlib::simd8i(xp);
        const dlib::simd8f vx1 = 1.0f - vx0;
        const int stride = 2 * width_;  // from one bin's pairs to the next one's
        float vx0_wide[16], vx1_wide[16];  // vx0 and vx1 for 16 pixels: two groups of 8
        vx0.store(vx0_wide);
        vx0.store(vx0_wide + 8);
        vx1.store(vx1_wide);
        vx1.store(vx1_wide + 8);
        int band = 0;  // the gy of the rows in pairs_
        for (int y = 1; y < visible_rows; ++y) {
            const float yp = (static_cast<float>(y) + 0.5) / 8.0f - 0.5;
            const int iyp = static_cast<int>(std::floor(yp));
            const float vy0 = yp - iyp;
            const float vy1 = 1.0 - vy0;
            if (iyp + 1 != band) {
                next_band(band);
                band = iyp + 1;
            }
            const uint8_t *above = image.pixels + (y - 1) * image.bytes_per_row;
            const uint8_t *line = image.pixels + y * image.bytes_per_row;
            const uint8_t *below = image.pixels + (y + 1) * image.bytes_per_row;
            int x = 1;
#ifdef SIGHTLINE_AVX512_KERNELS
            if (wide_) {
                x = wide_fhog::gradients(above, line, below, x, simd_end, vx0_wide, vx1_wide, vy1, vy0,
                                         orientation.data(), stride, left_.data(), right_.data(), offsets_.data());
            }
#endif
            for (; x < simd_end; x += 8) {
                const dlib::simd8i gx = load8(line + x + 1) - load8(line + x - 1);
                const dlib::simd8i gy = load8(below + x) - load8(above + x);
                const dlib::simd8f fx = gx, fy = gy;
                const dlib::simd8f v = dlib::sqrt(fx * fx + fy * fy);
                const dlib::simd8f to_right = vx0 * v, to_left = vx1 * v;
                interleave(vy1 * to_left, vy0 * to_left, left_.data() + 2 * x);
                interleave(vy1 * to_right, vy0 * to_right, right_.data() + 2 * x);
                bin_offsets(orientation.data(), (gy + 255) * gradients + gx + 255, stride).store(offsets_.data() + x);
            }
            for (; x < visible_columns; ++x) {
                const int gx = static_cast<int>(line[x + 1]) - line[x - 1];
                const int gy = static_cast<int>(below[x]) - above[x];
                const float v = std::sqrt(static_cast<float>(gx * gx + gy * gy));
                const float xp1 = (static_cast<double>(x) + 0.5) / 8.0 - 0.5;
                const float to_right = xp1 - static_cast<int>(std::floor(xp1));
                const float to_left = 1.0 - to_right;
                left_[2 * x] = vy1 * to_left * v;
                left_[2 * x + 1] = vy0 * to_left * v;
                right_[2 * x] = vy1 * to_right * v;
                right_[2 * x + 1] = vy0 * to_right * v;
                offsets_[x] = orientation[(gy + 255) * gradients + gx + 255] * stride;
            }
            add_row(visible_columns);
        }
        next_band(band);
        next_band(band + 1);
    }

    // Where in pairs_ the bins of 8 pixels start, from their gradients' places in the table.
    static dlib::simd8i bin_offsets(const uint8_t *table, const dlib::simd8i &gradient, int stride) {
#if defined(__AVX2__)
        // 4 bytes read at each place, the first kept: a gather instead of 8 loads and stores.
        const __m256i bins = _mm256_and_si256(
            _mm256_i32gather_epi32(reinterpret_cast<const int *>(table), gradient, 1), _mm256_set1_epi32(0xff));
        return _mm256_mullo_epi32(bins, _mm256_set1_epi32(stride));
#else
        int32_t lanes[8];
        gradient.store(lanes);
        for (int32_t &lane : lanes) lane = table[lane] * stride;
        dlib::simd8i offsets;
        offsets.load(lanes);
        return offsets;
#endif
    }

    // Lanes of `upper` and `lower` as 8 (upper, lower) pairs.
    static void interleave(const dlib::simd8f &upper, const dlib::simd8f &lower, float *to) {
        float u[8], l[8];
        upper.store(u);
        lower.store(l);
        for (int lane = 0; lane < 8; ++lane) {
            to[2 * lane] = u[lane];
            to[2 * lane + 1] = l[lane];
        }
    }

    // Histogram row `band` is complete: copied out of the pairs' upper sums, whose place the
    // lower sums (row band + 1 so far) take, with lower sums of 0 for the next band.
    void next_band(int band) {
        float *row = histogram_row(band);
        float *pair = pairs_.data();
        for (int i = 0, n = bins * width_; i < n; ++i, pair += 2) {
            row[i] = pair[0];
            pair[0] = pair[1];
            pair[1] = 0;
        }
    }

    // One row's weights into the pairs. Pixel x belongs to cell column g = (x + 4) / 8 (x
    // from 8g - 4 to 8g + 3) and adds to columns g and g + 1; so column j takes, in dlib's
    // order, the pixels of group j - 1, then those of group j. Both passes go along the
    // groups for each pixel position k within them: additions to one cell are 8 or 16 apart,
    // and none waits for the one before.
    void add_row(int visible_columns) {
        float *pairs = pairs_.data();
        const float *left = left_.data(), *right = right_.data();
        const int32_t *offset = offsets_.data();
        const int last = visible_columns - 1;
        auto add = [](float *to, const float *weights) {
            const __m128 sum = _mm_add_ps(load2(to), load2(weights));
            _mm_storel_pi(reinterpret_cast<__m64 *>(to), sum);
        };
        for (int k = 0; k < 8; ++k) {
            for (int g = k < 5 ? 1 : 0, x = 8 * g - 4 + k; x <= last; ++g, x += 8) {
                add(pairs + offset[x] + 2 * (g + 1), right + 2 * x);
            }
        }
        for (int k = 0; k < 8; ++k) {
            for (int g = k < 5 ? 1 : 0, x = 8 * g - 4 + k; x <= last; ++g, x += 8) {
                add(pairs + offset[x] + 2 * g, left + 2 * x);
            }
        }
    }

    static __m128 load2(const float *at) {
        return _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(at)));
    }

    // The cells' energies, then the 31 features of every cell with a full block around it,
    // as dlib's last two loops.
    void normalise(Features &hog, int rows_padding, int columns_padding) {
        const int hog_rows = cells_rows_ - 2, hog_columns = cells_columns_ - 2;
        // Planes already of this size keep the zero borders this class or dlib gave them, as
        // only the inside is written: zeroing them again cost thousands of short memsets a frame.
        if (hog.size() != planes || hog[0].nr() != hog_rows + rows_padding - 1 ||
            hog[0].nc() != hog_columns + columns_padding - 1) {
            dlib::impl_fhog::init_hog(hog, hog_rows, hog_columns, rows_padding, columns_padding);
        }
        const int row_offset = (rows_padding - 1) / 2, column_offset = (columns_padding - 1) / 2;

        // norm[r][c]: the sum over 9 orientations of (bin o + bin o + 9) squared, in order.
        norms_.assign(static_cast<size_t>(cells_rows_) * width_, 0.0f);
        for (int r = 0; r < cells_rows_; ++r) {
            const float *cells = histogram_row(r + 1) + 1;
            float *norm = norms_.data() + static_cast<size_t>(r) * width_;
            for (int c = 0; c < cells_columns_; c += 8) {
                dlib::simd8f sum = 0;
                for (int o = 0; o < 9; ++o) {
                    const dlib::simd8f both = load(cells + o * width_ + c) + load(cells + (o + 9) * width_ + c);
                    sum += both * both;
                }
                sum.store(norm + c);
            }
        }

        // Each block of 2x2 cells (top-left at r, c): dlib's nn = 0.2 * sqrt(sum + eps) and
        // n = 0.1 / nn, the same for the 4 cells that share it.
        const float eps = 0.0001;
        const int block_rows = hog_rows + 1, block_columns = hog_columns + 1;
        block_scale_.resize(static_cast<size_t>(block_rows) * width_);
        block_factor_.resize(static_cast<size_t>(block_rows) * width_);
        for (int r = 0; r < block_rows; ++r) {
            const float *top = norms_.data() + static_cast<size_t>(r) * width_;
            const float *bottom = top + width_;
            for (int c = 0; c < block_columns; c += 8) {
                const dlib::simd8f sum = load(top + c) + load(top + c + 1) + load(bottom + c) + load(bottom + c + 1);
                const dlib::simd8f nn = 0.2f * dlib::sqrt(sum + eps);
                nn.store(block_scale_.data() + static_cast<size_t>(r) * width_ + c);
                (0.1f / nn).store(block_factor_.data() + static_cast<size_t>(r) * width_ + c);
            }
        }

        for (int y = 0; y < hog_rows; ++y) {
            // dlib's 4 lanes, each a block around the cell: below right, above right, below
            // left, above left.
            const float *nn_above = block_scale_.data() + static_cast<size_t>(y) * width_;
            const float *nn_below = nn_above + width_;
            const float *n_above = block_factor_.data() + static_cast<size_t>(y) * width_;
            const float *n_below = n_above + width_;
            const float *cells = histogram_row(y + 2) + 2;
            for (int x = 0; x < hog_columns; x += 8) {
                const dlib::simd8f nn[4] = {load(nn_below + x + 1), load(nn_above + x + 1), load(nn_below + x),
                                            load(nn_above + x)};
                const dlib::simd8f n[4] = {load(n_below + x + 1), load(n_above + x + 1), load(n_below + x),
                                           load(n_above + x)};
                auto normalised = [&](const dlib::simd8f &value, dlib::simd8f h[4]) {
                    for (int lane = 0; lane < 4; ++lane) h[lane] = dlib::min(value, nn[lane]) * n[lane];
                    return horizontal_sum(h);
                };
                const int count = std::min(8, hog_columns - x);
                auto store = [&](int plane, const dlib::simd8f &value) {
                    float *to = &hog[plane][y + row_offset][x + column_offset];
                    if (count == 8) {
                        value.store(to);
                    } else {
                        float lanes[8];
                        value.store(lanes);
                        std::memcpy(to, lanes, count * sizeof(float));
                    }
                };
                // Contrast-sensitive features, and the texture sums over them in threes.
                dlib::simd8f texture[4] = {0, 0, 0, 0};
                for (int o = 0; o < bins; o += 3) {
                    dlib::simd8f h0[4], h1[4], h2[4];
                    store(o, normalised(load(cells + o * width_ + x), h0));
                    store(o + 1, normalised(load(cells + (o + 1) * width_ + x), h1));
                    store(o + 2, normalised(load(cells + (o + 2) * width_ + x), h2));
                    for (int lane = 0; lane < 4; ++lane) texture[lane] += h0[lane] + h1[lane] + h2[lane];
                }
                // Contrast-insensitive features.
                for (int o = 0; o < 9; ++o) {
                    dlib::simd8f h[4];
                    store(o + 18,
                          normalised(load(cells + o * width_ + x) + load(cells + (o + 9) * width_ + x), h));
                }
                for (int lane = 0; lane < 4; ++lane) store(27 + lane, texture[lane] * static_cast<float>(2 * 0.2357));
            }
        }
    }

    // dlib's `sum` of a simd4f whose lanes are h[0…3], as its build adds them up.
    static dlib::simd8f horizontal_sum(const dlib::simd8f h[4]) {
#if defined(DLIB_HAVE_SSE41) || defined(DLIB_HAVE_SSE3)
        return (h[0] + h[1]) + (h[2] + h[3]);  // dpps, or two haddps
#else
        return (h[0] + h[2]) + (h[1] + h[3]);  // the high half onto the low, then lane 1 onto 0
#endif
    }

    static dlib::simd8f load(const float *at) {
        dlib::simd8f v;
        v.load(at);
        return v;
    }

    bool wide_;  // 16 pixels at a time
    int cells_rows_ = 0, cells_columns_ = 0, width_ = 0;
    std::vector<float> histograms_;    // [cell row][bin][cell column], one cell of border
    std::vector<float> norms_;         // [cell row][cell column]
    std::vector<float> block_scale_;   // nn of the block at [row][column]
    std::vector<float> block_factor_;  // n of the block at [row][column]
    std::vector<float> pairs_;         // [bin][cell column][upper, lower] of the current band
    std::vector<float> left_, right_;  // a row's pixels' (upper, lower) weights for cell g, g + 1
    std::vector<int32_t> offsets_;     // where a row's pixels' bins start in pairs_
};

#endif
