#include "CDlib.h"

#include <dlib/image_processing/frontal_face_detector.h>
#include <dlib/image_transforms.h>

#include "ShimSupport.h"
#include "ParallelFaceScan.h"

#include <sched.h>

#include <algorithm>
#include <thread>
#include <vector>

struct sl_face_detector {
    explicit sl_face_detector(int threads) : scan(threads) {}
    dlib::frontal_face_detector detector = dlib::get_frontal_face_detector();
    ParallelFaceScan scan;
    dlib::array2d<unsigned char> upsampled;  // reused between frames
    std::vector<dlib::rect_detection> detections;
};

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
        if (upsample == 0) {
            detector->scan.detect(detector->detector, image, adjust_threshold, detector->detections);
        } else {
            // Exactly the Python binding's path: one pyramid_up into a buffer, more in place,
            // detect, then map each box back down.
            dlib::pyramid_down<2> pyramid;
            dlib::pyramid_up(image, detector->upsampled, pyramid);
            for (int level = 1; level < upsample; ++level) dlib::pyramid_up(detector->upsampled);
            detector->scan.detect(detector->detector, detector->upsampled, adjust_threshold, detector->detections);
            for (auto &d : detector->detections) d.rect = pyramid.rect_down(d.rect, upsample);
        }
        const int count = static_cast<int>(detector->detections.size());
        for (int i = 0; i < count && i < capacity; ++i) {
            const auto &d = detector->detections[i];
            out[i] = {d.rect.left(), d.rect.top(), d.rect.right(), d.rect.bottom(),
                      d.detection_confidence, static_cast<int>(d.weight_index)};
        }
        return count;
    });
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

extern "C" int sl_available_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}
