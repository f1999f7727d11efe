// Where a face scan's instructions go, counted by callgrind (tools/callgrind-face-scan.sh).
// The `sightline` binary cannot run under this machine's valgrind (3.19 dies in its own
// code once the Swift runtime's main thread parks in dispatchMain), so this drives the
// same shim, compiled with the package's flags, on frames ffmpeg decoded: every frame
// scanned whole, or (`track`) whole every fifth frame and, between, only around the faces
// of the frame before, at their pyramid level and the neighbouring ones, as
// `RegionTracking` looks for faces that are followed (no edge bands: the clip's faces are
// followed from the first frame).
//
//   callgrind-face-scan FRAMES.gray WIDTH HEIGHT UPSAMPLE full|track
#include <CDlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char **argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s FRAMES.gray WIDTH HEIGHT UPSAMPLE full|track\n", argv[0]);
        return 2;
    }
    const int width = std::atoi(argv[2]), height = std::atoi(argv[3]), upsample = std::atoi(argv[4]);
    const bool track = std::strcmp(argv[5], "track") == 0;
    std::FILE *file = std::fopen(argv[1], "rb");
    if (!file || width <= 0 || height <= 0 || upsample < 0 || upsample > 3) {
        std::fprintf(stderr, "cannot read %s as %dx%d frames\n", argv[1], width, height);
        return 1;
    }
    char error[256];
    sl_face_detector *detector = sl_face_detector_create(1, error, sizeof error);
    if (!detector) {
        std::fprintf(stderr, "%s\n", error);
        return 1;
    }
    std::vector<uint8_t> frame(size_t(width) * height);
    std::vector<sl_face_detection> faces(64);
    std::vector<sl_face_region> regions;
    int frames = 0, found = 0, count = 0;
    while (std::fread(frame.data(), 1, frame.size(), file) == frame.size()) {
        if (!track || frames % 5 == 0) {
            count = sl_face_detector_detect(detector, frame.data(), width, height, width, upsample, 0,
                                            faces.data(), int(faces.size()), error, sizeof error);
        } else {
            regions.clear();
            for (int i = 0; i < count && i < int(faces.size()); ++i) {
                const sl_face_detection &f = faces[i];
                const double size = double(f.right - f.left + 1), margin = size / 4;
                regions.push_back({long(f.left - margin), long(f.top - margin), long(f.right + margin),
                                   long(f.bottom + margin), size, size, 1});
            }
            count = sl_face_detector_detect_regions(detector, frame.data(), width, height, width, upsample, 0,
                                                    regions.data(), int(regions.size()), faces.data(),
                                                    int(faces.size()), error, sizeof error);
        }
        if (count < 0) {
            std::fprintf(stderr, "%s\n", error);
            return 1;
        }
        found += count;
        ++frames;
    }
    std::printf("%d frames, %d faces\n", frames, found);
    sl_face_detector_destroy(detector);
    return 0;
}
