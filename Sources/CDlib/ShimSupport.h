#ifndef SIGHTLINE_CDLIB_SHIM_SUPPORT_H
#define SIGHTLINE_CDLIB_SHIM_SUPPORT_H
// What the C++ files behind CDlib.h share: read-only views of caller-owned pixels that
// satisfy dlib's generic image interface (a decoded frame is read where it lies, without a
// copy), and how errors cross the C API (as a message, never as a C++ exception).
#include <dlib/image_processing/generic_image.h>
#include <dlib/pixel.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>

// Pixels of type `Pixel`, row after row `bytes_per_row` apart, read where they lie.
template <typename Pixel> struct PixelView {
    const uint8_t *pixels;
    long rows;
    long columns;
    long bytes_per_row;
};

// 8-bit single-channel pixels (a luma plane).
using LumaView = PixelView<unsigned char>;
// Packed 8-bit RGB, which `dlib::rgb_pixel` matches byte for byte.
using RGBView = PixelView<dlib::rgb_pixel>;

namespace dlib {
template <typename Pixel> struct image_traits<PixelView<Pixel>> {
    typedef Pixel pixel_type;
};
}  // namespace dlib

template <typename Pixel> inline long num_rows(const PixelView<Pixel> &image) { return image.rows; }
template <typename Pixel> inline long num_columns(const PixelView<Pixel> &image) { return image.columns; }
template <typename Pixel> inline const void *image_data(const PixelView<Pixel> &image) { return image.pixels; }
template <typename Pixel> inline void *image_data(PixelView<Pixel> &image) {
    return const_cast<uint8_t *>(image.pixels);
}
template <typename Pixel> inline long width_step(const PixelView<Pixel> &image) { return image.bytes_per_row; }
// Never resized: a view is an input only.
template <typename Pixel> inline void set_image_size(PixelView<Pixel> &, long, long) {}

struct sl_face_detector;
// Calls job(0) … job(n - 1), one on each of the detector's scan threads (the caller's
// included), and waits for all (FaceDetector.cpp).
void on_scan_threads(sl_face_detector *detector, const std::function<void(int)> &job);

// Copies a message into a caller's buffer, always terminated.
inline void write_error(char *error, size_t capacity, const char *message) {
    if (error == nullptr || capacity == 0) return;
    std::strncpy(error, message, capacity - 1);
    error[capacity - 1] = '\0';
}

// Runs `body`, turning any C++ exception into a message in `error` and `failure`.
template <typename Result, typename Body> Result guarded(char *error, size_t capacity, Result failure, Body body) {
    try {
        return body();
    } catch (const std::exception &e) {
        write_error(error, capacity, e.what());
    } catch (...) {
        write_error(error, capacity, "unknown C++ exception in dlib");
    }
    return failure;
}

// The AVX-512 kernels (`WideFilterPasses.h`, `WideFhogGradients.h`) are compiled wherever
// clang targets x86-64, whatever instruction set the build is for, and run only where the
// CPU has AVX-512.
#if defined(__x86_64__) && defined(__clang__)
#include <immintrin.h>
#define SIGHTLINE_AVX512_KERNELS 1
#endif

inline bool avx512_kernels_available() {
#ifdef SIGHTLINE_AVX512_KERNELS
    static const bool available = __builtin_cpu_supports("avx512f");
    return available;
#else
    return false;
#endif
}

#endif
