#include "CZXing.h"

#define ZX_USE_UTF8 1  // text() as UTF-8 std::string, the API zxing-cpp moves to
#include <ZXing/ReadBarcode.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

/// zxing-cpp's LocalAverage (HybridBinarizer) rule for 2D symbols, computed the same way
/// but a whole row of blocks at a time, which the compiler vectorises: about 0.06 ms for
/// 640x480 against zxing-cpp 1.4's 0.4, nearly half of a 2D pass. The reader then takes
/// the result as is (Binarizer::BoolCast: 0 is black). Each 8x8 block's black point is its
/// mean, or for a flat block (range <= 24) half its minimum, raised to its neighbours' when
/// that is darker; a pixel is black when at most the mean black point of the 5x5 blocks
/// around its own.
class LocalAverageBinarizer {
  public:
    static constexpr int blockSize = 8;
    /// Smaller images: zxing-cpp falls back to a global histogram, and so do we.
    static bool handles(int width, int height) { return width >= 40 && height >= 40; }

    /// Writes `width` x `height` pixels of 0 (black) or 255 to `binary`, tightly packed.
    void binarize(const uint8_t *luma, int width, int height, ptrdiff_t stride) {
        const int columns = (width + blockSize - 1) / blockSize, rows = (height + blockSize - 1) / blockSize;
        sum.resize(width);
        low.resize(width);
        high.resize(width);
        threshold.resize(width);
        blackPoints.assign(size_t(columns) * rows, 0);
        binary.resize(size_t(width) * height);
        for (int by = 0; by < rows; ++by) {
            // The last block row and column overlap the one before when the size is not a
            // multiple of 8, as in zxing-cpp.
            const int top = std::min(by * blockSize, height - blockSize);
            accumulateColumns(luma + top * stride, width, stride);
            int *points = blackPoints.data() + size_t(by) * columns;
            for (int bx = 0; bx < columns; ++bx) {
                const int left = std::min(bx * blockSize, width - blockSize);
                int total = 0, lo = 255, hi = 0;
                for (int x = left; x < left + blockSize; ++x) {
                    total += sum[x];
                    lo = std::min(lo, int(low[x]));
                    hi = std::max(hi, int(high[x]));
                }
                int point = total >> 6;
                if (hi - lo <= 24) {
                    point = lo / 2;
                    if (by > 0 && bx > 0) {
                        const int neighbours = (points[bx - columns] + 2 * points[bx - 1] + points[bx - columns - 1]) / 4;
                        if (lo < neighbours) point = neighbours;
                    }
                }
                points[bx] = point;
            }
        }
        for (int by = 0; by < rows; ++by) {
            const int top = std::min(by * blockSize, height - blockSize);
            const int centreY = std::clamp(by, 2, rows - 3);
            for (int bx = 0; bx < columns; ++bx) {
                const int left = std::min(bx * blockSize, width - blockSize);
                const int centreX = std::clamp(bx, 2, columns - 3);
                int total = 0;
                for (int dy = -2; dy <= 2; ++dy) {
                    const int *row = blackPoints.data() + size_t(centreY + dy) * columns + centreX - 2;
                    total += row[0] + row[1] + row[2] + row[3] + row[4];
                }
                std::fill(threshold.begin() + left, threshold.begin() + left + blockSize, uint8_t(total / 25));
            }
            const uint8_t *__restrict thresholds = threshold.data();
            for (int y = top; y < top + blockSize; ++y) {
                const uint8_t *__restrict in = luma + y * stride;
                uint8_t *__restrict out = binary.data() + size_t(y) * width;
                for (int x = 0; x < width; ++x) out[x] = in[x] <= thresholds[x] ? 0 : 255;
            }
        }
    }

    std::vector<uint8_t> binary;

  private:
    /// Per column, the sum, minimum and maximum of a block row's 8 lines.
    void accumulateColumns(const uint8_t *line, int width, ptrdiff_t stride) {
        // Plain non-aliasing pointers, or the compiler will not vectorise these loops.
        uint16_t *__restrict sums = sum.data();
        uint8_t *__restrict lows = low.data();
        uint8_t *__restrict highs = high.data();
        for (int x = 0; x < width; ++x) {
            sums[x] = line[x];
            lows[x] = highs[x] = line[x];
        }
        for (int y = 1; y < blockSize; ++y) {
            line += stride;
            for (int x = 0; x < width; ++x) {
                sums[x] += line[x];
                lows[x] = std::min(lows[x], line[x]);
                highs[x] = std::max(highs[x], line[x]);
            }
        }
    }

    std::vector<uint16_t> sum;
    std::vector<uint8_t> low, high, threshold;
    std::vector<int> blackPoints;
};

}  // namespace

struct sl_barcode_reader {
    ZXing::DecodeHints hints;
    /// Set for readers of 2D formats only (linear readers binarise line by line).
    bool binarizesItself = false;
    /// `hints` for an image this reader binarised itself: zxing-cpp takes it as it is.
    ZXing::DecodeHints binaryHints;
    LocalAverageBinarizer binarizer;
    std::vector<std::string> texts;  // backs the `text` pointers handed out by the last read
};

static void write_error(char *error, size_t capacity, const char *message) {
    if (error == nullptr || capacity == 0) return;
    std::strncpy(error, message, capacity - 1);
    error[capacity - 1] = '\0';
}

sl_barcode_reader *sl_barcode_reader_create(int formats, int options, char *error, size_t error_capacity) {
    try {
        auto reader = new sl_barcode_reader();
        const auto chosen = ZXing::BarcodeFormats(static_cast<ZXing::BarcodeFormat>(formats));
        reader->hints.setFormats(chosen);
        const bool tryHarder = options & SL_BARCODE_TRY_HARDER;
        reader->hints.setTryHarder(tryHarder);
        reader->hints.setTryRotate(tryHarder);
        reader->binarizesItself = formats != 0 && !(options & SL_BARCODE_ZXING_BINARIZER) &&
                                  (chosen & ZXing::BarcodeFormat::LinearCodes).empty();
        reader->binaryHints = reader->hints;
        reader->binaryHints.setBinarizer(ZXing::Binarizer::BoolCast);
        return reader;
    } catch (const std::exception &e) {
        write_error(error, error_capacity, e.what());
        return nullptr;
    }
}

void sl_barcode_reader_destroy(sl_barcode_reader *reader) { delete reader; }

int sl_barcode_reader_read(sl_barcode_reader *reader, const uint8_t *luma, int width, int height,
                           ptrdiff_t bytes_per_row, sl_barcode *out, int capacity, char *error,
                           size_t error_capacity) {
    try {
        ZXing::Results results;
        if (reader->binarizesItself && LocalAverageBinarizer::handles(width, height)) {
            reader->binarizer.binarize(luma, width, height, bytes_per_row);
            results = ZXing::ReadBarcodes(
                ZXing::ImageView(reader->binarizer.binary.data(), width, height, ZXing::ImageFormat::Lum),
                reader->binaryHints);
        } else {
            ZXing::ImageView image(luma, width, height, ZXing::ImageFormat::Lum, static_cast<int>(bytes_per_row), 1);
            results = ZXing::ReadBarcodes(image, reader->hints);
        }
        reader->texts.clear();
        reader->texts.reserve(results.size());
        int count = 0;
        for (const auto &result : results) {
            if (!result.isValid()) continue;
            if (count < capacity) {
                reader->texts.push_back(result.text());
                sl_barcode &barcode = out[count];
                barcode.format = static_cast<int>(result.format());
                const auto &position = result.position();
                for (int corner = 0; corner < 4; ++corner) {
                    barcode.corners[corner * 2] = position[corner].x;
                    barcode.corners[corner * 2 + 1] = position[corner].y;
                }
                barcode.text = reader->texts.back().data();
                barcode.text_length = reader->texts.back().size();
            }
            ++count;
        }
        return count;
    } catch (const std::exception &e) {
        write_error(error, error_capacity, e.what());
        return -1;
    }
}

int sl_barcode_binarize(const uint8_t *luma, int width, int height, ptrdiff_t bytes_per_row, uint8_t *out) {
    if (!LocalAverageBinarizer::handles(width, height)) return -1;
    LocalAverageBinarizer binarizer;
    binarizer.binarize(luma, width, height, bytes_per_row);
    std::copy(binarizer.binary.begin(), binarizer.binary.end(), out);
    return 0;
}
