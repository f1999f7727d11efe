#ifndef SIGHTLINE_CDLIB_FRAME_PATH_H
#define SIGHTLINE_CDLIB_FRAME_PATH_H
// The frames of this process's live sources being analysed (`sl_frames_analysing`). A full
// scan made beside a live source's tracking yields to them: before each of its jobs it waits
// while they fill every core, so that several cameras' full scans take only what the frames
// leave, and do not make one of them drop a frame as late. A nice value cannot say this: at
// nice 10 six cameras' full-scans threads together still took a fifth of the cores from the
// frames; SCHED_IDLE, which would not, starves them whenever anything else on the machine is
// busy, another process included.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

class FramePath {
public:
    static FramePath &shared() {
        static FramePath path;
        return path;
    }

    // The CPUs this process may use (its affinity mask).
    static int available_cores() {
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
        return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    }

    // A frame started (+1) or stopped (-1) being analysed.
    void analysing(int change) {
        bool freed;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            const bool was = busy();
            analysing_ += change;
            freed = was && !busy();
        }
        if (freed) free_.notify_all();
    }

    // Waits while the frames being analysed fill every core, a quarter of a second at most (so
    // that a full scan still moves on under a load that keeps them busy all the while);
    // whether it waited.
    bool wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!busy()) return false;
        free_.wait_for(lock, std::chrono::milliseconds(250), [this] { return !busy(); });
        return true;
    }

private:
    bool busy() const { return analysing_ >= cores_; }

    std::mutex mutex_;
    std::condition_variable free_;
    long analysing_ = 0;
    const long cores_ = available_cores();
};

#endif
