#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>
#include <libavutil/avutil.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libavutil/error.h>
#include <string.h>

// FFmpeg's error codes are macros Swift cannot import.
static inline int cffmpeg_averror_eof(void) { return AVERROR_EOF; }
static inline int cffmpeg_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int cffmpeg_averror_exit(void) { return AVERROR_EXIT; }
static inline int64_t cffmpeg_nopts(void) { return AV_NOPTS_VALUE; }

// The stream's display matrix (QuickTime's tkhd layout, 16.16 and 2.30 fixed point), if it
// has one: 1 and the nine values in `out`, else 0.
static inline int cffmpeg_display_matrix(const AVStream *stream, int32_t out[9]) {
    size_t size = 0;
    const uint8_t *data = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (!data || size < 9 * sizeof(int32_t)) return 0;
    memcpy(out, data, 9 * sizeof(int32_t));
    return 1;
}
