#include "CDlib.h"

#include <dlib/image_processing/frontal_face_detector.h>
#include <dlib/image_transforms.h>

#include "ShimSupport.h"
#include "ParallelFaceScan.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

// dlib's built-in detector in dlib's binary serialisation (tools/make-face-detector-data.sh),
// found through the target's header search path: get_frontal_face_detector() takes 0.4 s
// to decode its compressed text form at every start, this takes 2 ms.
extern "C" const char sl_embedded_face_detector[], sl_embedded_face_detector_end[];
__asm__(".section .rodata\n"
        ".global sl_embedded_face_detector\n"
        "sl_embedded_face_detector:\n"
        ".incbin \"frontal_face_detector.dat\"\n"
        ".global sl_embedded_face_detector_end\n"
        "sl_embedded_face_detector_end:\n"
        ".previous\n");

namespace {
std::string embedded_detector_bytes() {
    return std::string(sl_embedded_face_detector, sl_embedded_face_detector_end);
}

dlib::frontal_face_detector embedded_detector() {
    std::istringstream in(embedded_detector_bytes());
    dlib::frontal_face_detector detector;
    dlib::deserialize(detector, in);
    return detector;
}
}  // namespace

struct sl_face_detector {
    explicit sl_face_detector(int threads) : scan(threads) {}
    dlib::frontal_face_detector detector = embedded_detector();
    ParallelFaceScan scan;
    dlib::array2d<unsigned char> upsampled;  // reused between frames
    PyramidStep doubling;                    // the frame to `upsampled`, for one doubling
    std::vector<dlib::rect_detection> detections;
    std::vector<FaceRegion> regions;
};

void on_scan_threads(sl_face_detector *detector, const std::function<void(int)> &job) {
    detector->scan.pool().run(job);
}

namespace {
// Runs `detect` on the image the Python binding's path makes of `image` for `upsample` (one
// pyramid_up into a buffer, more in place), then maps each box back down. `detect` gets the
// image and a function that makes the areas of it it will read: for one doubling, the image
// is made only there (`PyramidStep` computes dlib's pixels for any area), so a region scan
// doubles its regions, not the frame; for more, it is made whole first.
template <typename Detect>
void on_upsampled(sl_face_detector *detector, const LumaView &image, int upsample, Detect detect) {
    if (upsample == 0) {
        detect(image, 0, NothingToPrepare{});
        return;
    }
    dlib::pyramid_down<2> pyramid;
    auto &upsampled = detector->upsampled;
    if (upsample == 1) {
        const dlib::rectangle size = pyramid.rect_up(dlib::rectangle(0, 0, image.columns - 1, image.rows - 1));
        if (upsampled.nr() != size.bottom() + 1 || upsampled.nc() != size.right() + 1) {
            upsampled.set_size(size.bottom() + 1, size.right() + 1);
        }
        detector->doubling.plan(image.rows, image.columns, upsampled.nr(), upsampled.nc());
        detect(upsampled, 1, [&](const std::vector<dlib::rectangle> &areas) {
            for (const auto &area : areas) {
                detector->scan.in_bands(area, [&](const dlib::rectangle &band) {
                    detector->doubling.run(image, upsampled, band);
                });
            }
        });
    } else {
        dlib::pyramid_up(image, upsampled, pyramid);
        for (int level = 1; level < upsample; ++level) dlib::pyramid_up(upsampled);
        detect(upsampled, upsample, NothingToPrepare{});
    }
    for (auto &d : detector->detections) d.rect = pyramid.rect_down(d.rect, upsample);
}

int copy_out(const std::vector<dlib::rect_detection> &detections, sl_face_detection *out, int capacity) {
    const int count = static_cast<int>(detections.size());
    for (int i = 0; i < count && i < capacity; ++i) {
        const auto &d = detections[i];
        out[i] = {d.rect.left(), d.rect.top(), d.rect.right(), d.rect.bottom(), d.detection_confidence,
                  static_cast<int>(d.weight_index)};
    }
    return count;
}
}  // namespace

extern "C" void sl_frames_analysing(int change) { FramePath::shared().analysing(change); }

extern "C" void sl_face_detector_yield_to_frame_path(sl_face_detector *detector, int yields) {
    detector->scan.yield_to_frame_path(yields != 0);
}

extern "C" long sl_face_detector_waits_for_frame_path(sl_face_detector *detector) { return detector->scan.waited(); }

extern "C" sl_face_detector *sl_face_detector_create(int threads, char *error, size_t error_capacity) {
    if (threads < 1) {
        write_error(error, error_capacity, "a face detector needs at least one thread");
        return nullptr;
    }
    return guarded<sl_face_detector *>(error, error_capacity, nullptr, [&] { return new sl_face_detector(threads); });
}

extern "C" void sl_face_detector_destroy(sl_face_detector *detector) { delete detector; }

extern "C" int sl_face_detector_detect(sl_face_detector *detector, const uint8_t *pixels,
                                       int width, int height, ptrdiff_t bytes_per_row,
                                       int upsample, double adjust_threshold,
                                       sl_face_detection *out, int capacity, char *error,
                                       size_t error_capacity) {
    if (detector == nullptr || pixels == nullptr || width <= 0 || height <= 0 ||
        bytes_per_row < width || upsample < 0) {
        write_error(error, error_capacity, "invalid arguments to sl_face_detector_detect");
        return -1;
    }
    return guarded<int>(error, error_capacity, -1, [&] {
        const LumaView image{pixels, height, width, static_cast<long>(bytes_per_row)};
        on_upsampled(detector, image, upsample, [&](const auto &scanned, int, const auto &make) {
            if constexpr (!std::is_same_v<std::decay_t<decltype(make)>, NothingToPrepare>) make({dlib::get_rect(scanned)});
            detector->scan.detect(detector->detector, scanned, adjust_threshold, detector->detections);
        });
        return copy_out(detector->detections, out, capacity);
    });
}

extern "C" int sl_face_detector_detect_regions(sl_face_detector *detector, const uint8_t *pixels, int width,
                                               int height, ptrdiff_t bytes_per_row, int upsample,
                                               double adjust_threshold, const sl_face_region *regions,
                                               int region_count, sl_face_detection *out, int capacity, char *error,
                                               size_t error_capacity) {
    if (detector == nullptr || pixels == nullptr || width <= 0 || height <= 0 || bytes_per_row < width ||
        upsample < 0 || region_count < 0 || (region_count > 0 && regions == nullptr)) {
        write_error(error, error_capacity, "invalid arguments to sl_face_detector_detect_regions");
        return -1;
    }
    return guarded<int>(error, error_capacity, -1, [&] {
        const LumaView image{pixels, height, width, static_cast<long>(bytes_per_row)};
        on_upsampled(detector, image, upsample, [&](const auto &scanned, int doublings, const auto &make) {
            // Regions are given in the frame's pixels; the scan is of the upsampled image.
            const long scale = 1L << doublings;
            detector->regions.clear();
            for (int i = 0; i < region_count; ++i) {
                const auto &r = regions[i];
                detector->regions.push_back(
                    {dlib::rectangle(r.left * scale, r.top * scale, r.right * scale, r.bottom * scale),
                     r.min_size * scale, r.max_size * scale, r.neighbour_levels != 0});
            }
            detector->scan.detect_regions(detector->detector, scanned, adjust_threshold, detector->regions,
                                          detector->detections, make);
        });
        return copy_out(detector->detections, out, capacity);
    });
}

extern "C" int sl_face_detector_level_box_sizes(sl_face_detector *detector, int width, int height, int upsample,
                                                double *sizes, int capacity) {
    if (detector == nullptr || width <= 0 || height <= 0 || upsample < 0 || upsample > 8 || capacity < 0 ||
        (capacity > 0 && sizes == nullptr)) {
        return -1;
    }
    const long scale = 1L << upsample;
    const std::vector<double> levels =
        ParallelFaceScan::level_box_sizes(detector->detector, dlib::rectangle(0, 0, width * scale - 1, height * scale - 1));
    for (size_t level = 0; level < levels.size() && static_cast<int>(level) < capacity; ++level) {
        sizes[level] = levels[level] / static_cast<double>(scale);
    }
    return static_cast<int>(levels.size());
}

namespace {
// How many floats of two images of the same size differ in any bit (so -0 against 0 counts).
long differing_floats(const dlib::array2d<float> &theirs, const dlib::array2d<float> &ours) {
    long differing = 0;
    for (long r = 0; r < theirs.nr(); ++r) {
        for (long c = 0; c < theirs.nc(); ++c) differing += std::memcmp(&theirs[r][c], &ours[r][c], sizeof(float)) != 0;
    }
    return differing;
}
}  // namespace

extern "C" long sl_pyramid_mismatches(const uint8_t *pixels, int width, int height, ptrdiff_t bytes_per_row) {
    // Every level of the image's pyramid_down<6> pyramid, and the image doubled (pyramid_up,
    // for upsample 1), dlib's against PyramidStep's built whole, in two bands of rows, and in
    // rectangles that start and end anywhere in a chunk of 8 columns: 8 columns at a time
    // and (where the CPU has AVX-512) 16.
    const LumaView image{pixels, height, width, static_cast<long>(bytes_per_row)};
    dlib::array2d<unsigned char> theirs, ours, previous;
    dlib::pyramid_up(image, theirs, dlib::pyramid_down<2>());
    dlib::assign_image(previous, image);
    long mismatches = 0;
    dlib::pyramid_down<6> pyramid;
    PyramidStep narrow(false), wide(true);
    for (bool doubling = true; previous.nr() > 20 && previous.nc() > 20; doubling = false) {
        const LumaView above{&previous[0][0], previous.nr(), previous.nc(), previous.nc()};
        if (!doubling) pyramid(previous, theirs);
        for (PyramidStep *step : {&narrow, &wide}) {
            if (doubling) {
                step->plan(previous.nr(), previous.nc(), theirs.nr(), theirs.nc());
            } else {
                step->plan(previous.nr(), previous.nc());
            }
            ours.set_size(step->out_rows(), step->out_columns());
            const long half = ours.nr() / 2;
            step->run(above, ours, dlib::rectangle(0, 0, ours.nc() - 1, half - 1));
            step->run(above, ours, dlib::rectangle(0, half, ours.nc() - 1, ours.nr() - 1));
            for (long r = 0; r < theirs.nr(); ++r)
                for (long c = 0; c < theirs.nc(); ++c) mismatches += ours[r][c] != theirs[r][c];
            for (long offset = 0; offset < 8; ++offset) {
                dlib::assign_all_pixels(ours, 0);
                const dlib::rectangle part(ours.nc() / 3 + offset, ours.nr() / 4, ours.nc() - 1 - 2 * offset,
                                           ours.nr() / 2);
                step->run(above, ours, part);
                for (long r = part.top(); r <= part.bottom(); ++r)
                    for (long c = part.left(); c <= part.right(); ++c) mismatches += ours[r][c] != theirs[r][c];
            }
        }
        if (!doubling) dlib::swap(previous, theirs);
    }
    return mismatches;
}

extern "C" long sl_filter_mismatches(const uint8_t *pixels, int width, int height, ptrdiff_t bytes_per_row) {
    // Every filter of the detector over the HOG features of every level of the image's
    // pyramid, and of crops of it 1 to 15 HOG cells narrower (so that every number of
    // 8-column blocks, odd or even, and of columns left over after them comes up), dlib's
    // apply_filters_to_fhog against SeparableFilters, 8 columns at a time and (where the CPU
    // has AVX-512) 16: pixels that differ in any bit, plus one for each level whose output
    // area differs. Then once more on features of zeros, with the first filter's row taps
    // made negative and its column taps positive, so that every product is -0 and dlib's
    // saliency, +0 everywhere, is the sign of a zero that SeparableFilters must put right.
    const dlib::frontal_face_detector detector = embedded_detector();
    const auto &scanner = detector.get_scanner();
    const long cell = scanner.get_cell_size();
    dlib::array2d<unsigned char> level, next;
    dlib::assign_image(level, LumaView{pixels, height, width, static_cast<long>(bytes_per_row)});
    dlib::array<dlib::array2d<float>> feats;
    dlib::array2d<float> theirs, ours;
    SeparableFilters narrow(false), wide(true);
    dlib::pyramid_down<6> pyramid;
    long mismatches = 0;
    while (level.nr() >= scanner.get_min_pyramid_layer_height() &&
           level.nc() >= scanner.get_min_pyramid_layer_width()) {
        for (long cut = 0; cut < 16 && level.nc() - cut * cell >= scanner.get_min_pyramid_layer_width(); ++cut) {
            const LumaView crop{&level[0][0], level.nr(), level.nc() - cut * cell, level.nc()};
            scanner.get_feature_extractor()(crop, feats, cell, scanner.get_fhog_window_height(),
                                            scanner.get_fhog_window_width());
            for (unsigned long i = 0; i < detector.num_detectors(); ++i) {
                const auto &filter = detector.get_processed_w(i).get_detect_argument();
                const dlib::rectangle area = dlib::impl::apply_filters_to_fhog(filter, feats, theirs);
                for (SeparableFilters *filters : {&narrow, &wide}) {
                    mismatches += area != filters->apply(filter, feats, ours);
                    if (theirs.nr() != ours.nr() || theirs.nc() != ours.nc()) return -1;
                    mismatches += differing_floats(theirs, ours);
                }
            }
        }
        pyramid(level, next);
        dlib::swap(level, next);
    }
    auto negative = detector.get_processed_w(0).get_detect_argument();
    for (auto &parts : negative.row_filters) {
        for (auto &taps : parts) taps = -dlib::abs(taps);
    }
    for (auto &parts : negative.col_filters) {
        for (auto &taps : parts) taps = dlib::abs(taps);
    }
    dlib::array<dlib::array2d<float>> zeros(31);  // dlib's HOG planes
    for (auto &plane : zeros) {
        // 45 columns of output: two blocks of 16, then one of dlib's 8 and 5 one by one.
        plane.set_size(scanner.get_fhog_window_height() + 20, scanner.get_fhog_window_width() + 44);
        dlib::assign_all_pixels(plane, 0.0f);
    }
    const dlib::rectangle area = dlib::impl::apply_filters_to_fhog(negative, zeros, theirs);
    for (SeparableFilters *filters : {&narrow, &wide}) {
        mismatches += area != filters->apply(negative, zeros, ours);
        mismatches += differing_floats(theirs, ours);
    }
    return mismatches;
}

extern "C" long sl_fhog_mismatches(const uint8_t *pixels, int width, int height, ptrdiff_t bytes_per_row) {
    // Every level of the image's pyramid whole, then crops of it 1 to 8 columns narrower
    // (each puts a different number of columns in dlib's one-by-one tail) and starting lower
    // and further right, as a region scan's crops do; with the detector's 10x10 padding. Each
    // crop's features go into planes that first took those of its negative (the same size),
    // as a scan's planes take frame after frame; a row's pixels 8 at a time and (where the CPU
    // has AVX-512) 16.
    const dlib::frontal_face_detector detector = embedded_detector();
    const auto &scanner = detector.get_scanner();
    const int rows_padding = scanner.get_fhog_window_height(), columns_padding = scanner.get_fhog_window_width();
    dlib::array2d<unsigned char> level, next, negative;
    dlib::assign_image(level, LumaView{pixels, height, width, static_cast<long>(bytes_per_row)});
    dlib::array<dlib::array2d<float>> theirs, ours;
    FhogFeatures narrow(false), wide(true);
    dlib::pyramid_down<6> pyramid;
    long mismatches = 0;
    while (level.nr() >= scanner.get_min_pyramid_layer_height() &&
           level.nc() >= scanner.get_min_pyramid_layer_width()) {
        for (long cut = 0; cut <= 8; ++cut) {
            const long top = cut * 3, left = cut * 5;
            const LumaView crop{&level[top][left], level.nr() - top - cut, level.nc() - left - cut, level.nc()};
            dlib::extract_fhog_features(crop, theirs, 8, rows_padding, columns_padding);
            negative.set_size(crop.rows, crop.columns);
            for (long r = 0; r < crop.rows; ++r) {
                for (long c = 0; c < crop.columns; ++c) negative[r][c] = 255 - crop.pixels[r * crop.bytes_per_row + c];
            }
            for (FhogFeatures *features : {&narrow, &wide}) {
                features->extract(LumaView{&negative[0][0], crop.rows, crop.columns, crop.columns}, ours,
                                  rows_padding, columns_padding);
                features->extract(crop, ours, rows_padding, columns_padding);
                if (theirs.size() != ours.size()) return -1;
                for (unsigned long plane = 0; plane < theirs.size(); ++plane) {
                    const bool same_size =
                        theirs[plane].nr() == ours[plane].nr() && theirs[plane].nc() == ours[plane].nc();
                    mismatches += same_size ? differing_floats(theirs[plane], ours[plane]) : 1000;
                }
            }
        }
        pyramid(level, next);
        dlib::swap(level, next);
    }
    return mismatches;
}

extern "C" int sl_face_detector_embedded_matches_dlib(void) {
    std::ostringstream out;
    dlib::serialize(dlib::get_frontal_face_detector(), out);
    return out.str() == embedded_detector_bytes() ? 1 : 0;
}

extern "C" int sl_dlib_compiled_simd_level(void) {
#if defined(__AVX2__)
    return 2;
#elif defined(__AVX__)
    return 1;
#else
    return 0;
#endif
}

extern "C" int sl_cpu_supports_avx2(void) { return __builtin_cpu_supports("avx2") ? 1 : 0; }

extern "C" int sl_avx512_kernels(void) { return avx512_kernels_available() ? 1 : 0; }

extern "C" int sl_available_cpus(void) { return FramePath::available_cores(); }
