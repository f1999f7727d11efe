// dlib's face landmark predictor and face recognition network, behind the C API of
// CDlib.h. The network is declared exactly as in dlib's dnn_face_recognition_ex.cpp and the
// Python binding, so `dlib_face_recognition_resnet_model_v1.dat` deserialises into it.
#include "CDlib.h"

#include <dlib/dnn.h>
#include <dlib/image_processing.h>
#include <dlib/image_transforms.h>

#include "ShimSupport.h"

#include <memory>
#include <mutex>
#include <vector>

namespace {
using namespace dlib;

// The landmark predictor and the recognition network reach OpenBLAS and its LAPACK through
// dlib's matrix code. Two such calls at the same time, from two threads, put landmarks a
// pixel off now and then (Debian's serial OpenBLAS; two faces or two frames measured at
// once); one call at a time in the whole process (every source's detectors) gives the
// one-thread answers every time.
std::mutex blas_calls;

template <template <int, template <typename> class, int, typename> class block, int N,
          template <typename> class BN, typename SUBNET>
using residual = add_prev1<block<N, BN, 1, tag1<SUBNET>>>;

template <template <int, template <typename> class, int, typename> class block, int N,
          template <typename> class BN, typename SUBNET>
using residual_down = add_prev2<avg_pool<2, 2, 2, 2, skip1<tag2<block<N, BN, 2, tag1<SUBNET>>>>>>;

template <int N, template <typename> class BN, int stride, typename SUBNET>
using block = BN<con<N, 3, 3, 1, 1, relu<BN<con<N, 3, 3, stride, stride, SUBNET>>>>>;

template <int N, typename SUBNET> using ares = relu<residual<block, N, affine, SUBNET>>;
template <int N, typename SUBNET> using ares_down = relu<residual_down<block, N, affine, SUBNET>>;

template <typename SUBNET> using alevel0 = ares_down<256, SUBNET>;
template <typename SUBNET> using alevel1 = ares<256, ares<256, ares_down<256, SUBNET>>>;
template <typename SUBNET> using alevel2 = ares<128, ares<128, ares_down<128, SUBNET>>>;
template <typename SUBNET> using alevel3 = ares<64, ares<64, ares<64, ares_down<64, SUBNET>>>>;
template <typename SUBNET> using alevel4 = ares<32, ares<32, ares<32, SUBNET>>>;

using face_recognition_net = loss_metric<fc_no_bias<
    128, avg_pool_everything<alevel0<alevel1<alevel2<alevel3<alevel4<
             max_pool<3, 3, 2, 2, relu<affine<con<32, 7, 7, 2, 2, input_rgb_image_sized<150>>>>>>>>>>>>>;

full_object_detection shape_from(const long *xy, int point_count) {
    std::vector<point> parts;
    parts.reserve(point_count);
    for (int i = 0; i < point_count; ++i) parts.emplace_back(xy[2 * i], xy[2 * i + 1]);
    // The chip is placed from the landmarks alone; the box is not read.
    return full_object_detection(rectangle(), parts);
}
}  // namespace

struct sl_face_landmarker {
    dlib::shape_predictor predictor;
};

struct sl_face_describer {
    face_recognition_net net;
};

extern "C" sl_face_landmarker *sl_face_landmarker_create(const char *path, char *error, size_t error_capacity) {
    return guarded<sl_face_landmarker *>(error, error_capacity, nullptr, [&] {
        auto landmarker = std::make_unique<sl_face_landmarker>();
        dlib::deserialize(path) >> landmarker->predictor;
        return landmarker.release();
    });
}

extern "C" void sl_face_landmarker_destroy(sl_face_landmarker *landmarker) { delete landmarker; }

// One face's landmarks, interleaved x y into `xy` (at most `capacity` points); returns how
// many the model has. The one place the predictor runs, under the process-wide lock.
static int predict_landmarks(const sl_face_landmarker &landmarker, const LumaView &image, const dlib::rectangle &face,
                             long *xy, int capacity) {
    const std::lock_guard<std::mutex> one_at_a_time(blas_calls);
    const auto shape = landmarker.predictor(image, face);
    const int count = static_cast<int>(shape.num_parts());
    for (int i = 0; i < count && i < capacity; ++i) {
        xy[2 * i] = shape.part(i).x();
        xy[2 * i + 1] = shape.part(i).y();
    }
    return count;
}

extern "C" int sl_face_landmarker_run(sl_face_landmarker *landmarker, const uint8_t *pixels, int width,
                                      int height, ptrdiff_t bytes_per_row, long left, long top, long right,
                                      long bottom, long *xy, int capacity, char *error, size_t error_capacity) {
    if (landmarker == nullptr || pixels == nullptr || width <= 0 || height <= 0 || bytes_per_row < width) {
        write_error(error, error_capacity, "invalid arguments to sl_face_landmarker_run");
        return -1;
    }
    return guarded<int>(error, error_capacity, -1, [&] {
        const LumaView image{pixels, height, width, static_cast<long>(bytes_per_row)};
        return predict_landmarks(*landmarker, image, dlib::rectangle(left, top, right, bottom), xy, capacity);
    });
}

extern "C" int sl_face_landmarker_run_faces(sl_face_landmarker *landmarker, const uint8_t *pixels, int width,
                                            int height, ptrdiff_t bytes_per_row, const sl_face_detection *faces,
                                            int face_count, long *xy, int points_per_face, char *error,
                                            size_t error_capacity) {
    if (landmarker == nullptr || pixels == nullptr || width <= 0 || height <= 0 ||
        bytes_per_row < width || face_count < 0 || (face_count > 0 && (faces == nullptr || xy == nullptr))) {
        write_error(error, error_capacity, "invalid arguments to sl_face_landmarker_run_faces");
        return -1;
    }
    return guarded<int>(error, error_capacity, -1, [&] {
        const LumaView image{pixels, height, width, static_cast<long>(bytes_per_row)};
        const int parts = static_cast<int>(landmarker->predictor.num_parts());
        if (parts > points_per_face) return parts;
        for (int i = 0; i < face_count; ++i) {
            const auto &face = faces[i];
            predict_landmarks(*landmarker, image, dlib::rectangle(face.left, face.top, face.right, face.bottom),
                              xy + 2L * points_per_face * i, parts);
        }
        return parts;
    });
}

extern "C" sl_face_describer *sl_face_describer_create(const char *path, char *error, size_t error_capacity) {
    return guarded<sl_face_describer *>(error, error_capacity, nullptr, [&] {
        auto describer = std::make_unique<sl_face_describer>();
        dlib::deserialize(path) >> describer->net;
        return describer.release();
    });
}

extern "C" void sl_face_describer_destroy(sl_face_describer *describer) { delete describer; }

extern "C" int sl_face_describer_compute(sl_face_describer *describer, const uint8_t *rgb, int width, int height,
                                         ptrdiff_t bytes_per_row, const long *xy, int point_count, int jitters,
                                         float *descriptor, char *error, size_t error_capacity) {
    if (describer == nullptr || rgb == nullptr || width <= 0 || height <= 0 || bytes_per_row < 3L * width ||
        xy == nullptr || descriptor == nullptr || jitters < 0) {
        write_error(error, error_capacity, "invalid arguments to sl_face_describer_compute");
        return -1;
    }
    if (point_count != 5 && point_count != 68) {
        write_error(error, error_capacity, "a face descriptor needs 5 or 68 landmarks");
        return -1;
    }
    return guarded<int>(error, error_capacity, -1, [&] {
        const RGBView image{rgb, height, width, static_cast<long>(bytes_per_row)};
        const auto details = dlib::get_face_chip_details(shape_from(xy, point_count), 150, 0.25);
        dlib::matrix<dlib::rgb_pixel> chip;
        dlib::extract_image_chip(image, details, chip);
        dlib::matrix<float, 0, 1> result;
        const std::lock_guard<std::mutex> one_at_a_time(blas_calls);
        if (jitters <= 1) {
            result = describer->net(chip);
        } else {
            dlib::rand random;  // a fresh generator: the same face always gives the same descriptor
            std::vector<dlib::matrix<dlib::rgb_pixel>> crops;
            for (int i = 0; i < jitters; ++i) crops.push_back(dlib::jitter_image(chip, random));
            result = dlib::mean(dlib::mat(describer->net(crops, 16)));
        }
        for (long i = 0; i < result.size() && i < SL_FACE_DESCRIPTOR_LENGTH; ++i) descriptor[i] = result(i);
        return 0;
    });
}
