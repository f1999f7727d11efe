import CFFmpeg
import SightlineCore

/// Converts and scales images with swscale, writing straight into a new `PixelBuffer`:
/// decoders, cameras and the encoder turn layouts the pipeline does not read as they are
/// into yuv420p, and the frames output scales frames down. Not thread-safe: one owner.
final class PixelScaler {
    private var context: OpaquePointer?

    deinit { sws_freeContext(context) }

    /// The `width` x `height` image whose planes and strides (up to four) are given, as a
    /// new `target` image of `size` (default: the same). `swscaleTarget` is what swscale
    /// writes when it differs from `target` in meaning, not layout (yuvj420p: full-range
    /// yuv420p). nil when swscale cannot convert from `source`.
    func convert(
        planes: [UnsafePointer<UInt8>?], strides: [Int32], from source: AVPixelFormat, width: Int, height: Int,
        to target: PixelFormat = .yuv420p, swscaleTarget: AVPixelFormat? = nil,
        size: (width: Int, height: Int)? = nil, algorithm: Int32 = SWS_BILINEAR
    ) -> PixelBuffer? {
        let (targetWidth, targetHeight) = size ?? (width, height)
        context = sws_getCachedContext(
            context, Int32(width), Int32(height), source, Int32(targetWidth), Int32(targetHeight),
            swscaleTarget ?? target.avPixelFormat, algorithm, nil, nil, nil)
        guard let context else { return nil }
        var sources = Array(planes.prefix(4)) + Array(repeating: nil, count: max(0, 4 - planes.count))
        var sourceStrides = Array(strides.prefix(4)) + Array(repeating: 0, count: max(0, 4 - strides.count))
        let geometry = target.planeGeometry(width: targetWidth, height: targetHeight)
        var targetStrides = geometry.map { Int32($0.bytesPerRow) } + Array(repeating: 0, count: 4 - geometry.count)
        return PixelBuffer(format: target, width: targetWidth, height: targetHeight) { bases in
            var targets: [UnsafeMutablePointer<UInt8>?] = bases.map { $0.assumingMemoryBound(to: UInt8.self) }
            targets += Array(repeating: nil, count: 4 - targets.count)
            _ = sws_scale(context, &sources, &sourceStrides, 0, Int32(height), &targets, &targetStrides)
        }
    }

    /// A decoded frame (any layout swscale reads) as a new yuv420p image of the same size.
    func convert(_ frame: UnsafePointer<AVFrame>) -> PixelBuffer? {
        let planes = withUnsafeBytes(of: frame.pointee.data) { Array($0.bindMemory(to: UnsafePointer<UInt8>?.self)) }
        let strides = withUnsafeBytes(of: frame.pointee.linesize) { Array($0.bindMemory(to: Int32.self)) }
        return convert(
            planes: planes, strides: strides, from: AVPixelFormat(frame.pointee.format),
            width: Int(frame.pointee.width), height: Int(frame.pointee.height))
    }

    /// The same, for planes of a `PixelBuffer`.
    func convert(
        _ planes: [Plane], from source: AVPixelFormat, width: Int, height: Int, to target: PixelFormat = .yuv420p,
        swscaleTarget: AVPixelFormat? = nil, size: (width: Int, height: Int)? = nil, algorithm: Int32 = SWS_BILINEAR
    ) -> PixelBuffer? {
        convert(
            planes: planes.map { $0.baseAddress.assumingMemoryBound(to: UInt8.self) },
            strides: planes.map { Int32($0.bytesPerRow) }, from: source, width: width, height: height, to: target,
            swscaleTarget: swscaleTarget, size: size, algorithm: algorithm)
    }
}

extension UnsafeMutablePointer where Pointee == AVFrame {
    /// Points the frame's data and line sizes at `planes`, which it does not own: an encoder
    /// copies what it keeps.
    func attach(_ planes: [Plane]) {
        withUnsafeMutableBytes(of: &pointee.data) { data in
            for (index, plane) in planes.enumerated() {
                data.storeBytes(
                    of: UnsafeMutablePointer<UInt8>(mutating: plane.baseAddress.assumingMemoryBound(to: UInt8.self)),
                    toByteOffset: index * MemoryLayout<UnsafeMutablePointer<UInt8>?>.stride,
                    as: UnsafeMutablePointer<UInt8>?.self)
            }
        }
        withUnsafeMutableBytes(of: &pointee.linesize) { strides in
            for (index, plane) in planes.enumerated() {
                strides.storeBytes(of: Int32(plane.bytesPerRow), toByteOffset: index * 4, as: Int32.self)
            }
        }
    }
}

extension PixelFormat {
    /// The same layout as FFmpeg names it.
    var avPixelFormat: AVPixelFormat {
        switch self {
        case .gray8: AV_PIX_FMT_GRAY8
        case .nv12: AV_PIX_FMT_NV12
        case .yuyv: AV_PIX_FMT_YUYV422
        case .rgb24: AV_PIX_FMT_RGB24
        case .bgr24: AV_PIX_FMT_BGR24
        case .yuv420p: AV_PIX_FMT_YUV420P
        }
    }
}

extension PixelBuffer {
    /// The same picture in another layout (swscale, BT.601, same size), for readers that
    /// want one the frame does not have: face recognition reads rgb24. nil when swscale
    /// cannot convert.
    package func converted(to target: PixelFormat) -> PixelBuffer? {
        if format == target { return self }
        return PixelScaler().convert(planes, from: format.avPixelFormat, width: width, height: height, to: target)
    }
}
