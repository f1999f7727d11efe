#ifndef SIGHTLINE_CZXING_H
#define SIGHTLINE_CZXING_H
// A plain C API over zxing-cpp's multi-format reader. C++ exceptions never cross it:
// every entry point catches them and reports the message through `error`.
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One decoded symbol. `format` is zxing-cpp's `BarcodeFormat` bit. The corners are in
/// pixels, in the symbol's own orientation: top-left, top-right, bottom-right, bottom-left
/// (x, y pairs). `text` is UTF-8, owned by the reader, valid until its next read.
typedef struct sl_barcode {
    int format;
    int corners[8];
    const char *text;
    size_t text_length;
} sl_barcode;

typedef struct sl_barcode_reader sl_barcode_reader;

/// Reader options, or-ed together.
enum {
    /// Scan more rows and rotations: slower, finds more in poor images.
    SL_BARCODE_TRY_HARDER = 1,
    /// Leave binarisation to zxing-cpp even for 2D-only readers (to compare against ours).
    SL_BARCODE_ZXING_BINARIZER = 2,
};

/// A reader for the formats in `formats` (a mask of `BarcodeFormat` bits; 0 = all), with
/// `options` (SL_BARCODE_…).
sl_barcode_reader *sl_barcode_reader_create(int formats, int options, char *error, size_t error_capacity);
void sl_barcode_reader_destroy(sl_barcode_reader *reader);

/// Reads every symbol in an 8-bit luma image, in place (no copy). Writes at most
/// `capacity` symbols and returns how many were found, or -1 with a message in `error`.
/// Not thread-safe: use one reader per thread.
int sl_barcode_reader_read(sl_barcode_reader *reader, const uint8_t *luma, int width, int height,
                           ptrdiff_t bytes_per_row, sl_barcode *out, int capacity, char *error,
                           size_t error_capacity);

/// The binarisation a reader of 2D formats applies to an image of at least 40x40 before
/// reading it: `width` x `height` bytes of 0 (black) or 255 to `out`, tightly packed.
/// Returns 0, or -1 for a smaller image. Exposed so tests can check it pixel by pixel.
int sl_barcode_binarize(const uint8_t *luma, int width, int height, ptrdiff_t bytes_per_row, uint8_t *out);

#ifdef __cplusplus
}
#endif
#endif
