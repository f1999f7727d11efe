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
        let image = Image(
            pixels: luma.assumingMemoryBound(to: UInt8.self), width: width, height: height, bytesPerRow: bytesPerRow)
        guard let lines = Lines(image, from: start, along: along, across: across, length: length) else {
            return corners
        }
        let (up, down) = (lines.reach(-1), lines.reach(1))
        let grown = [start + across * up, end + across * up, end + across * down, start + across * down]
        // Never smaller than what zxing-cpp reported.
        let halfBand = ((bottomLeft - topLeft) * across).sum() / 2
        guard down - up >= 2 * halfBand else { return corners }
        return grown.map { (x: Int($0.x.rounded()), y: Int($0.y.rounded())) }
    }

    private struct Image {
        let pixels: UnsafePointer<UInt8>
        let width: Int
        let height: Int
        let bytesPerRow: Int
    }

    /// The lines parallel to the band's middle line, each sampled into bars (light = true)
    /// at the middle line's midpoint between dark and light.
    private struct Lines {
        private let image: Image
        private let start: SIMD2<Double>
        private let across: SIMD2<Double>
        private let length: Double
        private let samples: Int
        /// Called per frame with a linear code in it, for up to a few hundred lines of a few
        /// hundred samples: each line is the same run of pixel offsets from its first pixel.
        private let offsets: [Int]
        /// The last sample's place on a line, from its first.
        private let last: SIMD2<Double>
        private let threshold: Int

        /// Nil when the middle line leaves the image or crosses no contrast (bars and spaces
        /// less than 32 levels apart).
        init?(_ image: Image, from start: SIMD2<Double>, along: SIMD2<Double>, across: SIMD2<Double>, length: Double) {
            (self.image, self.start, self.across, self.length) = (image, start, across, length)
            samples = Int(length)
            offsets = (0..<samples).map { step in
                let p = (along * Double(step)).rounded(.toNearestOrAwayFromZero)
                return Int(p.y) * image.bytesPerRow + Int(p.x)
            }
            last = (along * Double(samples - 1)).rounded(.toNearestOrAwayFromZero)
            guard let middle = Self.line(of: image, from: start, last: last) else { return nil }
            let values = offsets.map { Int(middle[$0]) }
            let (low, high) = (values.min()!, values.max()!)
            guard high - low >= 32 else { return nil }
            threshold = (low + high) / 2
        }

        /// The first pixel of the line `offset` pixels across, or nil when the line leaves
        /// the image.
        private func line(at offset: Double) -> UnsafePointer<UInt8>? {
            Self.line(of: image, from: start + across * offset, last: last)
        }

        /// The first pixel of the line from `start` whose last sample is `last` further on, or
        /// nil when it leaves the image (a straight line is inside when both its ends are).
        private static func line(of image: Image, from start: SIMD2<Double>, last: SIMD2<Double>)
            -> UnsafePointer<UInt8>?
        {
            let origin = start.rounded(.toNearestOrAwayFromZero)
            let (x, y) = (Int(origin.x), Int(origin.y))
            let (endX, endY) = (x + Int(last.x), y + Int(last.y))
            guard min(x, endX) >= 0, min(y, endY) >= 0, max(x, endX) < image.width, max(y, endY) < image.height else {
                return nil
            }
            return image.pixels + y * image.bytesPerRow + x
        }

        /// Samples the line `offset` pixels across into `bars`.
        private func sample(at offset: Double, into bars: inout [Bool]) -> Bool {
            guard let base = line(at: offset) else { return false }
            let threshold = threshold
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
        private func continues(_ current: [Bool], _ previous: [Bool]) -> Bool {
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

        /// How far across (in pixels, signed by `direction`) the bars go on. Two lines a step
        /// (the edge is found to within a pixel, at half the cost), and no further than the
        /// code is long: bars are rarely taller than the code is wide.
        func reach(_ direction: Double) -> Double {
            var previous = [Bool](repeating: false, count: samples)
            var current = previous
            _ = sample(at: 0, into: &previous)
            var offset = 0.0
            while offset < length, sample(at: direction * (offset + 2), into: &current), continues(current, previous) {
                offset += 2
                swap(&previous, &current)
            }
            return offset * direction
        }
    }
}
