#ifndef SIGHTLINE_CDLIB_EXACT_PYRAMID_H
#define SIGHTLINE_CDLIB_EXACT_PYRAMID_H
// One step of dlib's pyramid_down<6> on 8-bit grey images, computable a band or a rectangle
// at a time with dlib's exact pixels, so that a level can be built on several threads, or
// only where a region scan needs it.
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

class PyramidStep {
public:
    // The size of the level below one of rows x columns, as pyramid_down<6> sets it.
    static long down(long size) { return static_cast<long>((5 * size) / 6 + 0.5); }

    // Prepares for images of in_rows x in_columns; cheap when the size is the same.
    void plan(long in_rows, long in_columns) {
        if (in_rows == in_rows_ && in_columns == in_columns_) return;
        in_rows_ = in_rows;
        in_columns_ = in_columns;
        out_rows_ = down(in_rows);
        out_columns_ = down(in_columns);

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
    }

    long out_rows() const { return out_rows_; }
    long out_columns() const { return out_columns_; }

    // The output rows and columns of `area` (clipped to the output), from `in`, into `out`
    // (already out_rows() x out_columns()).
    void run(const LumaView &in, dlib::array2d<unsigned char> &out, dlib::rectangle area) const {
        area = area.intersect(dlib::rectangle(0, 0, out_columns_ - 1, out_rows_ - 1));
        if (area.is_empty()) return;
        // SIMD groups start at multiples of 4, as dlib's loop does.
        const long first_group = area.left() - area.left() % 4;
        for (long r = area.top(); r <= area.bottom(); ++r) {
            const Row &row = rows_[r];
            const uint8_t *top = in.pixels + row.top * in.bytes_per_row;
            const uint8_t *bottom = in.pixels + row.bottom * in.bytes_per_row;
            unsigned char *dest = &out[r][0];
            const dlib::simd4f tb_frac = row.fraction;
            const dlib::simd4f inv_tb_frac = 1 - row.fraction;
            long c = first_group;
            for (; c < simd_columns_ && c <= area.right(); c += 4) {
                const Column *k = &columns_[c];
                // Lanes past the output's end (dlib computes and writes them too) read the
                // last real column's neighbours; only columns inside `area` are stored.
                auto at = [&](int lane) -> const Column & { return c + lane < out_columns_ ? k[lane] : k[0]; };
                const dlib::simd4f lr_frac(at(0).fraction, at(1).fraction, at(2).fraction, at(3).fraction);
                const dlib::simd4f inv_lr_frac = 1 - lr_frac;
                const dlib::simd4f tlf = inv_tb_frac * inv_lr_frac;
                const dlib::simd4f trf = inv_tb_frac * lr_frac;
                const dlib::simd4f blf = tb_frac * inv_lr_frac;
                const dlib::simd4f brf = tb_frac * lr_frac;
                const dlib::simd4f tl(top[at(0).left], top[at(1).left], top[at(2).left], top[at(3).left]);
                const dlib::simd4f tr(top[at(0).right], top[at(1).right], top[at(2).right], top[at(3).right]);
                const dlib::simd4f bl(bottom[at(0).left], bottom[at(1).left], bottom[at(2).left],
                                      bottom[at(3).left]);
                const dlib::simd4f br(bottom[at(0).right], bottom[at(1).right], bottom[at(2).right],
                                      bottom[at(3).right]);
                const dlib::simd4f value = dlib::simd4f(tlf * tl + trf * tr + blf * bl + brf * br);
                float values[4];
                value.store(values);
                for (int lane = 0; lane < 4; ++lane) {
                    const long column = c + lane;
                    if (column >= area.left() && column <= area.right() && column < out_columns_) {
                        dest[column] = static_cast<unsigned char>(values[lane] + 0.5);
                    }
                }
            }
            for (c = std::max(c, area.left()); c <= area.right(); ++c) {
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
    long in_rows_ = -1, in_columns_ = -1, out_rows_ = 0, out_columns_ = 0, simd_columns_ = 0;
    std::vector<Row> rows_;
    std::vector<Column> columns_;
};

#endif
