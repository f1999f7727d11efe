/// Pixel layouts Sightline's sources deliver.
package enum PixelFormat: String, Sendable, Codable, CaseIterable {
    /// 8-bit luma only.
    case gray8
    /// Planar Y, U, V with chroma halved in both directions (I420, FFmpeg yuv420p).
    case yuv420p
    /// Y plane then interleaved UV at half resolution (FFmpeg nv12).
    case nv12
    /// Packed Y0 U Y1 V, 4:2:2 (FFmpeg yuyv422, V4L2 YUYV).
    case yuyv
    case rgb24
    case bgr24

    package var planeCount: Int {
        switch self {
        case .gray8, .yuyv, .rgb24, .bgr24: 1
        case .nv12: 2
        case .yuv420p: 3
        }
    }

    /// Whether plane 0 holds 8-bit luma that a detector can read in place.
    package var hasLumaPlane: Bool { self == .gray8 || self == .yuv420p || self == .nv12 }

    /// Bytes per row and rows of each tightly packed plane.
    package func planeGeometry(width: Int, height: Int) -> [(bytesPerRow: Int, rows: Int)] {
        let chromaRows = (height + 1) / 2
        switch self {
        case .gray8: return [(width, height)]
        case .yuv420p: return [(width, height), ((width + 1) / 2, chromaRows), ((width + 1) / 2, chromaRows)]
        case .nv12: return [(width, height), (((width + 1) / 2) * 2, chromaRows)]
        case .yuyv: return [(((width + 1) / 2) * 4, height)]
        case .rgb24, .bgr24: return [(width * 3, height)]
        }
    }
}

/// One plane of a pixel buffer: where its first byte is and how far apart rows are.
package struct Plane: @unchecked Sendable {
    package let baseAddress: UnsafeRawPointer
    package let bytesPerRow: Int
    package let rows: Int

    package init(baseAddress: UnsafeRawPointer, bytesPerRow: Int, rows: Int) {
        self.baseAddress = baseAddress
        self.bytesPerRow = bytesPerRow
        self.rows = rows
    }
}

/// An immutable image whose memory is kept alive by `owner` (a decoder's frame, a mapped
/// device buffer or Swift-allocated bytes). Immutable, so it may cross threads freely.
package final class PixelBuffer: @unchecked Sendable {
    package let format: PixelFormat
    package let width: Int
    package let height: Int
    package let planes: [Plane]
    private let owner: AnyObject?

    /// Wraps memory someone else owns; `owner` is retained for as long as the buffer lives.
    package init(format: PixelFormat, width: Int, height: Int, planes: [Plane], owner: AnyObject?) {
        precondition(planes.count == format.planeCount, "\(format) needs \(format.planeCount) planes")
        self.format = format
        self.width = width
        self.height = height
        self.planes = planes
        self.owner = owner
    }

    /// Allocates tightly packed planes that this buffer owns and lets `fill` write them, so
    /// a converter can write its output in place: one pointer per plane, each plane
    /// `planeGeometry` bytes per row.
    package convenience init(
        format: PixelFormat, width: Int, height: Int, fill: ([UnsafeMutableRawPointer]) throws -> Void
    ) rethrows {
        let geometry = format.planeGeometry(width: width, height: height)
        let storage = OwnedBytes(capacity: geometry.reduce(0) { $0 + $1.bytesPerRow * $1.rows })
        var bases: [UnsafeMutableRawPointer] = []
        var offset = 0
        for shape in geometry {
            bases.append(storage.pointer + offset)
            offset += shape.bytesPerRow * shape.rows
        }
        try fill(bases)
        let planes = zip(bases, geometry).map {
            Plane(baseAddress: UnsafeRawPointer($0.0), bytesPerRow: $0.1.bytesPerRow, rows: $0.1.rows)
        }
        self.init(format: format, width: width, height: height, planes: planes, owner: storage)
    }

    /// Copies tightly packed planes into memory this buffer owns.
    package convenience init(format: PixelFormat, width: Int, height: Int, packedPlanes: [[UInt8]]) {
        let geometry = format.planeGeometry(width: width, height: height)
        precondition(packedPlanes.count == geometry.count, "\(format) needs \(geometry.count) planes")
        self.init(format: format, width: width, height: height) { bases in
            for (bytes, (base, shape)) in zip(packedPlanes, zip(bases, geometry)) {
                precondition(
                    bytes.count == shape.bytesPerRow * shape.rows,
                    "plane size does not match \(format) \(width)x\(height)")
                bytes.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            }
        }
    }

    /// The luma plane, for formats that have one.
    package var lumaPlane: Plane? { format.hasLumaPlane ? planes[0] : nil }

    /// The luma plane, for a reader that needs one (detectors, the frames output).
    package func requireLumaPlane() throws -> Plane {
        guard let luma = lumaPlane else {
            throw SightlineError.detector("frames in \(format.rawValue) have no luma plane to read")
        }
        return luma
    }

    /// The bytes of plane `index`, row by row without padding.
    package func packedBytes(plane index: Int) -> [UInt8] {
        let plane = planes[index]
        let rowBytes = format.planeGeometry(width: width, height: height)[index].bytesPerRow
        var result = [UInt8]()
        result.reserveCapacity(rowBytes * plane.rows)
        for row in 0..<plane.rows {
            let start = plane.baseAddress + row * plane.bytesPerRow
            result.append(contentsOf: UnsafeRawBufferPointer(start: start, count: rowBytes))
        }
        return result
    }
}

private final class OwnedBytes {
    /// swscale's SIMD writes whole blocks of pixels and may run past the end of the last
    /// row when the width is not a multiple of the block (FFmpeg pads its own buffers alike).
    static let padding = 64
    let pointer: UnsafeMutableRawPointer
    init(capacity: Int) { pointer = .allocate(byteCount: capacity + Self.padding, alignment: 64) }
    deinit { pointer.deallocate() }
}

extension PixelBuffer {
    /// The part of the picture inside `rect` (normalised, clamped to the picture, its corners
    /// on even pixels so chroma stays aligned), sharing this buffer's memory; nil for a packed
    /// format or an empty part.
    package func cropped(to rect: NormalizedRect) -> PixelBuffer? {
        guard format == .yuv420p || format == .nv12 || format == .gray8 else { return nil }
        func start(_ value: Double, _ size: Int) -> Int {
            min(max(Int((value * Double(size)).rounded(.down)) & ~1, 0), size & ~1)
        }
        func end(_ value: Double, _ size: Int) -> Int {
            min(max((Int((value * Double(size)).rounded(.up)) + 1) & ~1, 0), size & ~1)
        }
        let (x0, y0) = (start(rect.x, width), start(rect.y, height))
        let (x1, y1) = (end(rect.x + rect.width, width), end(rect.y + rect.height, height))
        guard x1 - x0 >= 2, y1 - y0 >= 2 else { return nil }
        let cropped = planes.enumerated().map { index, plane in
            // Chroma planes are halved both ways; nv12's interleaved UV keeps two bytes a pixel pair.
            let (dx, dy) = index == 0 ? (x0, y0) : (format == .nv12 ? x0 : x0 / 2, y0 / 2)
            let rows = index == 0 ? y1 - y0 : (y1 - y0) / 2
            return Plane(
                baseAddress: plane.baseAddress + dy * plane.bytesPerRow + dx, bytesPerRow: plane.bytesPerRow, rows: rows
            )
        }
        return PixelBuffer(format: format, width: x1 - x0, height: y1 - y0, planes: cropped, owner: self)
    }
}
