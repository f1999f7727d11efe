#ifndef SIGHTLINE_CDLIB_PARALLEL_FACE_SCAN_H
#define SIGHTLINE_CDLIB_PARALLEL_FACE_SCAN_H
// dlib's frontal face detector spread over threads, with dlib's exact answers.
//
// `object_detector<scan_fhog_pyramid>::operator()` builds an image pyramid (each level 5/6
// the size of the one above), extracts HOG features on every level, runs each of its five
// filters over every level, and merges with non-maximum suppression. The levels are
// independent once the pyramid images exist, so here each thread takes a group of levels
// (balanced by area), extracts their features and runs the five filters over them; the
// per-level results are then concatenated in level order and merged exactly as dlib does
// (same sorts over the same sequences, same suppression), so boxes, scores and filter
// indices are identical to the single-threaded detector's.
#include <dlib/image_processing/frontal_face_detector.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

// Runs one job on every thread of the pool (the caller's included) and waits for all:
// workers sleep on a condition variable between jobs, never spin.
class WorkerPool {
public:
    explicit WorkerPool(int threads) {
        for (int index = 1; index < threads; ++index) workers_.emplace_back([this, index] { loop(index); });
    }

    ~WorkerPool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
            ++generation_;
        }
        wake_.notify_all();
        for (auto &worker : workers_) worker.join();
    }

    WorkerPool(const WorkerPool &) = delete;
    WorkerPool &operator=(const WorkerPool &) = delete;

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    // Calls job(0) on this thread and job(1) … job(size() - 1) on the workers; returns when
    // all have, rethrowing the first exception any of them threw.
    void run(const std::function<void(int)> &job) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_ = &job;
            pending_ = static_cast<int>(workers_.size());
            error_ = nullptr;
            ++generation_;
        }
        wake_.notify_all();
        try {
            job(0);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
        }
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return pending_ == 0; });
        job_ = nullptr;
        if (error_) std::rethrow_exception(error_);
    }

private:
    void loop(int index) {
        unsigned long seen = 0;
        for (;;) {
            const std::function<void(int)> *job;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return generation_ != seen; });
                seen = generation_;
                if (stopping_) return;
                job = job_;
            }
            try {
                (*job)(index);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex_);
                if (!error_) error_ = std::current_exception();
            }
            std::lock_guard<std::mutex> lock(mutex_);
            if (--pending_ == 0) done_.notify_one();
        }
    }

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    const std::function<void(int)> *job_ = nullptr;
    int pending_ = 0;
    unsigned long generation_ = 0;
    bool stopping_ = false;
    std::exception_ptr error_;
};

// The detector's scan of one image over a pool's threads; buffers are kept between frames.
class ParallelFaceScan {
public:
    using Scanner = dlib::scan_fhog_pyramid<dlib::pyramid_down<6>>;

    explicit ParallelFaceScan(int threads) : pool_(threads), saliency_(threads) {}

    // What `detector(img, dets, adjust_threshold)` returns, in the same order.
    template <typename image_type>
    void detect(const dlib::frontal_face_detector &detector, const image_type &img, double adjust_threshold,
                std::vector<dlib::rect_detection> &final_dets) {
        const Scanner &scanner = detector.get_scanner();
        const unsigned long levels = level_count(scanner, dlib::get_rect(img));
        build_pyramid(img, levels);

        // Buffers keep their capacity from frame to frame: nothing here allocates once the
        // first frames have grown them.
        const unsigned long filters = detector.num_detectors();
        found_.resize(filters);
        for (auto &per_level : found_) {
            per_level.resize(levels);
            for (auto &level : per_level) level.clear();
        }
        feats_.set_max_size(levels);
        feats_.set_size(levels);
        if (groups_levels_ != levels) deal_levels(levels);
        pool_.run([&](int worker) {
            for (unsigned long level : groups_[worker]) {
                if (level == 0) {
                    scan_level(detector, img, 0, adjust_threshold, saliency_[worker]);
                } else {
                    scan_level(detector, images_[level], level, adjust_threshold, saliency_[worker]);
                }
            }
        });

        // Merged as object_detector::operator() merges: per filter, its detections over all
        // levels in level order, sorted by score (as detect_from_fhog_pyramid sorts them),
        // then all filters' sorted together and suppressed.
        accumulated_.clear();
        for (unsigned long i = 0; i < filters; ++i) {
            filter_dets_.clear();
            for (const auto &level : found_[i]) filter_dets_.insert(filter_dets_.end(), level.begin(), level.end());
            std::sort(filter_dets_.rbegin(), filter_dets_.rend(), dlib::impl::compare_pair_rect);
            const double thresh = threshold(detector, i);
            for (const auto &d : filter_dets_) {
                dlib::rect_detection temp;
                temp.detection_confidence = d.first - thresh;
                temp.weight_index = i;
                temp.rect = d.second;
                accumulated_.push_back(temp);
            }
        }
        final_dets.clear();
        if (filters > 1) std::sort(accumulated_.rbegin(), accumulated_.rend());
        const dlib::test_box_overlap overlaps = detector.get_overlap_tester();
        for (const auto &candidate : accumulated_) {
            const bool suppressed = std::any_of(final_dets.begin(), final_dets.end(), [&](const auto &kept) {
                return overlaps(kept.rect, candidate.rect);
            });
            if (!suppressed) final_dets.push_back(candidate);
        }
    }

private:
    using Detections = std::vector<std::pair<double, dlib::rectangle>>;

    static double threshold(const dlib::frontal_face_detector &detector, unsigned long filter) {
        return detector.get_processed_w(filter).w(detector.get_scanner().get_num_dimensions());
    }

    // As create_fhog_pyramid counts them.
    static unsigned long level_count(const Scanner &scanner, dlib::rectangle rect) {
        unsigned long levels = 0;
        dlib::pyramid_down<6> pyramid;
        do {
            rect = pyramid.rect_down(rect);
            ++levels;
        } while (rect.width() >= scanner.get_min_pyramid_layer_width() &&
                 rect.height() >= scanner.get_min_pyramid_layer_height() &&
                 levels < scanner.get_max_pyramid_levels());
        return levels;
    }

    // Levels 1… from the image, each from the one above, as create_fhog_pyramid makes them.
    template <typename image_type> void build_pyramid(const image_type &img, unsigned long levels) {
        images_.set_max_size(levels);
        images_.set_size(levels);
        dlib::pyramid_down<6> pyramid;
        if (levels > 1) pyramid(img, images_[1]);
        for (unsigned long level = 2; level < levels; ++level) pyramid(images_[level - 1], images_[level]);
    }

    // Levels dealt to threads largest first, each to the thread with the least area so far;
    // done again only when the number of levels changes (a new frame size).
    void deal_levels(unsigned long levels) {
        groups_.assign(pool_.size(), {});
        std::vector<double> load(pool_.size(), 0);
        double area = 1;
        for (unsigned long level = 0; level < levels; ++level, area *= 25.0 / 36.0) {
            const auto lightest = std::min_element(load.begin(), load.end()) - load.begin();
            groups_[lightest].push_back(level);
            load[lightest] += area;
        }
        groups_levels_ = levels;
    }

    // HOG features of one level, then every filter over them: detect_from_fhog_pyramid's
    // loop body for this level.
    template <typename image_type>
    void scan_level(const dlib::frontal_face_detector &detector, const image_type &image, unsigned long level,
                    double adjust_threshold, dlib::array2d<float> &saliency) {
        const Scanner &scanner = detector.get_scanner();
        const auto &features = scanner.get_feature_extractor();
        const long cell_size = scanner.get_cell_size();
        const long window_height = scanner.get_fhog_window_height();
        const long window_width = scanner.get_fhog_window_width();
        const long box_height = window_height - 2 * scanner.get_padding();
        const long box_width = window_width - 2 * scanner.get_padding();
        features(image, feats_[level], cell_size, window_height, window_width);
        dlib::pyramid_down<6> pyramid;
        for (unsigned long i = 0; i < detector.num_detectors(); ++i) {
            const double thresh = threshold(detector, i) + adjust_threshold;
            const auto area =
                dlib::impl::apply_filters_to_fhog(detector.get_processed_w(i).get_detect_argument(), feats_[level], saliency);
            auto &found = found_[i][level];
            for (long r = area.top(); r <= area.bottom(); ++r) {
                for (long c = area.left(); c <= area.right(); ++c) {
                    if (saliency[r][c] >= thresh) {
                        dlib::rectangle rect = features.feats_to_image(
                            dlib::centered_rect(dlib::point(c, r), box_width, box_height), cell_size, window_height,
                            window_width);
                        found.emplace_back(saliency[r][c], pyramid.rect_up(rect, level));
                    }
                }
            }
        }
    }

    WorkerPool pool_;
    dlib::array<dlib::array2d<unsigned char>> images_;
    dlib::array<dlib::array<dlib::array2d<float>>> feats_;
    std::vector<dlib::array2d<float>> saliency_;  // one per thread
    std::vector<std::vector<unsigned long>> groups_;  // the levels each thread scans
    unsigned long groups_levels_ = 0;
    std::vector<std::vector<Detections>> found_;  // [filter][level]
    Detections filter_dets_;
    std::vector<dlib::rect_detection> accumulated_;
};

#endif
