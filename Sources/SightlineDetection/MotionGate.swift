import SightlineCore

/// Says whether anything moved in a frame since the last frame it let through, as a motion
/// detector in front of an object detector does (Frigate's, for one): the luma plane is
/// averaged over 8x8 blocks, and a frame moved when enough blocks changed by more than a
/// few grey levels. Comparing with the last frame let through, not the one before, lets
/// slow changes add up until they count.
///
/// Not thread-safe: used on the detector's queue.
package final class MotionGate {
    /// Grey levels a block's mean must change by to count as changed.
    package var blockThreshold: Int
    /// The fraction of blocks that must change for the frame to have moved.
    package var movedFraction: Double
    private var reference: [UInt8] = []
    private var current: [UInt8] = []
    private var size = (width: 0, height: 0)
    private static let block = 8

    package init(blockThreshold: Int = 10, movedFraction: Double = 0.002) {
        self.blockThreshold = blockThreshold
        self.movedFraction = movedFraction
    }

    /// True when the frame moved (or is the first, or a new size): the caller analyses it, and
    /// it becomes the reference. False when it is still.
    package func moved(_ pixels: PixelBuffer) throws -> Bool {
        let luma = try pixels.requireLumaPlane()
        let (columns, rows) = (pixels.width / Self.block, pixels.height / Self.block)
        current.removeAll(keepingCapacity: true)
        current.reserveCapacity(columns * rows)
        let base = luma.baseAddress.assumingMemoryBound(to: UInt8.self)
        for row in 0..<rows {
            for column in 0..<columns {
                var sum = 0
                for y in 0..<Self.block {
                    let line = base + (row * Self.block + y) * luma.bytesPerRow + column * Self.block
                    for x in 0..<Self.block { sum += Int(line[x]) }
                }
                current.append(UInt8(sum / (Self.block * Self.block)))
            }
        }
        guard size == (columns, rows), reference.count == current.count else {
            size = (columns, rows)
            swap(&reference, &current)
            return true
        }
        var changed = 0
        for index in current.indices where abs(Int(current[index]) - Int(reference[index])) > blockThreshold {
            changed += 1
        }
        guard Double(changed) >= movedFraction * Double(max(current.count, 1)) && changed > 0 else { return false }
        swap(&reference, &current)
        return true
    }
}
