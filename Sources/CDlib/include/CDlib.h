#ifndef SIGHTLINE_CDLIB_H
#define SIGHTLINE_CDLIB_H
// A plain C API over dlib's HOG frontal face detector. C++ exceptions never cross it:
// every entry point catches them and reports the message through `error`.
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One detection, as dlib's `object_detector` returns it: right and bottom are inclusive
/// and may lie outside the image; `sub_detector` is the index of the HOG filter that fired.
typedef struct sl_face_detection {
    long left, top, right, bottom;
    double score;
    int sub_detector;
} sl_face_detection;

typedef struct sl_face_detector sl_face_detector;

/// Creates dlib's built-in frontal face detector (no model file). NULL on failure.
sl_face_detector *sl_face_detector_create(char *error, size_t error_capacity);
void sl_face_detector_destroy(sl_face_detector *detector);

/// Runs the detector on an 8-bit single-channel image read in place (no copy), the way
/// the Python binding's `run(img, upsample, adjust_threshold)` does: the image is
/// upsampled `upsample` times with `pyramid_up`, and boxes are mapped back.
/// Writes at most `capacity` detections, in dlib's order (descending score), and returns
/// how many there were in total, or -1 with a message in `error`.
/// Not thread-safe: use one detector per thread.
int sl_face_detector_detect(sl_face_detector *detector, const uint8_t *pixels, int width,
                            int height, ptrdiff_t bytes_per_row, int upsample,
                            double adjust_threshold, sl_face_detection *out, int capacity,
                            char *error, size_t error_capacity);

/// The SIMD level this code was compiled for: 2 = AVX2, 1 = AVX, 0 = SSE2 only.
int sl_dlib_compiled_simd_level(void);
/// Whether the CPU running this process supports AVX2.
int sl_cpu_supports_avx2(void);

#ifdef __cplusplus
}
#endif
#endif
