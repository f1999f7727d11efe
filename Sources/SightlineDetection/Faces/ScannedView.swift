import SightlineCore

/// What a frame shows that the frame scanned beside before it did not (`FullScansBeside`),
/// the camera's own motion between them taken out: the view a pan uncovered at an edge, and
/// the blocks that changed. A face a full scan of the frame finds anywhere else was in the
/// view scanned before, in the same place against it: that scan found it and tracking
/// follows it, so a scan beside need look only at these areas. Scanning them instead of the
/// whole frame is what lets a machine analyse more cameras: a still camera's frames change
/// where people move, and a pan's by a strip at one edge.
///
/// Every `scansPerWhole`th scan is whole all the same, for faces that changed too little
/// between two scans to count (a slow fade) or that tracking lost.
///
/// Used on the `full-scans` thread only.
struct ScannedView {
    /// What a scan beside must cover.
    enum Unscanned: Equatable {
        /// The whole frame: nothing to compare with, too much changed, or time for one.
        case whole
        /// Only these areas, in pixels of the frame (none when nothing changed).
        case areas([RegionTracking.Box])
    }

    /// The fraction of the frame's blocks that may change, the camera's motion taken out if
    /// more changed in place, before it is scanned whole: more is a zoom, a turn or a crowd,
    /// and areas that large cost as much as a whole scan.
    static let wholeAbove = 0.3
    /// One scan beside in this many is whole: at `--full-scan-interval 5`, a second at 30 fps.
    static let scansPerWhole = 6
    /// The farthest the view may move between two scans, in fractions of the frame's width
    /// and height (a face crossing a frame in a second moves a sixth of it in five frames).
    static let farthestShift = 0.25
    /// Areas more than this are scattered changes, scanned whole.
    static let mostAreas = 64
    /// Frames of more pixels (4K UHD's) are scanned whole every time: two integral images
    /// of a frame four times that would take 265 MB, and a stream may say any size.
    static let largestFrame = 3840 * 2160

    /// The frame scanned last, and the storage the next one is summed into.
    private var reference = IntegralImage()
    private var next = IntegralImage()
    private var scansSinceWhole = 0

    /// What a scan of `pixels` must cover; `pixels` is then the frame the next is compared with.
    mutating func unscanned(in pixels: PixelBuffer) throws -> Unscanned {
        guard try summed(pixels) else { return .whole }
        let unscanned = compare()
        adopt(whole: unscanned == .whole)
        return unscanned
    }

    /// `pixels` was scanned whole: the next scan is compared with it.
    mutating func scannedWhole(_ pixels: PixelBuffer) throws {
        if try summed(pixels) { adopt(whole: true) }
    }

    /// Sums `pixels` into `next`, unless it is larger than `largestFrame`: then nothing is
    /// kept, and false.
    private mutating func summed(_ pixels: PixelBuffer) throws -> Bool {
        guard pixels.width * pixels.height <= Self.largestFrame else {
            self = ScannedView()
            return false
        }
        try next.sum(pixels)
        return true
    }

    /// `next` becomes the frame the next scan is compared with.
    private mutating func adopt(whole: Bool) {
        scansSinceWhole = whole ? 0 : scansSinceWhole + 1
        swap(&reference, &next)
    }

    /// `next` against `reference`.
    private func compare() -> Unscanned {
        let (frame, before) = (next, reference)
        guard frame.width == before.width, frame.height == before.height, frame.width >= IntegralImage.block,
            frame.height >= IntegralImage.block, scansSinceWhole + 1 < Self.scansPerWhole
        else { return .whole }
        var blocks = frame.changedBlocks(from: before, shift: (0, 0))
        // Too much changed in place: if the camera moved, what it shows moved with it (the
        // profiles' best match), and only what it uncovered or what changed beyond that is
        // new. With less changed, something moved in a still view: a large thing moving over
        // a plain background shifts the profiles as a pan would, and it is scanned.
        if Double(blocks.changed) >= Self.wholeAbove * Double(blocks.marked.count) {
            let moved = frame.changedBlocks(from: before, shift: Self.shift(of: frame, from: before))
            if moved.changed < blocks.changed { blocks = moved }
        }
        guard blocks.changed < Int(Self.wholeAbove * Double(blocks.marked.count)) else { return .whole }
        let areas = Self.areas(of: blocks.marked, columns: frame.blockColumns, width: frame.width, height: frame.height)
        return areas.count <= Self.mostAreas ? .areas(areas) : .whole
    }

    /// How far the view moved from `before` to `frame`: the shift of the luma summed down
    /// each column, then of the luma summed along each row over the columns both show, then
    /// again of the columns over the rows both show (what a pan brings in at one edge skews
    /// the other way's sums until it is left out).
    private static func shift(of frame: IntegralImage, from before: IntegralImage) -> (x: Int, y: Int) {
        let (width, height) = (frame.width, frame.height)
        let (farthestX, farthestY) = (Int(Double(width) * farthestShift), Int(Double(height) * farthestShift))
        let all = 0..<height
        let roughX = shift(frame.columnSums(rows: all), from: before.columnSums(rows: all), farthest: farthestX)
        let columns = max(0, -roughX)..<min(width, width - roughX)
        let y = shift(
            frame.rowSums(columns: columns), from: before.rowSums(columns: columns.shifted(by: roughX)),
            farthest: farthestY)
        let rows = max(0, -y)..<min(height, height - y)
        let x = shift(
            frame.columnSums(rows: rows), from: before.columnSums(rows: rows.shifted(by: y)), farthest: farthestX)
        return (x, y)
    }

    /// The shift `s` for which `now[i]` best matches `before[i + s]` (mean absolute
    /// difference over at least half of them), the smaller one on a tie: found on the sums
    /// of every four, then to the one near that.
    static func shift(_ now: [Int], from before: [Int], farthest: Int) -> Int {
        guard now.count == before.count, !now.isEmpty else { return 0 }
        let step = 4
        let coarse = (now: quartered(now, step), before: quartered(before, step))
        let rough = step * bestShift(coarse.now, coarse.before, over: -(farthest / step)...(farthest / step))
        return bestShift(now, before, over: max(rough - step, -farthest)...min(rough + step, farthest))
    }

    private static func quartered(_ values: [Int], _ step: Int) -> [Int] {
        stride(from: 0, to: values.count - step + 1, by: step).map { values[$0..<$0 + step].reduce(0, +) }
    }

    private static func bestShift(_ now: [Int], _ before: [Int], over shifts: ClosedRange<Int>) -> Int {
        var best = (shift: 0, cost: Double.infinity)
        now.withUnsafeBufferPointer { now in
            before.withUnsafeBufferPointer { before in
                for shift in shifts {
                    let overlap = max(0, -shift)..<min(now.count, now.count - shift)
                    guard overlap.count * 2 >= now.count else { continue }
                    var total = 0
                    for index in overlap { total &+= abs(now[index] &- before[index &+ shift]) }
                    let cost = Double(total) / Double(overlap.count)
                    if cost < best.cost || (cost == best.cost && abs(shift) < abs(best.shift)) {
                        best = (shift, cost)
                    }
                }
            }
        }
        return best.shift
    }

    /// The marked blocks as boxes of pixels: in bands four blocks deep, runs of columns with
    /// a marked block, those less than four blocks apart as one (the last blocks, moved in
    /// to fit, end at the frame's edge).
    static func areas(of marked: [Bool], columns: Int, width: Int, height: Int) -> [RegionTracking.Box] {
        let (block, band, joining) = (IntegralImage.block, 4, 4)
        let rows = columns == 0 ? 0 : marked.count / columns
        var areas: [RegionTracking.Box] = []
        for top in stride(from: 0, to: rows, by: band) {
            let bottom = min(top + band, rows)
            var run: ClosedRange<Int>?
            func close() {
                guard let found = run else { return }
                areas.append(
                    RegionTracking.Box(
                        left: Double(found.lowerBound * block), top: Double(top * block),
                        right: Double(min((found.upperBound + 1) * block, width)),
                        bottom: Double(min(bottom * block, height))))
                run = nil
            }
            for column in 0..<columns where (top..<bottom).contains(where: { marked[$0 * columns + column] }) {
                if let current = run, column - current.upperBound <= joining {
                    run = current.lowerBound...column
                } else {
                    close()
                    run = column...column
                }
            }
            close()
        }
        return areas
    }
}

/// A frame's luma summed over every rectangle from its top left corner, so that any
/// rectangle's sum, a block's or a column's, is four reads. Its blocks are 8x8 (those at the
/// right and bottom edges moved in to fit wholly, so every pixel is in one).
private struct IntegralImage {
    static let block = LumaBlocks.size
    private(set) var width = 0
    private(set) var height = 0
    /// `(width + 1) * (height + 1)`, row by row; a sum wraps past 2^32 (a 4K frame's may),
    /// and a difference of sums, any rectangle's, is right all the same.
    private var sums: [UInt32] = []

    var blockColumns: Int { (width + Self.block - 1) / Self.block }
    var blockRows: Int { (height + Self.block - 1) / Self.block }

    /// Sums `pixels`' luma, in place of what this held (its storage reused).
    mutating func sum(_ pixels: PixelBuffer) throws {
        let luma = try pixels.requireLumaPlane()
        (width, height) = (pixels.width, pixels.height)
        let stride = width + 1
        if sums.count != stride * (height + 1) { sums = [UInt32](repeating: 0, count: stride * (height + 1)) }
        let base = luma.baseAddress.assumingMemoryBound(to: UInt8.self)
        // Each row's running sum first, then the row above added to it: the second loop
        // has no step waiting for the one before, so it goes several pixels at a time.
        sums.withUnsafeMutableBufferPointer { sums in
            for y in 0..<height {
                let line = base + y * luma.bytesPerRow
                let here = sums.baseAddress! + (y + 1) * stride + 1
                var row: UInt32 = 0
                for x in 0..<width {
                    row &+= UInt32(line[x])
                    here[x] = row
                }
                let above = here - stride
                for x in 0..<width { here[x] &+= above[x] }
            }
        }
    }

    /// The sum over columns `left..<right` and rows `top..<bottom`.
    func sum(left: Int, top: Int, right: Int, bottom: Int) -> Int {
        let stride = width + 1
        return Int(
            sums[bottom * stride + right] &- sums[top * stride + right] &- sums[bottom * stride + left]
                &+ sums[top * stride + left])
    }

    /// Each column's pixels in `rows`, summed.
    func columnSums(rows: Range<Int>) -> [Int] {
        (0..<width).map { sum(left: $0, top: rows.lowerBound, right: $0 + 1, bottom: rows.upperBound) }
    }

    /// Each row's pixels in `columns`, summed.
    func rowSums(columns: Range<Int>) -> [Int] {
        (0..<height).map { sum(left: columns.lowerBound, top: $0, right: columns.upperBound, bottom: $0 + 1) }
    }

    /// The sum of the block whose top left pixel is at (x, y).
    func blockSum(x: Int, y: Int) -> Int { sum(left: x, top: y, right: x + Self.block, bottom: y + Self.block) }

    /// The shifts by a pixel either way, in either direction or both.
    static let nudges = [(-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)].map {
        (x: $0.0, y: $0.1)
    }

    /// Block by block: whether each of this frame's blocks shows something `before` did not
    /// at the place `shift` moves it to (uncovered when that is not wholly in `before`, or
    /// differing in mean by more than region tracking's block threshold), and how many of
    /// those in view differ.
    func changedBlocks(from before: IntegralImage, shift: (x: Int, y: Int)) -> (marked: [Bool], changed: Int) {
        let (columns, rows, block) = (blockColumns, blockRows, Self.block)
        let threshold = RegionTracking.blockThreshold * block * block
        var marked = [Bool](repeating: false, count: columns * rows)
        var changed = 0
        for blockRow in 0..<rows {
            let y = min(blockRow * block, height - block)
            for blockColumn in 0..<columns {
                let x = min(blockColumn * block, width - block)
                let (fromX, fromY) = (x + shift.x, y + shift.y)
                guard fromX >= 0, fromY >= 0, fromX + block <= before.width, fromY + block <= before.height else {
                    marked[blockRow * columns + blockColumn] = true
                    continue
                }
                let sum = blockSum(x: x, y: y)
                guard abs(sum - before.blockSum(x: fromX, y: fromY)) > threshold else { continue }
                // A block across a sharp edge differs by more when the view moved by a
                // fraction of a pixel: it is unchanged if a pixel's shift explains it.
                let nudged = Self.nudges.contains { nudge in
                    let (nearX, nearY) = (fromX + nudge.x, fromY + nudge.y)
                    return nearX >= 0 && nearY >= 0 && nearX + block <= before.width && nearY + block <= before.height
                        && abs(sum - before.blockSum(x: nearX, y: nearY)) <= threshold
                }
                if !nudged {
                    marked[blockRow * columns + blockColumn] = true
                    changed += 1
                }
            }
        }
        return (marked, changed)
    }
}

extension Range<Int> {
    fileprivate func shifted(by offset: Int) -> Range<Int> { (lowerBound + offset)..<(upperBound + offset) }
}
