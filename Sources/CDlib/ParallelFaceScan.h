#ifndef SIGHTLINE_CDLIB_PARALLEL_FACE_SCAN_H
#define SIGHTLINE_CDLIB_PARALLEL_FACE_SCAN_H
// dlib's frontal face detector spread over threads, with dlib's exact answers.
//
// `object_detector<scan_fhog_pyramid>::operator()` builds an image pyramid (each level 5/6
// the size of the one above), extracts HOG features on every level, runs each of its five
// filters over every level, and merges with non-maximum suppression. The levels are
// independent once the pyramid images exist, so here each thread takes the largest level
// left until none is, extracts its features and runs the five filters over it; the
// per-level results are then concatenated in level order and merged exactly as dlib does
// (same sorts over the same sequences, same suppression), so boxes, scores and filter
// indices are identical to the single-threaded detector's. The pyramid (`ExactPyramid.h`),
// the HOG features (`FhogFeatures.h`) and the filters (`SeparableFilters.h`) are dlib's
// arithmetic in faster code.
#include <dlib/image_processing/frontal_face_detector.h>

#include "CDlib.h"
#include "ExactPyramid.h"
#include "FhogFeatures.h"
#include "FramePath.h"
#include "SeparableFilters.h"
#include "ShimSupport.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <tuple>
#include <type_traits>
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
        pthread_setname_np(pthread_self(), "face-scan");  // as ps -L and perf show it
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

// Where to look: boxes within `area` (image pixels) from `min_size` to `max_size` wide,
// at the levels whose box sizes match, and one level either side with `neighbour_levels`.
struct FaceRegion {
    dlib::rectangle area;
    double min_size, max_size;
    bool neighbour_levels;
};

// The detector's scan of one image over a pool's threads; buffers are kept between frames.
//
// `detect` scans the whole image. `detect_regions` scans only given areas, at the pyramid
// levels that match the sizes of face looked for there, on crops of those levels, placed so that
// their interior features and filter responses are bit for bit the whole level's
// (`add_crop`); only detections whose filter window lies in that interior are kept, so
// every box and score it returns is one `detect` finds at that level too.
// For `detect_regions` over an image that is there whole: nothing to make before the scan.
struct NothingToPrepare {
    void operator()(const std::vector<dlib::rectangle> &) const {}
};

class ParallelFaceScan {
public:
    using Scanner = dlib::scan_fhog_pyramid<dlib::pyramid_down<6>>;

    explicit ParallelFaceScan(int threads) : pool_(threads), filtering_(threads) {}

    // The scan's threads, for other work of the frame between scans (the faces' landmarks).
    WorkerPool &pool() { return pool_; }

    // Whether each job of a scan (and each level of a whole scan's pyramid) waits first while
    // the frames of live sources being analysed fill every core (`FramePath`). Between scans.
    void yield_to_frame_path(bool yields) { yields_ = yields; }
    // How many jobs and levels waited so far.
    long waited() const { return waited_.load(std::memory_order_relaxed); }

    // `work` over `area` in bands of rows on the pool's threads, when it is large enough to be
    // worth waking them for (each thread takes the next band until none is left, as with the
    // scan's jobs); otherwise `work(area)` on this thread.
    template <typename Work> void in_bands(const dlib::rectangle &area, const Work &work) {
        const int threads = pool_.size();
        if (threads == 1 || area.area() < 60000) {
            work(area);
            return;
        }
        const long bands = 4 * threads;
        std::atomic<long> next{0};
        pool_.run([&](int) {
            for (long band; (band = next.fetch_add(1, std::memory_order_relaxed)) < bands;) {
                const long first = area.top() + area.height() * band / bands;
                const long last = area.top() + area.height() * (band + 1) / bands - 1;
                work(dlib::rectangle(area.left(), first, area.right(), last));
            }
        });
    }

    // What `detector(img, dets, adjust_threshold)` returns, in the same order.
    template <typename image_type>
    void detect(const dlib::frontal_face_detector &detector, const image_type &img, double adjust_threshold,
                std::vector<dlib::rect_detection> &final_dets) {
        const unsigned long levels = level_count(detector.get_scanner(), dlib::get_rect(img));
        size_pyramid(img, levels);
        for (unsigned long level = 1; level < levels; ++level) {
            yield();
            build_level(level, whole_level(level), true);
        }
        jobs_.clear();
        for (unsigned long level = 0; level < levels; ++level) {
            jobs_.push_back({level, level_rect(img, level), dlib::rectangle()});
        }
        run_jobs(detector, img, adjust_threshold);
        merge(detector, final_dets);
    }

    // The detections `detect` would make within each region's area at the levels that match
    // its sizes; nothing where no region is. Same order and merge as `detect`.
    // `prepare_level0(areas)` is called, before any pixel of `img` is read, with the areas of
    // it the scan reads (an image made on demand, such as an upsampled frame, need only
    // have those); with `NothingToPrepare`, the areas are not even worked out.
    //
    // A box kept here is one `detect` keeps only if no box `detect` finds suppresses it. The
    // boxes that do, on the samples and the hard clips, lie next to it: on its level, another
    // filter's box a cell or two away; a level up or down, a box at nearly its centre (a face
    // scores on several levels, best on one). So each box kept must have had those
    // neighbourhoods scanned (`unscanned_neighbourhoods`); where a region's edge cut one off,
    // it is scanned now and the boxes merged again, a few rounds at most. A box still lacking
    // one is dropped.
    template <typename image_type, typename Prepare = NothingToPrepare>
    void detect_regions(const dlib::frontal_face_detector &detector, const image_type &img, double adjust_threshold,
                        const std::vector<FaceRegion> &regions, std::vector<dlib::rect_detection> &final_dets,
                        const Prepare &prepare_level0 = {}) {
        const Scanner &scanner = detector.get_scanner();
        const unsigned long levels = level_count(scanner, dlib::get_rect(img));
        const double base = base_box_size(scanner);
        const auto matched = [&](double size) { return std::log(std::max(size, 1.0) / base) / std::log(6.0 / 5.0); };
        wanted_.clear();
        for (const auto &region : regions) {
            // Between levels (a box over the top or left edge is a little larger): both.
            const long spread = region.neighbour_levels ? 1 : 0;
            const long first = std::max(static_cast<long>(std::floor(matched(region.min_size) + 0.05)) - spread, 0L);
            const long last = static_cast<long>(std::ceil(matched(region.max_size) - 0.05)) + spread;
            for (long level = first; level <= last && level < static_cast<long>(levels); ++level) {
                wanted_.emplace_back(static_cast<unsigned long>(level),
                                     dlib::pyramid_down<6>().rect_down(region.area, level));
            }
        }
        // Every level sized (no pixel made): a neighbourhood may lie deeper than the regions.
        size_pyramid(img, levels);
        for (auto &areas : built_) areas.clear();
        jobs_.clear();
        for (auto &per_job : found_) per_job.clear();
        constexpr int rounds = 4;
        for (int round = 0;; ++round) {
            const size_t first_job = jobs_.size();
            merge_wanted(scanner, img);
            for (const auto &[level, target] : wanted_) add_crop(scanner, level_rect(img, level), level, target);
            const bool scanned_more = jobs_.size() > first_job;
            if (scanned_more) {
                build_levels_for(first_job, prepare_level0);
                run_jobs(detector, img, adjust_threshold, first_job);
            }
            merge(detector, final_dets);
            if (!unscanned_neighbourhoods(scanner, img, levels, final_dets)) return;
            if (round == rounds || (round > 0 && !scanned_more)) break;
        }
        // Boxes whose neighbourhoods are still not all scanned: not certain to be `detect`'s.
        size_t kept = 0;
        for (size_t i = 0; i < final_dets.size(); ++i) {
            if (!unsure_[i]) final_dets[kept++] = final_dets[i];
        }
        final_dets.resize(kept);
    }

    // The width of the boxes found at each level of an image of this size, in its pixels.
    static std::vector<double> level_box_sizes(const dlib::frontal_face_detector &detector, dlib::rectangle image) {
        const Scanner &scanner = detector.get_scanner();
        std::vector<double> sizes(level_count(scanner, image));
        double size = base_box_size(scanner);
        for (double &level : sizes) {
            level = size;
            size *= 6.0 / 5.0;
        }
        return sizes;
    }

private:
    // A filter's detection: its score, box (image pixels) and pyramid level.
    struct Found {
        double score;
        dlib::rectangle rect;
        unsigned long level;
    };
    using Detections = std::vector<Found>;

    // A thread's buffers for extracting a job's features and running the filters over them.
    struct Filtering {
        FhogFeatures features;
        SeparableFilters filters;
        dlib::array2d<float> saliency;
    };

    // One level, or a crop of one, to extract features from and run the filters over.
    struct Job {
        unsigned long level;
        dlib::rectangle crop;     // in the level's pixels
        dlib::rectangle trusted;  // windows must lie inside (empty: the whole level)
    };

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

    // The width of a detection's box at level 0 (73 px for dlib's detector; 81 for a box
    // that hangs over the image's top or left edge, which fhog_to_image places differently);
    // each level down finds faces 6/5 the size of the one above.
    static double base_box_size(const Scanner &scanner) {
        const long box_width = scanner.get_fhog_window_width() - 2 * scanner.get_padding();
        const long box_height = scanner.get_fhog_window_height() - 2 * scanner.get_padding();
        const dlib::rectangle box = scanner.get_feature_extractor().feats_to_image(
            dlib::centered_rect(dlib::point(100, 100), box_width, box_height), scanner.get_cell_size(),
            scanner.get_fhog_window_height(), scanner.get_fhog_window_width());
        return std::max(box.width(), box.height());
    }

    template <typename image_type> dlib::rectangle level_rect(const image_type &img, unsigned long level) const {
        return level == 0 ? dlib::get_rect(img) : dlib::get_rect(images_[level]);
    }

    // Areas of one level that overlap, or lie so near that their crops would, become their
    // bounding box: one crop scanned once instead of the same features extracted and filtered
    // for each (the four edges' bands at the deep levels, where each is most of the level).
    template <typename image_type> void merge_wanted(const Scanner &scanner, const image_type &img) {
        const long pad = (static_cast<long>(scanner.get_padding()) + 4) * scanner.get_cell_size();
        // By level, then place: a total order, so the crops come out the same whatever the regions' order.
        std::sort(wanted_.begin(), wanted_.end(), [](const auto &a, const auto &b) {
            return std::make_tuple(a.first, a.second.top(), a.second.left(), a.second.bottom(), a.second.right()) <
                   std::make_tuple(b.first, b.second.top(), b.second.left(), b.second.bottom(), b.second.right());
        });
        areas_.clear();
        std::vector<std::pair<unsigned long, dlib::rectangle>> merged;
        for (size_t first = 0; first < wanted_.size();) {
            const unsigned long level = wanted_[first].first;
            const dlib::rectangle bounds = level_rect(img, level);
            areas_.clear();
            size_t next = first;
            for (; next < wanted_.size() && wanted_[next].first == level; ++next) areas_.push_back(wanted_[next].second);
            merge_near(areas_, [&](const dlib::rectangle &area) { return dlib::grow_rect(area, pad).intersect(bounds).area(); });
            for (const auto &area : areas_) merged.emplace_back(level, area);
            first = next;
        }
        wanted_.swap(merged);
    }

    // Replaces any two areas that cost no more together, as their bounding box, than apart;
    // then all of them, where their bounding box costs no more than they do (bands along
    // all four edges, each pair's box much more than the two, all four's the level).
    template <typename Cost> static void merge_near(std::vector<dlib::rectangle> &areas, Cost cost) {
        merge_pairs(areas, cost);
        if (areas.size() < 3) return;
        dlib::rectangle all;
        double apart = 0;
        for (const auto &area : areas) {
            all += area;
            apart += static_cast<double>(cost(area));
        }
        if (static_cast<double>(cost(all)) <= apart) areas.assign(1, all);
    }

    template <typename Cost> static void merge_pairs(std::vector<dlib::rectangle> &areas, Cost cost) {
        for (bool merged = true; merged;) {
            merged = false;
            for (size_t i = 0; i < areas.size() && !merged; ++i) {
                for (size_t j = i + 1; j < areas.size(); ++j) {
                    const dlib::rectangle both = areas[i] + areas[j];
                    if (cost(both) <= cost(areas[i]) + cost(areas[j])) {
                        areas[i] = both;
                        areas.erase(areas.begin() + static_cast<long>(j));
                        merged = true;
                        break;
                    }
                }
            }
        }
    }

    // Adds the crop of `level` that holds every filter window over `target` (level pixels).
    //
    // Exactness: the crop's top-left lies on the level's cell grid, so a cell's pixels are
    // the same ones. dlib's filters run 8 columns at a time with SIMD from the first, each
    // lane alike, and the rest one by one (summing in another order): the crop is a whole
    // number of cells wide, 2 more than a multiple of 8 (dlib's HOG drops a cell at either
    // side), so that none of its columns is left to the one-by-one rest, and any column of it
    // is summed as over the whole level. One that goes to the level's right edge starts on a
    // multiple of 8 cells instead, so that its rest is the level's. Windows are kept only
    // inside a band of 3 cells whose features differ (their neighbours are cut off). At the
    // level's edges none of this applies: there the crop is the level.
    void add_crop(const Scanner &scanner, const dlib::rectangle &bounds, unsigned long level,
                  const dlib::rectangle &wanted) {
        const long cell = scanner.get_cell_size();
        const long band = 3 * cell;
        const long simd = 8 * cell;
        // A box within `target` has its filter window (the box and its padding) within this.
        const long reach = (static_cast<long>(scanner.get_padding()) + 1) * cell;
        const dlib::rectangle target = wanted.intersect(bounds);
        if (target.is_empty()) return;
        dlib::rectangle crop = dlib::grow_rect(target, reach + band).intersect(bounds);
        crop.top() -= crop.top() % cell;
        crop.left() -= crop.left() % cell;
        const long cells = (crop.width() + cell - 1) / cell;
        crop.right() = crop.left() + (cells + (10 - cells % 8) % 8) * cell - 1;
        // One that would end within 8 cells of the level's right edge goes to it: there it
        // costs little more, and it then finds the boxes that hang over that edge (a face
        // coming in there is found beside a face followed near it). Its left edge is then on
        // a multiple of 8 cells, so that its one-by-one columns are the level's.
        if (crop.right() + simd > bounds.right()) {
            crop.left() -= crop.left() % simd;
            crop.right() = bounds.right();
        }
        constexpr long beyond = 1L << 30;
        dlib::rectangle trusted = crop;
        trusted.left() = crop.left() > 0 ? crop.left() + band : -beyond;
        trusted.top() = crop.top() > 0 ? crop.top() + band : -beyond;
        trusted.right() = crop.right() < bounds.right() ? crop.right() - band : beyond;
        trusted.bottom() = crop.bottom() < bounds.bottom() ? crop.bottom() - band : beyond;
        if (crop.width() < scanner.get_fhog_window_width() * cell ||
            crop.height() < scanner.get_fhog_window_height() * cell) {
            return;
        }
        jobs_.push_back({level, crop, trusted});
    }

    // Each level only where the jobs from `first_job` on, or the parts of the level below
    // they come from, need it: areas from the deepest level up (those near each other as
    // one), then built top down. Bands along opposite edges stay two areas, not the whole level.
    // A pixel built before in this region scan (another face's chain, an earlier round) is
    // not built again: the chains of large faces each reach most of the upper levels, and
    // building them all was more pixels than the whole pyramid has.
    template <typename Prepare> void build_levels_for(size_t first_job, const Prepare &prepare_level0) {
        unsigned long deepest = 0;
        for (size_t job = first_job; job < jobs_.size(); ++job) deepest = std::max(deepest, jobs_[job].level);
        needed_.resize(std::max<size_t>(needed_.size(), deepest + 1));
        built_.resize(std::max<size_t>(built_.size(), deepest + 1));
        for (auto &areas : needed_) areas.clear();
        for (size_t job = first_job; job < jobs_.size(); ++job) needed_[jobs_[job].level].push_back(jobs_[job].crop);
        for (unsigned long level = deepest; level >= 1; --level) {
            merge_near(needed_[level], [](const dlib::rectangle &area) { return area.area(); });
            if (level >= 2) {
                for (const auto &area : needed_[level]) needed_[level - 1].push_back(steps_[level].source_of(area));
            }
        }
        if constexpr (!std::is_same_v<Prepare, NothingToPrepare>) {
            level0_areas_.clear();
            for (size_t job = first_job; job < jobs_.size(); ++job) {
                if (jobs_[job].level == 0) level0_areas_.push_back(jobs_[job].crop);
            }
            if (deepest >= 1) {
                for (const auto &area : needed_[1]) level0_areas_.push_back(steps_[1].source_of(area));
            }
            merge_near(level0_areas_, [](const dlib::rectangle &area) { return area.area(); });
            prepare_level0(level0_areas_);
        }
        for (unsigned long level = 1; level <= deepest; ++level) {
            for (const auto &area : needed_[level]) {
                pieces_.assign(1, area.intersect(whole_level(level)));
                for (const auto &done : built_[level]) subtract(pieces_, done);
                for (const auto &piece : pieces_) {
                    build_level(level, piece, true);
                    built_[level].push_back(piece);
                }
            }
        }
    }

    // `pieces` less `done`: each piece `done` overlaps becomes up to four (above, below, left
    // and right of it).
    static void subtract(std::vector<dlib::rectangle> &pieces, const dlib::rectangle &done) {
        for (size_t i = pieces.size(); i-- > 0;) {
            const dlib::rectangle piece = pieces[i];
            const dlib::rectangle overlap = piece.intersect(done);
            if (overlap.is_empty()) continue;
            pieces.erase(pieces.begin() + static_cast<long>(i));
            const dlib::rectangle rest[] = {
                {piece.left(), piece.top(), piece.right(), overlap.top() - 1},
                {piece.left(), overlap.bottom() + 1, piece.right(), piece.bottom()},
                {piece.left(), overlap.top(), overlap.left() - 1, overlap.bottom()},
                {overlap.right() + 1, overlap.top(), piece.right(), overlap.bottom()},
            };
            for (const auto &part : rest) {
                if (!part.is_empty()) pieces.push_back(part);
            }
        }
    }

    // Puts in `wanted_` each neighbourhood of a box kept (`detect_regions`) that no job has
    // scanned, and marks those boxes in `unsure_`; true when there is one. The neighbourhood
    // on a level: the boxes of that level's size whose centres lie within two of its cells of
    // the box's on its own level, one cell on the levels either side.
    template <typename image_type>
    bool unscanned_neighbourhoods(const Scanner &scanner, const image_type &img, unsigned long levels,
                                  const std::vector<dlib::rect_detection> &final_dets) {
        const double cell = scanner.get_cell_size();
        const dlib::rectangle margins = window_margins(scanner);
        wanted_.clear();
        unsure_.assign(final_dets.size(), false);
        for (size_t i = 0; i < final_dets.size(); ++i) {
            const dlib::rectangle &box = final_dets[i].rect;
            const long level = static_cast<long>(final_levels_[i]);
            const dlib::dpoint centre = dlib::dcenter(box);
            for (long other = std::max(level - 1, 0L); other <= level + 1; ++other) {
                if (other >= static_cast<long>(levels)) continue;
                const dlib::rectangle bounds = level_rect(img, other);
                const double scale = std::pow(6.0 / 5.0, other - level);
                const double reach = (other == level ? 2 : 1) * cell * std::pow(6.0 / 5.0, other);
                const dlib::rectangle neighbourhood = dlib::pyramid_down<6>().rect_down(
                    dlib::centered_drect(centre, box.width() * scale + 2 * reach, box.height() * scale + 2 * reach),
                    other);
                const dlib::rectangle windows(neighbourhood.left() - margins.left() - 1,
                                              neighbourhood.top() - margins.top() - 1,
                                              neighbourhood.right() + margins.right() + 1,
                                              neighbourhood.bottom() + margins.bottom() + 1);
                if (windows.intersect(bounds).is_empty() || scanned(static_cast<unsigned long>(other), windows)) {
                    continue;
                }
                wanted_.emplace_back(static_cast<unsigned long>(other), neighbourhood);
                unsure_[i] = true;
            }
        }
        return !wanted_.empty();
    }

    // Whether a job of `level` kept every filter window within `windows` (level pixels; a
    // job at the level's edge keeps those that hang over it).
    bool scanned(unsigned long level, const dlib::rectangle &windows) const {
        return std::any_of(jobs_.begin(), jobs_.end(), [&](const Job &job) {
            return job.level == level && (job.trusted.is_empty() || job.trusted.contains(windows));
        });
    }

    // How far a filter window reaches beyond its box on each side, in a level's pixels.
    static dlib::rectangle window_margins(const Scanner &scanner) {
        const auto &features = scanner.get_feature_extractor();
        const long cell = scanner.get_cell_size();
        const long rows = scanner.get_fhog_window_height(), columns = scanner.get_fhog_window_width();
        const dlib::point centre(100, 100);
        const dlib::rectangle window =
            features.feats_to_image(dlib::centered_rect(centre, columns, rows), cell, rows, columns);
        const dlib::rectangle box = features.feats_to_image(
            dlib::centered_rect(centre, columns - 2 * scanner.get_padding(), rows - 2 * scanner.get_padding()), cell,
            rows, columns);
        return dlib::rectangle(box.left() - window.left(), box.top() - window.top(), window.right() - box.right(),
                               window.bottom() - box.bottom());
    }

    // Plans levels 1… of the image's pyramid and sizes their buffers (kept from frame to
    // frame), as create_fhog_pyramid sizes them; computes no pixel.
    template <typename image_type> void size_pyramid(const image_type &img, unsigned long levels) {
        level0_ = view(img, dlib::get_rect(img));
        if (images_.max_size() < levels) {
            images_.set_max_size(levels);
            steps_.resize(levels);
        }
        images_.set_size(std::max(levels, images_.size()));
        long rows = level0_.rows, columns = level0_.columns;
        for (unsigned long level = 1; level < levels; ++level) {
            steps_[level].plan(rows, columns);
            rows = steps_[level].out_rows();
            columns = steps_[level].out_columns();
            if (images_[level].nr() != rows || images_[level].nc() != columns) images_[level].set_size(rows, columns);
        }
    }

    dlib::rectangle whole_level(unsigned long level) const { return dlib::get_rect(images_[level]); }

    // `area` of a level from the level above, with dlib's pixels; in bands of rows over the
    // pool when `spread`.
    void build_level(unsigned long level, const dlib::rectangle &area, bool spread) {
        const LumaView above = level == 1 ? level0_ : view(images_[level - 1], whole_level(level - 1));
        const PyramidStep &step = steps_[level];
        if (!spread) {
            step.run(above, images_[level], area);
            return;
        }
        in_bands(area, [&](const dlib::rectangle &band) { step.run(above, images_[level], band); });
    }

    // Every job, on the pool's threads: each thread takes the largest job left until none
    // is, so a thread the system holds back (a decoder on the same core) leaves its share
    // to the others instead of making them wait. Which thread scans a job changes nothing:
    // each writes only the job's own features and detections.
    template <typename image_type>
    void run_jobs(const dlib::frontal_face_detector &detector, const image_type &img, double adjust_threshold,
                  size_t first_job = 0) {
        const unsigned long filters = detector.num_detectors();
        found_.resize(filters);
        for (auto &per_job : found_) {
            per_job.resize(jobs_.size());
            for (size_t job = first_job; job < jobs_.size(); ++job) per_job[job].clear();
        }
        // Features are kept only while their job is scanned.
        feats_.set_max_size(std::max<unsigned long>(feats_.max_size(), jobs_.size()));
        feats_.set_size(jobs_.size());
        largest_first_.resize(jobs_.size() - first_job);
        for (size_t i = 0; i < largest_first_.size(); ++i) largest_first_[i] = first_job + i;
        std::sort(largest_first_.begin(), largest_first_.end(), [&](auto a, auto b) {
            return jobs_[a].crop.area() != jobs_[b].crop.area() ? jobs_[a].crop.area() > jobs_[b].crop.area() : a < b;
        });
        std::atomic<unsigned long> next{0};
        pool_.run([&](int worker) {
            for (unsigned long taken; (taken = next.fetch_add(1, std::memory_order_relaxed)) < largest_first_.size();) {
                yield();
                const unsigned long job = largest_first_[taken];
                const Job &j = jobs_[job];
                if (j.level == 0) {
                    scan_job(detector, view(img, j.crop), job, adjust_threshold, filtering_[worker]);
                } else {
                    scan_job(detector, view(images_[j.level], j.crop), job, adjust_threshold, filtering_[worker]);
                }
            }
        });
    }

    void yield() {
        if (yields_ && FramePath::shared().wait()) waited_.fetch_add(1, std::memory_order_relaxed);
    }

    // A crop of an image, read in place.
    static LumaView view(const LumaView &image, const dlib::rectangle &crop) {
        return LumaView{image.pixels + crop.top() * image.bytes_per_row + crop.left(),
                        static_cast<long>(crop.height()), static_cast<long>(crop.width()), image.bytes_per_row};
    }
    static LumaView view(const dlib::array2d<unsigned char> &image, const dlib::rectangle &crop) {
        return view(LumaView{&image[0][0], static_cast<long>(image.nr()), static_cast<long>(image.nc()),
                             static_cast<long>(image.nc())},
                    crop);
    }

    // HOG features of one job's pixels, then every filter over them: detect_from_fhog_pyramid's
    // loop body for a level, with boxes placed back in the whole image.
    void scan_job(const dlib::frontal_face_detector &detector, const LumaView &image, unsigned long job,
                  double adjust_threshold, Filtering &filtering) {
        const Job &j = jobs_[job];
        const Scanner &scanner = detector.get_scanner();
        const auto &features = scanner.get_feature_extractor();
        const long cell_size = scanner.get_cell_size();
        const long window_height = scanner.get_fhog_window_height();
        const long window_width = scanner.get_fhog_window_width();
        const long box_height = window_height - 2 * scanner.get_padding();
        const long box_width = window_width - 2 * scanner.get_padding();
        const dlib::point origin = j.crop.tl_corner();
        if (cell_size == 8) {
            filtering.features.extract(image, feats_[job], window_height, window_width);
        } else {
            features(image, feats_[job], cell_size, window_height, window_width);
        }
        dlib::pyramid_down<6> pyramid;
        dlib::array2d<float> &saliency = filtering.saliency;
        for (unsigned long i = 0; i < detector.num_detectors(); ++i) {
            const double thresh = threshold(detector, i) + adjust_threshold;
            const auto area =
                filtering.filters.apply(detector.get_processed_w(i).get_detect_argument(), feats_[job], saliency);
            auto &found = found_[i][job];
            for (long r = area.top(); r <= area.bottom(); ++r) {
                for (long c = area.left(); c <= area.right(); ++c) {
                    if (saliency[r][c] < thresh) continue;
                    if (!j.trusted.is_empty()) {
                        const dlib::rectangle window = features.feats_to_image(
                            dlib::centered_rect(dlib::point(c, r), window_width, window_height), cell_size,
                            window_height, window_width);
                        if (!j.trusted.contains(dlib::translate_rect(window, origin))) continue;
                    }
                    const dlib::rectangle rect = features.feats_to_image(
                        dlib::centered_rect(dlib::point(c, r), box_width, box_height), cell_size, window_height,
                        window_width);
                    found.push_back(
                        {saliency[r][c], pyramid.rect_up(dlib::translate_rect(rect, origin), j.level), j.level});
                }
            }
        }
    }

    // Merged as object_detector::operator() merges: per filter, its detections over all
    // jobs in order, sorted by score (as detect_from_fhog_pyramid sorts them), then all
    // filters' sorted together and suppressed. The sorts compare scores alone, as dlib's do,
    // so equal scores come out in dlib's order. Each box's level goes to `final_levels_`.
    void merge(const dlib::frontal_face_detector &detector, std::vector<dlib::rect_detection> &final_dets) {
        const auto by_score = [](const auto &a, const auto &b) {
            return a.first.detection_confidence < b.first.detection_confidence;
        };
        accumulated_.clear();
        for (unsigned long i = 0; i < detector.num_detectors(); ++i) {
            filter_dets_.clear();
            for (const auto &job : found_[i]) filter_dets_.insert(filter_dets_.end(), job.begin(), job.end());
            std::sort(filter_dets_.rbegin(), filter_dets_.rend(),
                      [](const Found &a, const Found &b) { return a.score < b.score; });
            const double thresh = threshold(detector, i);
            for (const auto &d : filter_dets_) {
                dlib::rect_detection temp;
                temp.detection_confidence = d.score - thresh;
                temp.weight_index = i;
                temp.rect = d.rect;
                accumulated_.emplace_back(temp, d.level);
            }
        }
        final_dets.clear();
        final_levels_.clear();
        if (detector.num_detectors() > 1) std::sort(accumulated_.rbegin(), accumulated_.rend(), by_score);
        const dlib::test_box_overlap overlaps = detector.get_overlap_tester();
        for (const auto &[detection, level] : accumulated_) {
            const dlib::rect_detection &candidate = detection;
            const bool suppressed = std::any_of(final_dets.begin(), final_dets.end(), [&](const auto &kept) {
                return overlaps(kept.rect, candidate.rect);
            });
            if (!suppressed) {
                final_dets.push_back(candidate);
                final_levels_.push_back(level);
            }
        }
    }

    WorkerPool pool_;
    bool yields_ = false;
    std::atomic<long> waited_{0};
    dlib::array<dlib::array2d<unsigned char>> images_;  // levels 1…; the image is level 0
    std::vector<PyramidStep> steps_;                    // how each level comes from the one above
    LumaView level0_{nullptr, 0, 0, 0};
    std::vector<std::vector<dlib::rectangle>> needed_;  // per level, the areas a region scan reads
    std::vector<std::vector<dlib::rectangle>> built_;   // per level, the areas built in this region scan
    std::vector<dlib::rectangle> pieces_;               // an area less those built, being cut
    std::vector<dlib::rectangle> level0_areas_;         // and of the image itself
    std::vector<dlib::rectangle> areas_;                // one level's wanted areas, being merged
    dlib::array<dlib::array<dlib::array2d<float>>> feats_;  // one per job
    std::vector<Filtering> filtering_;  // one per thread
    std::vector<Job> jobs_;
    std::vector<std::pair<unsigned long, dlib::rectangle>> wanted_;  // (level, area in its pixels) per region
    std::vector<unsigned long> largest_first_;  // the jobs in the order they are taken
    std::vector<std::vector<Detections>> found_;  // [filter][job]
    Detections filter_dets_;
    std::vector<std::pair<dlib::rect_detection, unsigned long>> accumulated_;  // with each box's level
    std::vector<unsigned long> final_levels_;  // each kept box's level
    std::vector<bool> unsure_;                 // each kept box's: a neighbourhood unscanned
};

#endif
