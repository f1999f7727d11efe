// dlib's face landmark predictor and face recognition network, behind the C API of
// CDlib.h. The network is declared exactly as in dlib's dnn_face_recognition_ex.cpp and the
// Python binding, so `dlib_face_recognition_resnet_model_v1.dat` deserialises into it.
#include "CDlib.h"

#include <dlib/dnn.h>
#include <dlib/image_processing.h>
#include <dlib/image_transforms.h>

#include "ShimSupport.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace {
using namespace dlib;

// dlib's matrix code sends its linear algebra to OpenBLAS and its LAPACK, and Debian's serial
// OpenBLAS shares its work buffers between threads: two calls at the same time put a landmark
// a pixel off now and then. Every call into it (the landmarks' shape alignment, the
// recognition network) is made under this lock, one at a time in the whole process.
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

// dlib's shape_predictor, deserialised as dlib does, with its walk of the regression trees
// done here. dlib adds each tree's leaf to the shape through BLAS's saxpy, one library call
// per tree (7,500 a face), which costs more than the walk; a plain loop adds the same floats
// in the same order (saxpy with alpha 1 rounds x + y once, as `+=` does), and needs no lock.
// The trees are laid out flat, each cascade's split nodes and leaves in one block (dlib keeps
// every tree's, and every leaf, in a block of its own), because a run walks the 9 MB model
// with it out of the cache: read in order, memory streams it.
struct sl_face_landmarker {
    matrix<float, 0, 1> initial_shape;
    std::vector<std::vector<unsigned long>> anchor_idx;
    std::vector<std::vector<dlib::vector<float, 2>>> deltas;

    // A split node as dlib's `split_feature`: left when pixel idx1 - pixel idx2 > thresh.
    struct Split {
        uint32_t idx1, idx2;
        float thresh;
    };
    // One cascade's trees: tree t's nodes at splits[t * nodes …], its leaves (each
    // `size` floats) at leaves[t * (nodes + 1) * size …]. Every tree is complete, `depth`
    // splits from its root to a leaf (nodes = 2^depth - 1), as dlib's trainer makes them.
    struct Forest {
        size_t trees = 0, nodes = 0, depth = 0;
        long size = 0;
        std::vector<Split> splits;
        std::vector<float> leaves;

        // Every tree's leaf for these feature pixel values, into `found` (one a tree),
        // each fetched while the next trees are walked.
        void walk(const float *pixels, const float **found) const {
            size_t first = 0;
            for (; first + walked_together <= trees; first += walked_together)
                walk<walked_together>(first, pixels, found);
            for (; first < trees; ++first) walk<1>(first, pixels, found);
        }

      private:
        // Trees walked side by side, a level of each in turn: their loads and compares
        // overlap, where one tree's steps each wait for the one before.
        static constexpr size_t walked_together = 8;

        // Trees first ..< first + N. The way down is worked out, not branched on: a split
        // goes either way about as often, and a mispredicted branch costs more than a step.
        template <size_t N> void walk(size_t first, const float *pixels, const float **found) const {
            size_t at[N] = {};
            for (size_t level = 0; level < depth; ++level)
                for (size_t k = 0; k < N; ++k) {
                    const Split &node = splits[(first + k) * nodes + at[k]];
                    at[k] = 2 * at[k] + 2 - static_cast<size_t>(pixels[node.idx1] - pixels[node.idx2] > node.thresh);
                }
            for (size_t k = 0; k < N; ++k) {
                found[first + k] = &leaves[((first + k) * (nodes + 1) + at[k] - nodes) * size];
                __builtin_prefetch(found[first + k]);
            }
        }
    };
    std::vector<Forest> forests;

    long num_parts() const { return initial_shape.size() / 2; }

    // dlib's deserialize(shape_predictor&), into the same fields, then laid out flat.
    friend void deserialize(sl_face_landmarker &model, std::istream &in) {
        int version = 0;
        dlib::deserialize(version, in);
        if (version != 1)
            throw serialization_error("Unexpected version found while deserializing dlib::shape_predictor.");
        std::vector<std::vector<impl::regression_tree>> forests;
        dlib::deserialize(model.initial_shape, in);
        dlib::deserialize(forests, in);
        dlib::deserialize(model.anchor_idx, in);
        dlib::deserialize(model.deltas, in);
        for (const auto &trees : forests) model.forests.push_back(flat(trees, model.initial_shape.size()));
    }

    // dlib's shape_predictor::operator()(img, rect), step for step.
    std::vector<point> operator()(const LumaView &image, const rectangle &face) const {
        matrix<float, 0, 1> shape = initial_shape;
        std::vector<float> feature_pixel_values;
        std::vector<const float *> leaves;
        const long size = shape.size();
        for (size_t cascade = 0; cascade < forests.size(); ++cascade) {
            {
                // Aligning the mean shape to the current one and the face's box to the image
                // are LAPACK SVDs.
                const std::lock_guard<std::mutex> one_at_a_time(blas_calls);
                impl::extract_feature_pixel_values(image, face, shape, initial_shape, anchor_idx[cascade],
                                                   deltas[cascade], feature_pixel_values);
            }
            // The trees read only the pixel values, not the shape: every leaf is found
            // first, then they are added in tree order, as dlib adds them.
            const Forest &forest = forests[cascade];
            leaves.resize(forest.trees);
            forest.walk(feature_pixel_values.data(), leaves.data());
            add_in_order(leaves, &shape(0), size);
        }
        const point_transform_affine to_image = unnormalizing_tform(face);
        std::vector<point> parts(num_parts());
        for (long i = 0; i < num_parts(); ++i) parts[i] = to_image(impl::location(shape, i));
        return parts;
    }

  private:
    // The leaves added to `shape` in tree order, as dlib adds them, a block of the shape's
    // floats at a time held in registers across every leaf (adding to memory stores and
    // reloads each float once a tree).
    static void add_in_order(const std::vector<const float *> &leaves, float *shape, long size) {
        constexpr long block = 64;
        long begin = 0;
        for (; begin + block <= size; begin += block) add_block<block>(leaves, shape + begin, begin);
        for (; begin + 8 <= size; begin += 8) add_block<8>(leaves, shape + begin, begin);
        for (; begin < size; ++begin) add_block<1>(leaves, shape + begin, begin);
    }

    template <long N> static void add_block(const std::vector<const float *> &leaves, float *values, long offset) {
        float sums[N];
        for (long i = 0; i < N; ++i) sums[i] = values[i];
        for (const float *leaf : leaves)
            for (long i = 0; i < N; ++i) sums[i] += leaf[offset + i];
        for (long i = 0; i < N; ++i) values[i] = sums[i];
    }

    // One cascade of dlib's trees, laid out flat. dlib's trainer makes every tree of a model
    // complete and as deep as the others; a model that is not is refused.
    static Forest flat(const std::vector<impl::regression_tree> &trees, long size) {
        Forest forest;
        forest.trees = trees.size();
        forest.nodes = trees.empty() ? 0 : trees[0].splits.size();
        forest.size = size;
        while ((size_t{1} << forest.depth) - 1 < forest.nodes) ++forest.depth;
        if ((size_t{1} << forest.depth) - 1 != forest.nodes)
            throw serialization_error("shape predictor trees that are not complete are not supported");
        for (const auto &tree : trees) {
            if (tree.splits.size() != forest.nodes || tree.leaf_values.size() != forest.nodes + 1)
                throw serialization_error("shape predictor trees of different depths are not supported");
            for (const auto &split : tree.splits)
                forest.splits.push_back(
                    {static_cast<uint32_t>(split.idx1), static_cast<uint32_t>(split.idx2), split.thresh});
            for (const auto &leaf : tree.leaf_values) {
                if (leaf.size() != size) throw serialization_error("a shape predictor leaf of the wrong size");
                forest.leaves.insert(forest.leaves.end(), &leaf(0), &leaf(0) + size);
            }
        }
        return forest;
    }

    static point_transform_affine unnormalizing_tform(const rectangle &face) {
        const std::lock_guard<std::mutex> one_at_a_time(blas_calls);
        return impl::unnormalizing_tform(face);
    }
};

struct sl_face_describer {
    face_recognition_net net;
};

extern "C" sl_face_landmarker *sl_face_landmarker_create(const char *path, char *error, size_t error_capacity) {
    return guarded<sl_face_landmarker *>(error, error_capacity, nullptr, [&] {
        auto landmarker = std::make_unique<sl_face_landmarker>();
        dlib::deserialize(path) >> *landmarker;
        return landmarker.release();
    });
}

extern "C" void sl_face_landmarker_destroy(sl_face_landmarker *landmarker) { delete landmarker; }

// One face's landmarks, interleaved x y into `xy` (at most `capacity` points); returns how
// many the model has.
static int predict_landmarks(const sl_face_landmarker &landmarker, const LumaView &image, const dlib::rectangle &face,
                             long *xy, int capacity) {
    const auto parts = landmarker(image, face);
    const int count = static_cast<int>(parts.size());
    for (int i = 0; i < count && i < capacity; ++i) {
        xy[2 * i] = parts[i].x();
        xy[2 * i + 1] = parts[i].y();
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
                                            int face_count, long *xy, int points_per_face,
                                            sl_face_detector *threads_of, char *error, size_t error_capacity) {
    if (landmarker == nullptr || pixels == nullptr || width <= 0 || height <= 0 ||
        bytes_per_row < width || face_count < 0 || (face_count > 0 && (faces == nullptr || xy == nullptr))) {
        write_error(error, error_capacity, "invalid arguments to sl_face_landmarker_run_faces");
        return -1;
    }
    return guarded<int>(error, error_capacity, -1, [&] {
        const LumaView image{pixels, height, width, static_cast<long>(bytes_per_row)};
        const int parts = static_cast<int>(landmarker->num_parts());
        if (parts > points_per_face) return parts;
        // Each thread takes the next face until none is left; a face's points are the same on any.
        std::atomic<int> next{0};
        const auto each_face = [&](int) {
            for (int i; (i = next.fetch_add(1)) < face_count;) {
                const auto &face = faces[i];
                predict_landmarks(*landmarker, image, dlib::rectangle(face.left, face.top, face.right, face.bottom),
                                  xy + 2L * points_per_face * i, parts);
            }
        };
        if (threads_of != nullptr && face_count > 1)
            on_scan_threads(threads_of, each_face);
        else
            each_face(0);
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
