import SightlineCore

/// How the view moved between two frames when most of it changed but nothing was cut: a
/// zoom in or out, with the pan that goes with it (a PTZ camera zooming, a lens racked),
/// measured on the frames' 8x8 block means. What the frame shows at pixel `x` is what the
/// frame before showed at `centre + (x - centre) / scale + shift` (and so down the rows),
/// the centre being the frame's.
///
/// Such a frame shows nothing new but where the view now reaches past the frame before's
/// (`uncovered`): a face in it is one that was in the frame before, moved and scaled with
/// the view, or one that came in at an edge. A cut matches no zoom: the zoom found must
/// explain the blocks (`explains`), or there is none and the frame is scanned whole.
struct ViewZoom {
    var scale: Double
    var shift: (x: Double, y: Double)
    /// The extent of the frames the profiles cover (whole blocks, in whole groups), about
    /// whose centre the view zooms.
    var width, height: Double

    /// The zooms a frame is measured for, in or out: a PTZ camera that goes through a 30x
    /// zoom in 4 s zooms 1.09x a frame at 10 frames a second.
    static let scales = 0.8...1.25
    /// How far the view may move as well, as a fraction of the frame's width or height.
    static let farthestShift = 0.125
    /// Grey levels a block may differ from what the zoom predicts of it and still count as
    /// explained: twice what a block must change by to count as changed at all
    /// (`RegionTracking.blockThreshold`), since the frame before's block means, interpolated,
    /// are a blur of what a zoom shows.
    static let explainedWithin = 2 * RegionTracking.blockThreshold
    /// The fraction of the blocks both frames show that may differ from the prediction by
    /// more (something moving in the view as well): more is a cut, a turn or a crowd.
    static let unexplained = 0.2

    /// The zoom that takes `before` to `now`, when there is one: the scale and shift that
    /// best match each frame's block means averaged down the columns (and along the rows),
    /// the same scale both ways, that then explains the blocks themselves. A zoom goes on
    /// smoothly: with the zoom of the frame before (`last`) the search starts near it, and
    /// looks everywhere (six times the steps) only when that finds none.
    static func measure(_ now: LumaBlocks, from before: LumaBlocks, near last: ViewZoom? = nil) -> ViewZoom? {
        guard now.comparable(with: before), now.columns >= 8, now.rows >= 8 else { return nil }
        let x = (now: profile(of: now, acrossColumns: true), before: profile(of: before, acrossColumns: true))
        let y = (now: profile(of: now, acrossColumns: false), before: profile(of: before, acrossColumns: false))
        // Pixels per entry of each profile.
        let unit = (x: Double(x.now.blocks * LumaBlocks.size), y: Double(y.now.blocks * LumaBlocks.size))
        func zoom(near: ViewZoom?) -> ViewZoom? {
            let hint = near.map { (x: ($0.scale, $0.shift.x / unit.x), y: ($0.scale, $0.shift.y / unit.y)) }
            guard let fitX = fit(x.now.values, to: x.before.values, near: hint?.x),
                let fitY = fit(y.now.values, to: y.before.values, near: hint?.y),
                abs(fitX.scale / fitY.scale - 1) <= 0.02
            else { return nil }
            let zoom = ViewZoom(
                scale: (fitX.scale + fitY.scale) / 2, shift: (fitX.shift * unit.x, fitY.shift * unit.y),
                width: Double(x.now.values.count) * unit.x, height: Double(y.now.values.count) * unit.y)
            return zoom.explains(now, from: before) ? zoom : nil
        }
        return last.flatMap { zoom(near: $0) } ?? zoom(near: nil)
    }

    /// Where the frame before showed what this frame shows at pixel `(x, y)`.
    func shown(x: Double, y: Double) -> (x: Double, y: Double) {
        (width / 2 + (x - width / 2) / scale + shift.x, height / 2 + (y - height / 2) / scale + shift.y)
    }

    /// Where the frame before's pixel `(x, y)` is in this frame.
    func placed(x: Double, y: Double) -> (x: Double, y: Double) {
        (width / 2 + (x - width / 2 - shift.x) * scale, height / 2 + (y - height / 2 - shift.y) * scale)
    }

    /// Where a box of the frame before is in this frame, scaled with the view.
    func placed(_ box: RegionTracking.Box) -> RegionTracking.Box {
        let (topLeft, bottomRight) = (placed(x: box.left, y: box.top), placed(x: box.right, y: box.bottom))
        return RegionTracking.Box(left: topLeft.x, top: topLeft.y, right: bottomRight.x, bottom: bottomRight.y)
    }

    /// How far in from each edge this frame shows what the frame before did not (pixels,
    /// 0 where it shows nothing new): zoomed out, a ring; panned, a strip.
    func uncovered(width: Int, height: Int) -> [(edge: RegionTracking.Edge, by: Double)] {
        let (topLeft, bottomRight) = (placed(x: 0, y: 0), placed(x: Double(width), y: Double(height)))
        let (right, bottom) = (Double(width) - bottomRight.x, Double(height) - bottomRight.y)
        return [
            (.left, max(0, topLeft.x)), (.top, max(0, topLeft.y)), (.right, max(0, right)), (.bottom, max(0, bottom)),
        ]
    }

    /// Whether the frame before's blocks, moved and scaled by this zoom, predict `now`'s:
    /// half the blocks at least show what the frame before showed, and nearly all of them
    /// as it showed it.
    func explains(_ now: LumaBlocks, from before: LumaBlocks) -> Bool {
        let (columns, rows) = (now.columns, now.rows)
        let block = Double(LumaBlocks.size)
        var (inside, differing) = (0, 0)
        now.means.withUnsafeBufferPointer { now in
            before.means.withUnsafeBufferPointer { before in
                for row in 0..<rows {
                    for column in 0..<columns {
                        // The block's centre, where the frame before showed it, in blocks.
                        let at = shown(x: Double(column) * block + block / 2, y: Double(row) * block + block / 2)
                        let (x, y) = (at.x / block - 0.5, at.y / block - 0.5)
                        guard x >= 0, x <= Double(columns - 1), y >= 0, y <= Double(rows - 1) else { continue }
                        let predicted = Self.interpolated(before, columns: columns, rows: rows, x: x, y: y)
                        inside += 1
                        if abs(Double(now[row * columns + column]) - predicted) > Double(Self.explainedWithin) {
                            differing += 1
                        }
                    }
                }
            }
        }
        return inside * 2 >= columns * rows && Double(differing) <= Double(inside) * Self.unexplained
    }

    /// The block means at a point between blocks' centres (block units), weighed by nearness.
    private static func interpolated(_ means: UnsafeBufferPointer<UInt8>, columns: Int, rows: Int, x: Double, y: Double)
        -> Double
    {
        let (left, top) = (min(Int(x), columns - 2), min(Int(y), rows - 2))
        let (fx, fy) = (x - Double(left), y - Double(top))
        let at = { (column: Int, row: Int) in Double(means[row * columns + column]) }
        let upper = at(left, top) * (1 - fx) + at(left + 1, top) * fx
        let lower = at(left, top + 1) * (1 - fx) + at(left + 1, top + 1) * fx
        return upper * (1 - fy) + lower * fy
    }

    /// The longest profile matched: a larger frame's blocks are averaged in groups along
    /// it, so that measuring a 4K frame's zoom costs what a 1280x720 frame's does.
    static let longestProfile = 160

    /// The block means averaged down each column of blocks (or along each row), in groups
    /// of `blocks` blocks side by side (the profile of the frame's first `values.count`
    /// groups, about whose centre a zoom is measured).
    private static func profile(of blocks: LumaBlocks, acrossColumns: Bool) -> (values: [Double], blocks: Int) {
        let (count, across) = acrossColumns ? (blocks.columns, blocks.rows) : (blocks.rows, blocks.columns)
        let sums = blocks.sums(acrossColumns: acrossColumns)
        let group = (count + longestProfile - 1) / longestProfile
        let values = stride(from: 0, to: count - group + 1, by: group).map { first in
            Double(sums[first..<first + group].reduce(0, +)) / Double(across * group)
        }
        return (values, group)
    }

    /// The scale and shift (profile entries) for which `now[i]` best matches `before` at
    /// `centre + (i - centre) / scale + shift`, interpolated (mean absolute difference over
    /// at least half of `now`): searched coarsely over every scale and shift there can be
    /// (or near `hint`), then finely near the best.
    private static func fit(_ now: [Double], to before: [Double], near hint: (scale: Double, shift: Double)?) -> (
        scale: Double, shift: Double
    )? {
        let farthest = (Double(now.count) * farthestShift).rounded(.down)
        var best = (scale: 1.0, shift: 0.0, cost: Double.infinity)
        func search(around: (scale: Double, shift: Double), scales: Double, shifts: Double, steps: Double) {
            let (scaleStep, shiftStep) = (scales / steps, shifts / steps)
            for scale in stride(from: around.scale - scales, through: around.scale + scales, by: scaleStep)
            where Self.scales.contains(scale) {
                for shift in stride(from: around.shift - shifts, through: around.shift + shifts, by: shiftStep)
                where abs(shift) <= farthest {
                    let cost = Self.cost(now, before, scale: scale, shift: shift)
                    if cost < best.cost { best = (scale, shift, cost) }
                }
            }
        }
        if let hint {
            search(around: hint, scales: 0.01, shifts: 1, steps: 4)
        } else {
            let middle = (Self.scales.lowerBound + Self.scales.upperBound) / 2
            search(around: (middle, 0), scales: Self.scales.upperBound - middle, shifts: farthest, steps: farthest)
        }
        guard best.cost.isFinite else { return nil }
        search(around: (best.scale, best.shift), scales: 0.005, shifts: 0.5, steps: 4)
        search(around: (best.scale, best.shift), scales: 0.00125, shifts: 0.125, steps: 2)
        return (best.scale, best.shift)
    }

    private static func cost(_ now: [Double], _ before: [Double], scale: Double, shift: Double) -> Double {
        let last = Double(before.count - 1)
        let centre = last / 2
        var (total, count) = (0.0, 0)
        now.withUnsafeBufferPointer { now in
            before.withUnsafeBufferPointer { before in
                for index in 0..<now.count {
                    let at = centre + (Double(index) - centre) / scale + shift
                    guard at >= 0, at <= last else { continue }
                    let lower = min(Int(at), before.count - 2)
                    let part = at - Double(lower)
                    total += abs(now[index] - (before[lower] * (1 - part) + before[lower + 1] * part))
                    count += 1
                }
            }
        }
        return count * 2 >= now.count ? total / Double(count) : .infinity
    }
}
