import SightlineCore

/// Where a tracking detector looks between its full scans (`FaceDetector.detectTracking`),
/// from the faces it found before and from what changed since the frame before:
/// - around each tracked face, where its motion so far carries it, at the sizes it grows or
///   shrinks to (and one pyramid level either side);
/// - along the frame's edges where something changed, at every size the detector finds, for
///   faces that enter: dlib finds a face once it is (nearly) wholly in, so a band as deep as
///   that face is wide, and as far again as it moves in a frame, holds it;
/// - when most of the frame changed at once: a zoom (`ViewZoom`) moves and scales the
///   tracked faces with the view, and brings something in along the edges where the view
///   now reaches further; anything else (a cut, a camera turned) is scanned whole.
///
/// Not thread-safe: belongs to its detector.
struct RegionTracking {
    struct Tracked {
        var face: FaceDetection
        /// Pixels per frame the box's centre and size moved by between its last two sightings.
        var velocity = (x: 0.0, y: 0.0, size: 0.0)
        /// Frames since it was last found.
        var missed = 0
        /// Whether it was found twice in a row, so that `velocity` is measured, not assumed.
        var moving = false
        /// False for a face a full scan made beside found some frames ago (`add`) until it is
        /// found again: one not found at once is gone or was never there, and is let go.
        var confirmed = true

        /// The box `frames` frames after its last sighting, its motion kept up; half its size
        /// at the smallest.
        func predicted(frames: Int) -> (box: Box, size: Double) {
            let box = Box(face)
            let k = Double(frames)
            let size = max(box.size / 2, box.size + velocity.size * k)
            return (box.scaled(size / box.size).moved(x: velocity.x * k, y: velocity.y * k), size)
        }
    }

    /// A box in pixels, in floating point for prediction.
    struct Box: Equatable {
        var left, top, right, bottom: Double
        init(left: Double, top: Double, right: Double, bottom: Double) {
            (self.left, self.top, self.right, self.bottom) = (left, top, right, bottom)
        }
        init(_ face: FaceDetection) {
            self.init(
                left: Double(face.left), top: Double(face.top), right: Double(face.right + 1),
                bottom: Double(face.bottom + 1))
        }
        var size: Double { max(right - left, bottom - top) }
        var center: (x: Double, y: Double) { ((left + right) / 2, (top + bottom) / 2) }
        func moved(x: Double, y: Double) -> Box {
            Box(left: left + x, top: top + y, right: right + x, bottom: bottom + y)
        }
        func scaled(_ factor: Double) -> Box {
            let (c, w, h) = (center, (right - left) * factor / 2, (bottom - top) * factor / 2)
            return Box(left: c.x - w, top: c.y - h, right: c.x + w, bottom: c.y + h)
        }
        func union(_ other: Box) -> Box {
            Box(
                left: min(left, other.left), top: min(top, other.top), right: max(right, other.right),
                bottom: max(bottom, other.bottom))
        }
        func grown(by margin: Double) -> Box {
            Box(left: left - margin, top: top - margin, right: right + margin, bottom: bottom + margin)
        }
    }

    /// The fraction of a frame's blocks that must change at once for it to be scanned whole.
    static let sceneChange = 0.5
    /// The fraction of blocks changed at once above which the camera, not something in its
    /// view, moved.
    static let cameraMoving = 0.15
    /// Grey levels a block's mean must change by between two frames to count (as the motion
    /// gate's): camera noise, averaged over a block, stays well below.
    static let blockThreshold = 10
    /// How far around a face seen once to look, in its widths: as far as a face crossing a
    /// 1280-pixel frame in a second moves in a frame.
    static let unmeasuredReach = 0.75
    /// How long a face not found is looked for where it went (behind another, say).
    static let hiddenFrames = 30

    let fullScanInterval: Int
    private(set) var tracked: [Tracked] = []
    /// The blocks of the frame analysed before, and which of the current frame's changed.
    private var previous = LumaBlocks()
    private var changed: [Bool] = []
    /// Per edge, along it block by block: whether the blocks at the edge itself changed in
    /// this frame or the one before. Something enters across the edge; a thing moving
    /// beside it, clear of it, needs no band.
    private var touched: [[Bool]] = Array(repeating: [], count: Edge.allCases.count)
    private var touchedBefore: [[Bool]] = Array(repeating: [], count: Edge.allCases.count)
    /// Whether the camera held still between the frames compared: few enough blocks changed
    /// that what changed along the edges is something entering, not the whole view moving
    /// (a pan brings something in along every edge, and bands along all four at every size
    /// cost as much as a full scan; the tracked faces are followed as ever).
    private var cameraStill = false
    /// While the camera moves, when measured (`compare`): how far the view moved since the
    /// frame before, in pixels (`now[i]` shows what `before[i + shift]` did). What the pan
    /// brings in enters at the edges it moves away from.
    private var viewShift: (x: Int, y: Int)?
    /// When most of the view changed since the frame before and a zoom explains it: which.
    private(set) var viewZoom: ViewZoom?

    init(fullScanInterval: Int) { self.fullScanInterval = fullScanInterval }

    /// Compares the frame about to be analysed with the one before and keeps which blocks
    /// changed; true when most did and no zoom explains it (scan it whole). `blocks` is left
    /// holding the frame before (its storage reused for the next frame's). `measuringPan`: if
    /// the camera moved, how far is measured, for bands along the edges the view comes in at.
    mutating func compare(_ blocks: inout LumaBlocks, measuringPan: Bool = false) -> Bool {
        var count = 0
        if blocks.comparable(with: previous) {
            count = blocks.changes(from: previous, threshold: Self.blockThreshold, into: &changed)
        } else {
            changed.removeAll(keepingCapacity: true)
        }
        swap(&previous, &blocks)
        swap(&touched, &touchedBefore)
        for (index, edge) in Edge.allCases.enumerated() { touched[index] = touches(edge) }
        let fraction = changed.isEmpty ? 1 : Double(count) / Double(changed.count)
        cameraStill = fraction < Self.cameraMoving
        let panning = measuringPan && !cameraStill && fraction < Self.sceneChange && !changed.isEmpty
        viewShift = panning ? Self.shift(of: previous, from: blocks) : nil
        let viewChanged = !changed.isEmpty && fraction >= Self.sceneChange
        viewZoom = viewChanged ? ViewZoom.measure(previous, from: blocks, near: viewZoom) : nil
        return viewChanged && viewZoom == nil
    }

    /// The regions to scan in a frame of this size between full scans, and whether they
    /// include bands along a pan's leading edges. `levelSizes`: the detector's box width at
    /// each pyramid level; `reach`: how far (pixels) a face of a size may move in one frame.
    func regions(width: Int, height: Int, levelSizes: [Double], reach: (Double) -> Double) -> (
        regions: [FaceDetector.Region], alongPan: Bool
    ) {
        var regions = tracked.map { face -> FaceDetector.Region in
            let last = Box(face.face)
            var (predicted, size) = face.predicted(frames: face.missed + 1)
            var sizes = min(last.size, size)...max(last.size, size)
            if let viewZoom {
                // Where the view took it, and where its own motion would have.
                let placed = viewZoom.placed(last)
                predicted = predicted.union(placed)
                sizes = min(sizes.lowerBound, placed.size)...max(sizes.upperBound, placed.size)
                size = sizes.upperBound
            }
            let shift = (predicted.center.x - last.center.x, predicted.center.y - last.center.y)
            // Until its motion is measured a face may already be moving fast: look further.
            let margin =
                face.moving
                ? reach(max(last.size, size)) + (shift.0 * shift.0 + shift.1 * shift.1).squareRoot() / 2
                : max(reach(last.size), last.size * Self.unmeasuredReach)
            return FaceDetector.Region(
                area: last.union(predicted).grown(by: margin), sizes: sizes,
                neighbourLevels: true)
        }
        guard cameraStill else {
            let entering = viewZoom?.uncovered(width: width, height: height) ?? panEdges
            let edges = bands(entering: entering, width: width, height: height, levelSizes: levelSizes, reach: reach)
            return (regions + edges, viewZoom == nil && !edges.isEmpty)
        }
        // What changed where a tracked face is looked for already is that face moving.
        let searched = regions.map(\.area)
        for size in levelSizes {
            let depth = size + reach(size)
            for edge in Edge.allCases {
                for run in changedRuns(
                    along: edge, depth: depth, joining: Int(size / 2), outside: searched, width: width, height: height)
                where Double(run.count) * 2 + Double(2 * LumaBlocks.size) >= size {
                    regions.append(
                        FaceDetector.Region(
                            area: edge.band(
                                depth: depth, extent: run, overhang: size / 2, width: width, height: height),
                            sizes: size...size, neighbourLevels: false))
                }
            }
        }
        return (regions, false)
    }

    /// While the camera pans (and `viewShift` was measured): the edges the view comes in
    /// at, and by how many pixels.
    private var panEdges: [(edge: Edge, by: Double)] {
        guard let shift = viewShift else { return [] }
        return [
            (shift.x > 0 ? .right : .left, Double(abs(shift.x))),
            (shift.y > 0 ? .bottom : .top, Double(abs(shift.y))),
        ]
    }

    /// Along each edge the view comes in at (by more than nothing), over its whole length, a
    /// band at every level as deep as that level's face is wide, plus a frame's motion of
    /// its own and how far the view came in. dlib finds a face once it is all but wholly
    /// in, so one that came in with this frame lies in it.
    private func bands(
        entering: [(edge: Edge, by: Double)], width: Int, height: Int, levelSizes: [Double],
        reach: (Double) -> Double
    ) -> [FaceDetector.Region] {
        levelSizes.flatMap { size in
            entering.filter { $0.by > 0 }.map { edge, by in
                let along = edge == .left || edge == .right ? height : width
                return FaceDetector.Region(
                    area: edge.band(
                        depth: size + reach(size) + by, extent: 0...(along - 1), overhang: size / 2,
                        width: width, height: height),
                    sizes: size...size, neighbourLevels: false)
            }
        }
    }

    /// How far the view moved from `before` to `now`, in pixels: the shift of the block means
    /// summed down each column, and along each row (`ScannedView.shift`), spread to pixels
    /// between the blocks' centres (a pan of a few pixels a frame moves no whole block).
    static func shift(of now: LumaBlocks, from before: LumaBlocks) -> (x: Int, y: Int) {
        (
            ScannedView.shift(
                profile(of: now, acrossColumns: true), from: profile(of: before, acrossColumns: true),
                farthest: now.columns * LumaBlocks.size / 4),
            ScannedView.shift(
                profile(of: now, acrossColumns: false), from: profile(of: before, acrossColumns: false),
                farthest: now.rows * LumaBlocks.size / 4)
        )
    }

    /// The block means summed down each column of blocks (or along each row), one value a
    /// pixel, each between the two nearest blocks' centres by how near it lies to each.
    static func profile(of blocks: LumaBlocks, acrossColumns: Bool) -> [Int] {
        let count = acrossColumns ? blocks.columns : blocks.rows
        guard count > 0 else { return [] }
        let sums = blocks.sums(acrossColumns: acrossColumns)
        let block = LumaBlocks.size
        return (0..<(count * block)).map { pixel in
            let at = max(0, pixel - block / 2)
            let (index, part) = (min(at / block, count - 1), at % block)
            return sums[index] * (block - part) + sums[min(index + 1, count - 1)] * part
        }
    }

    /// The frame's four edges, and the band along each.
    enum Edge: CaseIterable {
        case left, right, top, bottom

        /// `depth` pixels in from the edge, along it over `extent` and `overhang` either side,
        /// and `overhang` beyond it (dlib's boxes may hang over the frame's edges).
        func band(depth: Double, extent: ClosedRange<Int>, overhang: Double, width: Int, height: Int) -> Box {
            let (from, to) = (Double(extent.lowerBound) - overhang, Double(extent.upperBound) + overhang)
            switch self {
            case .left: return Box(left: -overhang, top: from, right: depth, bottom: to)
            case .right: return Box(left: Double(width) - depth, top: from, right: Double(width) + overhang, bottom: to)
            case .top: return Box(left: from, top: -overhang, right: to, bottom: depth)
            case .bottom:
                return Box(left: from, top: Double(height) - depth, right: to, bottom: Double(height) + overhang)
            }
        }
    }

    /// Block by block along `edge`: whether one of the two blocks nearest it changed.
    private func touches(_ edge: Edge) -> [Bool] {
        let (columns, rows) = (previous.columns, previous.rows)
        guard !changed.isEmpty, columns >= 2, rows >= 2 else { return [] }
        let vertical = edge == .left || edge == .right
        let outermost =
            [Edge.left, .top].contains(edge) ? [0, 1] : vertical ? [columns - 1, columns - 2] : [rows - 1, rows - 2]
        return (0..<(vertical ? rows : columns)).map { along in
            outermost.contains { changed[vertical ? along * columns + $0 : $0 * columns + along] }
        }
    }

    /// Whether the blocks along `edge` over `pixels` changed at the edge itself now or in the
    /// frame before.
    private func touched(_ edge: Edge, over pixels: ClosedRange<Int>) -> Bool {
        let index = Edge.allCases.firstIndex(of: edge)!
        let blocks = (pixels.lowerBound / LumaBlocks.size)...(pixels.upperBound / LumaBlocks.size)
        return blocks.contains { along in
            [touched[index], touchedBefore[index]].contains { along < $0.count && $0[along] }
        }
    }

    /// The stretches of pixels along `edge` where blocks within `depth` of it and outside
    /// `searched` changed, those less than `joining` pixels apart as one, that reach the edge.
    private func changedRuns(
        along edge: Edge, depth: Double, joining: Int, outside searched: [Box], width: Int, height: Int
    ) -> [ClosedRange<Int>] {
        let (columns, rows, block) = (previous.columns, previous.rows, LumaBlocks.size)
        let deep = Int((depth / Double(block)).rounded(.up))
        let across: Range<Int>
        switch edge {
        case .left: across = 0..<min(deep, columns)
        case .right: across = max(0, (width - Int(depth)) / block)..<columns
        case .top: across = 0..<min(deep, rows)
        case .bottom: across = max(0, (height - Int(depth)) / block)..<rows
        }
        let vertical = edge == .left || edge == .right
        var runs: [ClosedRange<Int>] = []
        for along in 0..<(vertical ? rows : columns) {
            let changedHere = across.contains { other in
                let (column, row) = vertical ? (other, along) : (along, other)
                guard changed[row * columns + column] else { return false }
                let (x, y) = (Double(column * block + block / 2), Double(row * block + block / 2))
                return !searched.contains { x >= $0.left && x <= $0.right && y >= $0.top && y <= $0.bottom }
            }
            guard changedHere else { continue }
            let pixels = (along * block)...(along * block + block - 1)
            if let last = runs.last, pixels.lowerBound - last.upperBound <= joining {
                runs[runs.count - 1] = last.lowerBound...pixels.upperBound
            } else {
                runs.append(pixels)
            }
        }
        return runs.filter { touched(edge, over: $0) }
    }

    /// Takes the faces found in a frame: each continues the tracked face whose predicted box
    /// it overlaps most (its motion measured from it); a tracked face not found is kept until
    /// it has gone unfound for `fullScanInterval` frames, or a second's worth (`hiddenFrames`)
    /// when more (dlib misses a face now and then, and one face passes behind another), or
    /// until it is predicted out of the frame.
    mutating func found(_ faces: [FaceDetection], width: Int, height: Int) {
        var next: [Tracked] = []
        var continued = Set<Int>()
        for face in faces {
            let box = Box(face)
            var best: (index: Int, distance: Double)?
            for (index, old) in tracked.enumerated() where !continued.contains(index) {
                let distance = Self.distance(box, from: old)
                if distance < best?.distance ?? .infinity { best = (index, distance) }
            }
            var face = Tracked(face: face)
            if let best {
                continued.insert(best.index)
                let old = tracked[best.index]
                let (frames, last) = (Double(old.missed + 1), Box(old.face))
                face.velocity = (
                    (box.center.x - last.center.x) / frames, (box.center.y - last.center.y) / frames,
                    (box.size - last.size) / frames
                )
                face.moving = true
            }
            next.append(face)
        }
        let keptFor = max(fullScanInterval, Self.hiddenFrames)
        for (index, old) in tracked.enumerated()
        where !continued.contains(index) && old.confirmed && old.missed + 1 < keptFor {
            guard !faces.contains(where: { $0.intersectionOverUnion(old.face) > 0.3 }) else { continue }
            var kept = old
            kept.missed += 1
            // One that has left the frame is not coming back from where it went.
            let center = kept.predicted(frames: kept.missed + 1).box.center
            guard (0..<Double(width)).contains(center.x), (0..<Double(height)).contains(center.y) else { continue }
            next.append(kept)
        }
        tracked = next
    }

    /// Follows the faces of a full scan of an earlier frame (made beside, `FullScansBeside`)
    /// that no tracked face could be: each is looked for around where it was, as a face seen
    /// once, from the next frame.
    mutating func add(_ faces: [FaceDetection]) {
        let unfollowed = faces.filter { face in !tracked.contains { Self.distance(Box(face), from: $0).isFinite } }
        tracked += unfollowed.map { face in
            var seen = Tracked(face: face)
            seen.confirmed = false
            return seen
        }
    }

    /// How far a found box lies from where a tracked face was predicted, in the predicted
    /// face's widths; infinite when it cannot be that face (too far, or a size more than a
    /// pyramid level and a half away).
    static func distance(_ box: Box, from tracked: Tracked) -> Double {
        let (predicted, size) = tracked.predicted(frames: tracked.missed + 1)
        let ratio = box.size / size
        guard ratio > 1 / 1.35, ratio < 1.35 else { return .infinity }
        let (dx, dy) = (box.center.x - predicted.center.x, box.center.y - predicted.center.y)
        let distance = (dx * dx + dy * dy).squareRoot() / size
        return distance <= unmeasuredReach + 0.5 ? distance : .infinity
    }
}
