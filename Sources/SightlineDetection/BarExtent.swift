/// Grows a linear barcode's corners to the full height of its bars.
///
/// zxing-cpp reports a linear code where its scan lines decoded it: a band a few rows high
/// across bars that may be a hundred rows tall. AVFoundation's corners for a 1D code cover
/// the bars, and a box drawn from a thin band looks wrong. So from the band's middle line
/// this walks outwards along the bars for as long as each line crosses the same pattern of
/// bars as the one before it (each sample thresholded at the middle line's midpoint). It
/// stops at the quiet zone, the printed digits or the image's edge. Works at any angle.
enum BarExtent {
    /// `corners`: top-left, top-right, bottom-right, bottom-left of the decoded band.
    static func grow(
        _ corners: [(x: Int, y: Int)], luma: UnsafeRawPointer, width: Int, height: Int, bytesPerRow: Int
    ) -> [(x: Int, y: Int)] {
        guard corners.count == 4 else { return corners }
        let pixels = luma.assumingMemoryBound(to: UInt8.self)
        func point(_ index: Int) -> SIMD2<Double> { SIMD2(Double(corners[index].x), Double(corners[index].y)) }
        let (topLeft, topRight, bottomRight, bottomLeft) = (point(0), point(1), point(2), point(3))
        let start = (topLeft + bottomLeft) / 2
        let end = (topRight + bottomRight) / 2
        let length = ((end - start) * (end - start)).sum().squareRoot()
        guard length >= 8 else { return corners }
        let along = (end - start) / length
        // Across the scan line, pointing from the band's top edge to its bottom edge.
        var across = SIMD2(-along.y, along.x)
        if ((bottomLeft - topLeft) * across).sum() < 0 { across = -across }

        let samples = Int(length)
        // Called per frame with a linear code in it, for up to a few hundred lines of a few
        // hundred samples: each line is the same run of pixel offsets from its first pixel.
        let offsets = (0..<samples).map { step in
            let p = (along * Double(step)).rounded(.toNearestOrAwayFromZero)
            return Int(p.y) * bytesPerRow + Int(p.x)
        }
        let last = (along * Double(samples - 1)).rounded(.toNearestOrAwayFromZero)
        /// The first pixel of the line `offset` pixels across, or nil when the line leaves
        /// the image (a straight line is inside when both its ends are).
        func line(at offset: Double) -> UnsafePointer<UInt8>? {
            let origin = (start + across * offset).rounded(.toNearestOrAwayFromZero)
            let (x, y) = (Int(origin.x), Int(origin.y))
            let (endX, endY) = (x + Int(last.x), y + Int(last.y))
            guard min(x, endX) >= 0, min(y, endY) >= 0, max(x, endX) < width, max(y, endY) < height else {
                return nil
            }
            return UnsafePointer(pixels + y * bytesPerRow + x)
        }
        // The middle line's midpoint between dark and light is the threshold for all lines.
        guard let middle = line(at: 0) else { return corners }
        let values = offsets.map { Int(middle[$0]) }
        let (low, high) = (values.min()!, values.max()!)
        guard high - low >= 32 else { return corners }
        let threshold = (low + high) / 2
        var previous = [Bool](repeating: false, count: samples)
        var current = [Bool](repeating: false, count: samples)
        /// Samples the line `offset` pixels across into `bars` (light = true).
        func sample(at offset: Double, into bars: inout [Bool]) -> Bool {
            guard let base = line(at: offset) else { return false }
            offsets.withUnsafeBufferPointer { offsets in
                bars.withUnsafeMutableBufferPointer { bars in
                    for step in 0..<samples { bars[step] = Int(base[offsets[step]]) > threshold }
                }
            }
            return true
        }
        /// Whether `current` continues `previous`: at least 90% agree, shifted up to a pixel
        /// either way, so that bars a little off the perpendicular (a tilted or skewed code)
        /// are followed to their ends.
        func continues() -> Bool {
            func agreeing(shiftedBy shift: Int) -> Int {
                current.withUnsafeBufferPointer { current in
                    previous.withUnsafeBufferPointer { previous in
                        var count = 0
                        for index in 1..<samples - 1 where current[index] == previous[index + shift] { count += 1 }
                        return count
                    }
                }
            }
            // Straight on first: an upright code matches there, and the shifts are not needed.
            return [0, -1, 1].contains { agreeing(shiftedBy: $0) * 10 >= (samples - 2) * 9 }
        }
        // Two lines a step (the edge is found to within a pixel, at half the cost), and no
        // further than the code is long: bars are rarely taller than the code is wide.
        func reach(_ direction: Double) -> Double {
            _ = sample(at: 0, into: &previous)
            var offset = 0.0
            while offset < length, sample(at: direction * (offset + 2), into: &current), continues() {
                offset += 2
                swap(&previous, &current)
            }
            return offset * direction
        }
        let (up, down) = (reach(-1), reach(1))
        let grown = [start + across * up, end + across * up, end + across * down, start + across * down]
        // Never smaller than what zxing-cpp reported.
        let halfBand = ((bottomLeft - topLeft) * across).sum() / 2
        guard down - up >= 2 * halfBand else { return corners }
        return grown.map { (x: Int($0.x.rounded()), y: Int($0.y.rounded())) }
    }
}
