#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>
#include <libavutil/avutil.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libavutil/error.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavcodec/bsf.h>
#include <libswresample/swresample.h>
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

// Audio: the pointer casts Swift makes hard, kept to one line each.

// A resampler from `in_layout` (or, when NULL or unspecified, the default layout of
// `in_channels`) to `out_channels` of `out_format` at `out_rate`; NULL when FFmpeg refuses.
static inline SwrContext *cffmpeg_resampler(const AVChannelLayout *in_layout, int in_channels,
                                            enum AVSampleFormat in_format, int in_rate, int out_channels,
                                            enum AVSampleFormat out_format, int out_rate) {
    AVChannelLayout in = {0}, out = {0};
    if (in_layout && in_layout->order != AV_CHANNEL_ORDER_UNSPEC) av_channel_layout_copy(&in, in_layout);
    else av_channel_layout_default(&in, in_layout ? in_layout->nb_channels : in_channels);
    av_channel_layout_default(&out, out_channels);
    SwrContext *swr = NULL;
    int result = swr_alloc_set_opts2(&swr, &out, out_format, out_rate, &in, in_format, in_rate, 0, NULL);
    av_channel_layout_uninit(&in);
    av_channel_layout_uninit(&out);
    if (result < 0 || swr_init(swr) < 0) { swr_free(&swr); return NULL; }
    return swr;
}

static inline int cffmpeg_channel_count(const AVChannelLayout *layout) { return layout->nb_channels; }

static inline void cffmpeg_set_channels(AVChannelLayout *layout, int channels) {
    av_channel_layout_uninit(layout);
    av_channel_layout_default(layout, channels);
}

// Converts `in` (a decoded frame; NULL drains the resampler) into `out`'s buffers.
static inline int cffmpeg_resample_frame(SwrContext *swr, AVFrame *out, int capacity, const AVFrame *in) {
    return swr_convert(swr, out->extended_data, capacity, in ? (const uint8_t **)in->extended_data : NULL,
                       in ? in->nb_samples : 0);
}

// Converts `count` interleaved samples at `in` (one plane) into `out`'s buffers.
static inline int cffmpeg_resample_interleaved(SwrContext *swr, AVFrame *out, int capacity, const void *in,
                                               int count) {
    const uint8_t *planes[1] = {in};
    return swr_convert(swr, out->extended_data, capacity, planes, count);
}

static inline int cffmpeg_fifo_write(AVAudioFifo *fifo, const AVFrame *frame, int samples) {
    return av_audio_fifo_write(fifo, (void **)frame->extended_data, samples);
}

static inline int cffmpeg_fifo_read(AVAudioFifo *fifo, AVFrame *frame, int samples) {
    return av_audio_fifo_read(fifo, (void **)frame->extended_data, samples);
}
