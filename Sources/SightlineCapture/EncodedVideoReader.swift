import CFFmpeg
import SightlineCore

/// The compressed packets of a file's H.264 video stream, demuxed with libavformat and not
/// decoded: what pass-through recording and remuxing need.
package final class EncodedVideoReader {
    /// One access unit as the container stores it.
    package struct Packet: Sendable {
        package var data: [UInt8]
        package var decodeTime: MediaTime
        package var presentationTime: MediaTime
        package var duration: MediaTime?
        package var isKeyFrame: Bool
    }

    package let url: String
    package let width: Int
    package let height: Int
    /// Ticks per second of the stream's timestamps.
    package let timescale: Int32
    /// The decoder configuration: an `avcC` record (MP4, QuickTime) or Annex B parameter sets.
    package let codecConfiguration: [UInt8]
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    private let streamIndex: Int32

    package init(url: String) throws {
        av_log_set_level(AV_LOG_FATAL)
        var context: UnsafeMutablePointer<AVFormatContext>?
        let opened = avformat_open_input(&context, url, nil, nil)
        guard opened >= 0, let context else {
            throw SightlineError.sourceUnavailable(source: url, reason: ffmpegError(opened))
        }
        format = context
        let info = avformat_find_stream_info(context, nil)
        let index = av_find_best_stream(context, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard info >= 0, index >= 0 else {
            avformat_close_input(&format)
            throw SightlineError.sourceUnavailable(source: url, reason: "no video stream")
        }
        let parameters = context.pointee.streams[Int(index)]!.pointee.codecpar!.pointee
        guard parameters.codec_id == AV_CODEC_ID_H264 else {
            avformat_close_input(&format)
            let name = String(cString: avcodec_get_name(parameters.codec_id))
            throw SightlineError.sourceUnavailable(source: url, reason: "the video is \(name), not H.264")
        }
        self.url = url
        streamIndex = index
        width = Int(parameters.width)
        height = Int(parameters.height)
        let timeBase = context.pointee.streams[Int(index)]!.pointee.time_base
        guard timeBase.num == 1, timeBase.den > 0 else {
            avformat_close_input(&format)
            throw SightlineError.sourceUnavailable(
                source: url, reason: "unsupported time base \(timeBase.num)/\(timeBase.den)")
        }
        timescale = timeBase.den
        codecConfiguration =
            parameters.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(parameters.extradata_size))) }
            ?? []
    }

    deinit {
        av_packet_free(&packet)
        avformat_close_input(&format)
    }

    /// The next video packet in decode order, or nil at the end.
    package func next() throws -> Packet? {
        guard let format, let packet else { return nil }
        while true {
            let result = av_read_frame(format, packet)
            if result == cffmpeg_averror_eof() { return nil }
            guard result >= 0 else { throw SightlineError.sourceFailed(source: url, reason: ffmpegError(result)) }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex, let data = packet.pointee.data else { continue }
            let nopts = cffmpeg_nopts()
            let dts = packet.pointee.dts != nopts ? packet.pointee.dts : packet.pointee.pts
            let pts = packet.pointee.pts != nopts ? packet.pointee.pts : dts
            return Packet(
                data: Array(UnsafeBufferPointer(start: data, count: Int(packet.pointee.size))),
                decodeTime: MediaTime(value: dts, timescale: timescale),
                presentationTime: MediaTime(value: pts, timescale: timescale),
                duration: packet.pointee.duration > 0
                    ? MediaTime(value: packet.pointee.duration, timescale: timescale) : nil,
                isKeyFrame: packet.pointee.flags & AV_PKT_FLAG_KEY != 0)
        }
    }
}
