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
    /// One row of blocks' sums, kept so that measuring a frame allocates nothing.
    private var sums: [Int] = []

    package init() {}

    /// The blocks of `pixels`, in place of the ones held (their storage is reused).
    package mutating func measure(_ pixels: PixelBuffer) throws {
        let luma = try pixels.requireLumaPlane()
        (columns, rows) = (pixels.width / Self.size, pixels.height / Self.size)
        means.removeAll(keepingCapacity: true)
        means.reserveCapacity(columns * rows)
        let base = luma.baseAddress
        sums.removeAll(keepingCapacity: true)
        sums.append(contentsOf: repeatElement(0, count: columns))
        sums.withUnsafeMutableBufferPointer { sums in
            for row in 0..<rows {
                for index in sums.indices { sums[index] = 0 }
                for y in 0..<Self.size {
                    let line = base + (row * Self.size + y) * luma.bytesPerRow
                    for column in 0..<columns {
                        sums[column] &+= Self.sum(
                            of: line.loadUnaligned(fromByteOffset: column * Self.size, as: UInt64.self))
                    }
                }
                for sum in sums { means.append(UInt8(sum / (Self.size * Self.size))) }
            }
        }
    }

    /// The sum of the 8 bytes of `bytes`, without a loop: pairs added into four 16-bit
    /// lanes (at most 510 each), then the lanes into the top one by one multiplication.
    private static func sum(of bytes: UInt64) -> Int {
        let lanes: UInt64 = 0x00FF_00FF_00FF_00FF
        let pairs = (bytes & lanes) &+ ((bytes >> 8) & lanes)
        return Int((pairs &* 0x0001_0001_0001_0001) >> 48)
    }

    /// The block means summed down each column of blocks (or along each row): the profile
    /// a pan or zoom is matched on.
    package func sums(acrossColumns: Bool) -> [Int] {
        var sums = [Int](repeating: 0, count: acrossColumns ? columns : rows)
        for (index, mean) in means.enumerated() { sums[acrossColumns ? index % columns : index / columns] += Int(mean) }
        return sums
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
