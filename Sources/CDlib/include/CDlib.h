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

/// Creates dlib's built-in frontal face detector (no model file), scanning each image on
/// `threads` threads (the caller's and threads - 1 of its own) with the single-threaded
/// detector's exact answers. NULL on failure.
sl_face_detector *sl_face_detector_create(int threads, char *error, size_t error_capacity);
void sl_face_detector_destroy(sl_face_detector *detector);

/// A frame of a live source in this process started (1) or stopped (-1) being analysed.
/// While such frames fill every core, the scans of detectors that yield to them wait before
/// each of their jobs (a quarter of a second at most each). Any thread.
void sl_frames_analysing(int change);

/// Whether the detector's scans yield to the frames analysed (`sl_frames_analysing`): for the
/// full scans made beside a live source's tracking. Between scans.
void sl_face_detector_yield_to_frame_path(sl_face_detector *detector, int yields);

/// How many of the detector's jobs (and pyramid levels) waited for the frames analysed so far.
long sl_face_detector_waits_for_frame_path(sl_face_detector *detector);

/// Runs the detector on an 8-bit single-channel image read in place (no copy), the way
/// the Python binding's `run(img, upsample, adjust_threshold)` does: the image is
/// upsampled `upsample` times with `pyramid_up`, and boxes are mapped back.
/// Writes at most `capacity` detections, in dlib's order (descending score), and returns
/// how many there were in total, or -1 with a message in `error`.
/// Not thread-safe: call from one thread at a time.
int sl_face_detector_detect(sl_face_detector *detector, const uint8_t *pixels, int width,
                            int height, ptrdiff_t bytes_per_row, int upsample,
                            double adjust_threshold, sl_face_detection *out, int capacity,
                            char *error, size_t error_capacity);

/// Where to look for faces, in the pixels of the frame given to the detector: boxes lying
/// within the area (which may reach beyond the frame, as boxes at its edges do) and from
/// `min_size` to `max_size` wide, scanned at the pyramid levels whose box sizes match, and
/// one level either side when `neighbour_levels` is 1 (a box between two sizes, or one
/// that grows or shrinks).
typedef struct sl_face_region {
    long left, top, right, bottom;
    double min_size, max_size;
    int neighbour_levels;
} sl_face_region;

/// Like `sl_face_detector_detect`, but scans only the given regions: every detection it
/// returns is one `sl_face_detector_detect` makes too, boxes and scores alike. No regions,
/// no scan.
int sl_face_detector_detect_regions(sl_face_detector *detector, const uint8_t *pixels, int width,
                                    int height, ptrdiff_t bytes_per_row, int upsample,
                                    double adjust_threshold, const sl_face_region *regions,
                                    int region_count, sl_face_detection *out, int capacity,
                                    char *error, size_t error_capacity);

/// The width of the boxes the detector finds at each level of the pyramid of a frame of
/// this size, in the frame's pixels (the smallest first, each 6/5 of the one before); writes
/// at most `capacity` and returns how many levels there are, or -1 on invalid arguments.
int sl_face_detector_level_box_sizes(sl_face_detector *detector, int width, int height, int upsample,
                                     double *sizes, int capacity);

/// 1 when the detector embedded in the shim serialises exactly as this dlib's
/// `get_frontal_face_detector()` does (else regenerate it: tools/make-face-detector-data.sh).
int sl_face_detector_embedded_matches_dlib(void);

/// For tests: how many pixels of the pyramid the detector builds (by rows, by rectangles)
/// differ from dlib's pyramid_down<6> of the same image, over all its levels, and from its
/// pyramid_up (the doubling of upsample 1).
long sl_pyramid_mismatches(const uint8_t *pixels, int width, int height, ptrdiff_t bytes_per_row);

/// For tests: how many saliency pixels of the detector's filters, over every level of the
/// image's pyramid and crops of each 1 to 15 HOG cells narrower, 8 columns at a time and
/// (where the CPU has AVX-512) 16, differ in any bit from dlib's `apply_filters_to_fhog`
/// (plus one for each output area that differs; -1 when the sizes differ); then on features
/// of zeros with a filter whose every product is -0.
long sl_filter_mismatches(const uint8_t *pixels, int width, int height, ptrdiff_t bytes_per_row);

/// For tests: how many HOG features the detector extracts, over every level of the image's
/// pyramid and crops of each that end in every column position, 8 pixels at a time and
/// (where the CPU has AVX-512) 16, each into planes that held another image's features,
/// differ in any bit from dlib's `extract_fhog_features` (plus 1,000 for each plane whose
/// size differs).
long sl_fhog_mismatches(const uint8_t *pixels, int width, int height, ptrdiff_t bytes_per_row);

/// dlib's shape predictor: the 5 landmarks of `shape_predictor_5_face_landmarks.dat`
/// (two corners of each eye, the base of the nose), or the 68 of the iBUG model.
typedef struct sl_face_landmarker sl_face_landmarker;

/// Loads a shape predictor model file. NULL with a message in `error` when the file is
/// missing or not a shape predictor.
sl_face_landmarker *sl_face_landmarker_create(const char *path, char *error, size_t error_capacity);
void sl_face_landmarker_destroy(sl_face_landmarker *landmarker);

/// The landmarks of the face in the box (dlib's inclusive rectangle) of an 8-bit
/// single-channel image read in place, exactly as the Python binding's
/// `shape_predictor(img, rect)` returns them: whole pixels, interleaved x y in `xy`.
/// Writes at most `capacity` points and returns how many the model has, or -1.
/// Any thread, as `sl_face_landmarker_run_faces`.
int sl_face_landmarker_run(sl_face_landmarker *landmarker, const uint8_t *pixels, int width, int height,
                           ptrdiff_t bytes_per_row, long left, long top, long right, long bottom, long *xy,
                           int capacity, char *error, size_t error_capacity);

/// The landmarks of each of `faces` (as the detector found them in this image), one face
/// after another: face i's points go to `xy[2 * points_per_face * i …]`. Returns the points
/// per face (more than `points_per_face`: nothing written, call again with room), or -1
/// with a message in `error`. Any thread, with a landmarker shared between threads: the
/// landmarker is only read, and the steps dlib hands to LAPACK are made one at a time
/// across the process. `threads_of`: NULL, or a detector whose scan threads share the faces
/// out, each taking the next; then only on the thread that owns that detector, between its
/// scans. The points are the same either way.
int sl_face_landmarker_run_faces(sl_face_landmarker *landmarker, const uint8_t *pixels, int width, int height,
                                 ptrdiff_t bytes_per_row, const sl_face_detection *faces, int face_count,
                                 long *xy, int points_per_face, sl_face_detector *threads_of, char *error,
                                 size_t error_capacity);

/// dlib's ResNet face recognition model (`dlib_face_recognition_resnet_model_v1.dat`): a
/// face becomes 128 numbers; two faces closer than 0.6 (Euclidean) are one person.
typedef struct sl_face_describer sl_face_describer;

enum { SL_FACE_DESCRIPTOR_LENGTH = 128 };

sl_face_describer *sl_face_describer_create(const char *path, char *error, size_t error_capacity);
void sl_face_describer_destroy(sl_face_describer *describer);

/// The descriptor of the face whose landmarks (5 or 68 points, interleaved x y) are given,
/// in a packed 8-bit RGB image, as the Python binding's
/// `compute_face_descriptor(img, shape, num_jitters, padding=0.25)`: a 150x150 chip aligned
/// on the landmarks, through the network; with `jitters` > 1 the mean over that many
/// randomly jittered copies (dlib's `jitter_image`, seeded the same way on every call).
/// Returns 0, or -1 with a message. Not thread-safe: one describer per thread.
int sl_face_describer_compute(sl_face_describer *describer, const uint8_t *rgb, int width, int height,
                              ptrdiff_t bytes_per_row, const long *xy, int point_count, int jitters,
                              float *descriptor, char *error, size_t error_capacity);

/// The SIMD level this code was compiled for: 2 = AVX2, 1 = AVX, 0 = SSE2 only.
int sl_dlib_compiled_simd_level(void);
/// Whether the CPU running this process supports AVX2.
int sl_cpu_supports_avx2(void);
/// Whether the detector's AVX-512 kernels run here (the CPU has AVX-512): the filters 16
/// columns at a time, the HOG gradients 16 pixels.
int sl_avx512_kernels(void);
/// The CPUs this process may run on (its affinity mask, as `taskset` sets it).
int sl_available_cpus(void);

#ifdef __cplusplus
}
#endif
#endif
