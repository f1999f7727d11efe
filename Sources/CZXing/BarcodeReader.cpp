#include "CZXing.h"

#define ZX_USE_UTF8 1  // text() as UTF-8 std::string, the API zxing-cpp moves to
#include <ZXing/ReadBarcode.h>

#include <cstring>
#include <exception>
#include <string>
#include <vector>

struct sl_barcode_reader {
    ZXing::DecodeHints hints;
    std::vector<std::string> texts;  // backs the `text` pointers handed out by the last read
};

static void write_error(char *error, size_t capacity, const char *message) {
    if (error == nullptr || capacity == 0) return;
    std::strncpy(error, message, capacity - 1);
    error[capacity - 1] = '\0';
}

sl_barcode_reader *sl_barcode_reader_create(int formats, int try_harder, char *error, size_t error_capacity) {
    try {
        auto reader = new sl_barcode_reader();
        reader->hints.setFormats(ZXing::BarcodeFormats(static_cast<ZXing::BarcodeFormat>(formats)));
        reader->hints.setTryHarder(try_harder != 0);
        reader->hints.setTryRotate(try_harder != 0);
        reader->hints.setTryDownscale(true);
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
        ZXing::ImageView image(luma, width, height, ZXing::ImageFormat::Lum, static_cast<int>(bytes_per_row), 1);
        auto results = ZXing::ReadBarcodes(image, reader->hints);
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
