import SightlineCore

/// A frame's luma plane averaged over 8x8 blocks: what the motion gate and region tracking
/// compare from frame to frame, cheaply (1/64 of the pixels) and insensitive to the noise
/// of single pixels. Blocks cut by the frame's right or bottom edge are left out.
package struct LumaBlocks: Sendable, Equatable {
    package static let size = 8
    package private(set) var columns = 0
    package private(set) var rows = 0
    /// Row by row, `columns` a row.
    package private(set) var means: [UInt8] = []

    package init() {}

    /// The blocks of `pixels`, in place of the ones held (their storage is reused).
    package mutating func measure(_ pixels: PixelBuffer) throws {
        let luma = try pixels.requireLumaPlane()
        (columns, rows) = (pixels.width / Self.size, pixels.height / Self.size)
        means.removeAll(keepingCapacity: true)
        means.reserveCapacity(columns * rows)
        let (base, stride) = (luma.baseAddress, luma.bytesPerRow)
        for row in 0..<rows {
            let top = base + row * Self.size * stride
            for column in 0..<columns {
                means.append(UInt8(Self.sum(of: top + column * Self.size, stride: stride) / (Self.size * Self.size)))
            }
        }
    }

    /// The sum of the 8x8 bytes from `top`, rows `stride` apart, without a loop over bytes:
    /// each row's bytes in even and odd places added into four 16-bit lanes (at most 4,080
    /// each after 8 rows), then the lanes into the top one by one multiplication.
    private static func sum(of top: UnsafeRawPointer, stride: Int) -> Int {
        let lanes: UInt64 = 0x00FF_00FF_00FF_00FF
        var pairs: UInt64 = 0
        for y in 0..<size {
            let bytes = top.loadUnaligned(fromByteOffset: y * stride, as: UInt64.self)
            pairs &+= (bytes & lanes) &+ ((bytes >> 8) & lanes)
        }
        return Int((pairs &* 0x0001_0001_0001_0001) >> 48)
    }

    /// Whether both were measured on frames of the same size (and anything at all).
    package func comparable(with other: LumaBlocks) -> Bool {
        columns == other.columns && rows == other.rows && !means.isEmpty
    }

    /// Block by block, whether each differs from the same block of `other` by more than
    /// `threshold`, into `marks` (its storage reused); how many do. Both must be comparable.
    package func changes(from other: LumaBlocks, threshold: Int, into marks: inout [Bool]) -> Int {
        precondition(comparable(with: other), "blocks of frames of different sizes")
        marks.removeAll(keepingCapacity: true)
        marks.append(contentsOf: repeatElement(false, count: means.count))
        var count = 0
        means.withUnsafeBufferPointer { now in
            other.means.withUnsafeBufferPointer { before in
                marks.withUnsafeMutableBufferPointer { marks in
                    for index in 0..<now.count {
                        let differs = abs(Int(now[index]) &- Int(before[index])) > threshold
                        marks[index] = differs
                        count &+= differs ? 1 : 0
                    }
                }
            }
        }
        return count
    }
}
