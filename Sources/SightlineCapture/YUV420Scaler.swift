import CFFmpeg
import SightlineCore

/// Converts an image in another layout to yuv420p with swscale, writing straight into a new
/// `PixelBuffer`: what decoders, cameras and the encoder use for layouts the pipeline does
/// not read as they are. Not thread-safe: one owner.
final class YUV420Scaler {
    private var context: OpaquePointer?

    deinit { sws_freeContext(context) }

    /// The image whose planes and strides (up to four) are given, or nil when swscale cannot
    /// convert from `source`.
    func convert(
        planes: [UnsafePointer<UInt8>?], strides: [Int32], from source: AVPixelFormat, width: Int, height: Int
    ) -> PixelBuffer? {
        context = sws_getCachedContext(
            context, Int32(width), Int32(height), source, Int32(width), Int32(height), AV_PIX_FMT_YUV420P, SWS_BILINEAR,
            nil, nil, nil)
        guard let context else { return nil }
        var sources = Array(planes.prefix(4)) + Array(repeating: nil, count: max(0, 4 - planes.count))
        var sourceStrides = Array(strides.prefix(4)) + Array(repeating: 0, count: max(0, 4 - strides.count))
        var targetStrides =
            PixelFormat.yuv420p.planeGeometry(width: width, height: height).map { Int32($0.bytesPerRow) } + [0]
        return PixelBuffer(format: .yuv420p, width: width, height: height) { bases in
            var targets: [UnsafeMutablePointer<UInt8>?] = bases.map { $0.assumingMemoryBound(to: UInt8.self) } + [nil]
            _ = sws_scale(context, &sources, &sourceStrides, 0, Int32(height), &targets, &targetStrides)
        }
    }
}
