#ifndef SIGHTLINE_CDLIB_EXACT_PYRAMID_H
#define SIGHTLINE_CDLIB_EXACT_PYRAMID_H
// One step of dlib's pyramid_down<6> (or pyramid_up's doubling) on 8-bit grey images,
// computable a band or a rectangle at a time with dlib's exact pixels, so that a level can be
// built on several threads, or only where a region scan needs it.
//
// pyramid_down<6> sizes the level below (5/6, rounded down) and calls resize_image's
// bilinear path for grey pixels. That path walks each output row with a double y that it
// adds y_scale to row by row, and within a row a float SIMD x (4 columns at a time) that it
// adds 4 * x_scale to, then finishes the last columns one by one in double. The sampling
// positions depend on those running sums, not on the row or column alone, so `plan` replays
// the sums once per size and `run` computes any output pixel with dlib's own expressions
// (dlib's simd4f and simd4i, assign_pixel) from them.
#include <dlib/image_transforms/interpolation.h>
#include <dlib/simd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ShimSupport.h"
#include "WidePyramidChunks.h"

class PyramidStep {
public:
    // `wide`: two chunks of 8 columns at a time, where the CPU has AVX-512 (a test runs both).
    explicit PyramidStep(bool wide = avx512_kernels_available()) : wide_(wide && avx512_kernels_available()) {}

    // The size of the level below one of rows x columns, as pyramid_down<6> sets it.
    static long down(long size) { return static_cast<long>((5 * size) / 6 + 0.5); }

    // Prepares for images of in_rows x in_columns; cheap when the size is the same.
    void plan(long in_rows, long in_columns) { plan(in_rows, in_columns, down(in_rows), down(in_columns)); }

    // The same for any output size: resize_image's bilinear path is pyramid_up's too
    // (pyramid_down<2>, to the size of its rect_up), where the output is larger.
    void plan(long in_rows, long in_columns, long out_rows, long out_columns) {
        if (in_rows == in_rows_ && in_columns == in_columns_ && out_rows == out_rows_ && out_columns == out_columns_) {
            return;
        }
        in_rows_ = in_rows;
        in_columns_ = in_columns;
        out_rows_ = out_rows;
        out_columns_ = out_columns;

        const double y_scale = (in_rows - 1) / static_cast<double>(std::max<long>(out_rows_ - 1, 1));
        rows_.resize(out_rows_);
        double y = -y_scale;
        for (long r = 0; r < out_rows_; ++r) {
            y += y_scale;
            const long top = static_cast<long>(std::floor(y));
            rows_[r] = {top, std::min(top + 1, in_rows - 1), y - top};
        }

        const double x_scale = (in_columns - 1) / static_cast<double>(std::max<long>(out_columns_ - 1, 1));
        columns_.resize(out_columns_);
        const double x = -4 * x_scale;
        const dlib::simd4f step = 4 * x_scale;
        dlib::simd4f xs(x, x + x_scale, x + 2 * x_scale, x + 3 * x_scale);
        long c = 0;
        for (;; c += 4) {
            xs += step;
            const dlib::simd4i left = dlib::simd4i(xs);
            int32_t lefts[4], rights[4];
            float fractions[4];
            left.store(lefts);
            (left + 1).store(rights);
            dlib::simd4f(xs - left).store(fractions);
            if (rights[3] >= in_columns) break;
            for (int lane = 0; lane < 4; ++lane) {
                if (c + lane < out_columns_) columns_[c + lane] = {lefts[lane], rights[lane], fractions[lane]};
            }
        }
        simd_columns_ = c;
        double tail = -x_scale + c * x_scale;
        for (; c < out_columns_; ++c) {
            tail += x_scale;
            const long left = static_cast<long>(std::floor(tail));
            columns_[c] = {static_cast<int32_t>(left), static_cast<int32_t>(std::min(left + 1, in_columns - 1)),
                           static_cast<float>(tail - left)};
        }
        fractions_.resize(out_columns_);
        for (long column = 0; column < out_columns_; ++column) fractions_[column] = columns_[column].fraction;
        chunks_.clear();
        for (long first = 0; first + 8 <= std::min(simd_columns_, out_columns_); first += 8) {
            Chunk chunk{columns_[first].left, {}};
            // Each right neighbour is the byte after the left one, and all must be within the
            // 16 bytes read, which must be within the row.
            if (chunk.base + 16 > in_columns || columns_[first + 7].right - chunk.base > 15) break;
            for (int lane = 0; lane < 16; ++lane) {
                chunk.shuffle[lane] = lane < 8 ? static_cast<uint8_t>(columns_[first + lane].left - chunk.base) : 0x80;
            }
            chunks_.push_back(chunk);
        }
    }

    long out_rows() const { return out_rows_; }
    long out_columns() const { return out_columns_; }

    // The output rows and columns of `area` (clipped to the output), from `in`, into `out`
    // (already out_rows() x out_columns()).
    void run(const LumaView &in, dlib::array2d<unsigned char> &out, dlib::rectangle area) const {
        area = area.intersect(dlib::rectangle(0, 0, out_columns_ - 1, out_rows_ - 1));
        if (area.is_empty()) return;
        // Whole chunks of 8 inside the area and dlib's SIMD columns, 8 columns at once; the
        // columns before and after them as dlib's loop has them.
        const long first_chunk = (area.left() + 7) / 8;
        const long end_chunk = std::min(static_cast<long>(chunks_.size()), (area.right() + 1) / 8);
        for (long r = area.top(); r <= area.bottom(); ++r) {
            const Row &row = rows_[r];
            const uint8_t *top = in.pixels + row.top * in.bytes_per_row;
            const uint8_t *bottom = in.pixels + row.bottom * in.bytes_per_row;
            unsigned char *dest = &out[r][0];
            long c = area.left();
#if defined(__AVX2__)
            if (end_chunk > first_chunk) {
                run_columns(row, top, bottom, dest, c, 8 * first_chunk - 1);
                long chunk = first_chunk;
#ifdef SIGHTLINE_AVX512_KERNELS
                if (wide_) {
                    chunk = wide_pyramid::chunk_pairs(chunks_.data(), fractions_.data(), top, bottom, dest,
                                                      static_cast<float>(row.fraction),
                                                      static_cast<float>(1 - row.fraction), first_chunk, end_chunk);
                }
#endif
                run_chunks(row, top, bottom, dest, chunk, end_chunk);
                c = 8 * end_chunk;
            }
#endif
            run_columns(row, top, bottom, dest, c, area.right());
        }
    }

    // The input pixels `run` reads to compute `area` of the output.
    dlib::rectangle source_of(dlib::rectangle area) const {
        area = area.intersect(dlib::rectangle(0, 0, out_columns_ - 1, out_rows_ - 1));
        if (area.is_empty()) return area;
        const long first_group = area.left() - area.left() % 4;
        long left = columns_[first_group].left, right = columns_[area.right()].right;
        for (long c = first_group; c <= area.right(); ++c) {
            left = std::min<long>(left, columns_[c].left);
            right = std::max<long>(right, columns_[c].right);
        }
        return dlib::rectangle(left, rows_[area.top()].top, right, rows_[area.bottom()].bottom);
    }

private:
    struct Row {
        long top, bottom;
        double fraction;
    };
    struct Column {
        int32_t left, right;
        float fraction;
    };

    // Output columns `from` … `to` of one row, as dlib's loop computes them: in its groups
    // of 4 (a group that starts before `from` is computed whole and stored from `from`),
    // then one by one in double.
    void run_columns(const Row &row, const uint8_t *top, const uint8_t *bottom, unsigned char *dest, long from,
                     long to) const {
        if (from > to) return;
        const dlib::simd4f tb_frac = row.fraction;
        const dlib::simd4f inv_tb_frac = 1 - row.fraction;
        long c = from - from % 4;
        for (; c < simd_columns_ && c <= to; c += 4) {
            const Column *k = &columns_[c];
            // Lanes past the output's end (dlib computes and writes them too) read the
            // last real column's neighbours; only columns from `from` to `to` are stored.
            auto at = [&](int lane) -> const Column & { return c + lane < out_columns_ ? k[lane] : k[0]; };
            const dlib::simd4f lr_frac(at(0).fraction, at(1).fraction, at(2).fraction, at(3).fraction);
            const dlib::simd4f inv_lr_frac = 1 - lr_frac;
            const dlib::simd4f tlf = inv_tb_frac * inv_lr_frac;
            const dlib::simd4f trf = inv_tb_frac * lr_frac;
            const dlib::simd4f blf = tb_frac * inv_lr_frac;
            const dlib::simd4f brf = tb_frac * lr_frac;
            const dlib::simd4f tl(top[at(0).left], top[at(1).left], top[at(2).left], top[at(3).left]);
            const dlib::simd4f tr(top[at(0).right], top[at(1).right], top[at(2).right], top[at(3).right]);
            const dlib::simd4f bl(bottom[at(0).left], bottom[at(1).left], bottom[at(2).left], bottom[at(3).left]);
            const dlib::simd4f br(bottom[at(0).right], bottom[at(1).right], bottom[at(2).right],
                                  bottom[at(3).right]);
            const dlib::simd4f value = dlib::simd4f(tlf * tl + trf * tr + blf * bl + brf * br);
            float values[4];
            value.store(values);
            for (int lane = 0; lane < 4; ++lane) {
                const long column = c + lane;
                if (column >= from && column <= to && column < out_columns_) {
                    dest[column] = static_cast<unsigned char>(values[lane] + 0.5);
                }
            }
        }
        for (c = std::max(c, from); c <= to; ++c) {
            const Column &k = columns_[c];
            const double tb = row.fraction;
            const float lr = k.fraction;
            float tl = 0, tr = 0, bl = 0, br = 0;
            dlib::assign_pixel(tl, top[k.left]);
            dlib::assign_pixel(tr, top[k.right]);
            dlib::assign_pixel(bl, bottom[k.left]);
            dlib::assign_pixel(br, bottom[k.right]);
            const float temp = (1 - tb) * ((1 - lr) * tl + lr * tr) + tb * ((1 - lr) * bl + lr * br);
            dlib::assign_pixel(dest[c], temp);
        }
    }

#if defined(__AVX2__)
    // Columns 8 * first … 8 * end - 1 of one row, 8 at a time with each lane's arithmetic
    // exactly dlib's SIMD column's (float lanes add and multiply alike 4 or 8 wide): the
    // chunk's 16 source bytes are read at once and shuffled into each lane's left and right
    // neighbour, and value + 0.5 is truncated in double, as dlib's assignment does.
    void run_chunks(const Row &row, const uint8_t *top, const uint8_t *bottom, unsigned char *dest, long first,
                    long end) const {
        const __m256 tb_frac = _mm256_set1_ps(static_cast<float>(row.fraction));
        const __m256 inv_tb_frac = _mm256_set1_ps(static_cast<float>(1 - row.fraction));
        const __m256 one = _mm256_set1_ps(1);
        const __m256d half = _mm256_set1_pd(0.5);
        const __m128i next = _mm_set1_epi8(1);
        auto widen = [](__m128i bytes) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)); };
        for (long chunk = first; chunk < end; ++chunk) {
            const Chunk &k = chunks_[chunk];
            const __m128i shuffle = _mm_loadu_si128(reinterpret_cast<const __m128i *>(k.shuffle));
            const __m128i above = _mm_loadu_si128(reinterpret_cast<const __m128i *>(top + k.base));
            const __m128i below = _mm_loadu_si128(reinterpret_cast<const __m128i *>(bottom + k.base));
            const __m256 tl = widen(_mm_shuffle_epi8(above, shuffle));
            const __m256 tr = widen(_mm_shuffle_epi8(above, _mm_add_epi8(shuffle, next)));
            const __m256 bl = widen(_mm_shuffle_epi8(below, shuffle));
            const __m256 br = widen(_mm_shuffle_epi8(below, _mm_add_epi8(shuffle, next)));
            const __m256 lr_frac = _mm256_loadu_ps(&fractions_[8 * chunk]);
            const __m256 inv_lr_frac = _mm256_sub_ps(one, lr_frac);
            const __m256 tlf = _mm256_mul_ps(inv_tb_frac, inv_lr_frac);
            const __m256 trf = _mm256_mul_ps(inv_tb_frac, lr_frac);
            const __m256 blf = _mm256_mul_ps(tb_frac, inv_lr_frac);
            const __m256 brf = _mm256_mul_ps(tb_frac, lr_frac);
            __m256 value = _mm256_add_ps(_mm256_mul_ps(tlf, tl), _mm256_mul_ps(trf, tr));
            value = _mm256_add_ps(value, _mm256_mul_ps(blf, bl));
            value = _mm256_add_ps(value, _mm256_mul_ps(brf, br));
            const __m256d low_half = _mm256_cvtps_pd(_mm256_castps256_ps128(value));
            const __m256d high_half = _mm256_cvtps_pd(_mm256_extractf128_ps(value, 1));
            const __m128i low = _mm256_cvttpd_epi32(_mm256_add_pd(low_half, half));
            const __m128i high = _mm256_cvttpd_epi32(_mm256_add_pd(high_half, half));
            const __m128i words = _mm_packus_epi32(low, high);
            _mm_storel_epi64(reinterpret_cast<__m128i *>(dest + 8 * chunk), _mm_packus_epi16(words, words));
        }
    }
#endif

    // 8 of dlib's SIMD columns, from column 8 * index: where their left neighbours lie in
    // the 16 input bytes from `base`.
    struct Chunk {
        int32_t base;
        uint8_t shuffle[16];
    };

    bool wide_;
    long in_rows_ = -1, in_columns_ = -1, out_rows_ = 0, out_columns_ = 0, simd_columns_ = 0;
    std::vector<Row> rows_;
    std::vector<Column> columns_;
    std::vector<float> fractions_;  // columns_' fractions, side by side
    std::vector<Chunk> chunks_;     // the chunks of 8 within dlib's SIMD columns whose bytes can be read
};

#endif
