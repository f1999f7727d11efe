import SightlineCore

/// Says whether anything moved in a frame since the last frame it let through, as a motion
/// detector in front of an object detector does (Frigate's, for one): a frame moved when
/// enough of its 8x8 blocks (`LumaBlocks`) changed by more than a few grey levels. Comparing
/// with the last frame let through, not the one before, lets slow changes add up until
/// they count.
///
/// Not thread-safe: used on the detector's queue.
package final class MotionGate {
    /// Grey levels a block's mean must change by to count as changed.
    package var blockThreshold: Int
    /// The fraction of blocks that must change for the frame to have moved.
    package var movedFraction: Double
    private var reference = LumaBlocks()
    /// Which blocks changed, kept so that comparing allocates nothing.
    private var marks: [Bool] = []

    package init(blockThreshold: Int = 10, movedFraction: Double = 0.002) {
        self.blockThreshold = blockThreshold
        self.movedFraction = movedFraction
    }

    /// True when the frame of these blocks moved (or is the first, or a new size): the caller
    /// analyses it, and it becomes the reference. False when it is still.
    package func moved(_ blocks: LumaBlocks) -> Bool {
        guard blocks.comparable(with: reference) else {
            reference = blocks
            return true
        }
        let changed = blocks.changes(from: reference, threshold: blockThreshold, into: &marks)
        guard Double(changed) >= movedFraction * Double(blocks.means.count) && changed > 0 else { return false }
        reference = blocks
        return true
    }
}
