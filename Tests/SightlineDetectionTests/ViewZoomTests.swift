import Foundation
import SightlineCore
import SightlineSamples
import SightlineTesting
import Testing

@testable import SightlineDetection

/// A zoom measured on the frames' block means (`ViewZoom`), and what tracking makes of it:
/// region scans where the view took the faces and along the edges it now reaches past,
/// where a cut is still scanned whole.
@Suite struct ViewZoomTests {
    private static let (width, height) = (640, 480)
    private static let levelSizes = [73.0, 87.6, 105.1, 126.1, 151.4]

    /// A view of 300 soft round things, lighter or darker than the grey they lie on, of
    /// 10 to 40 pixels' radius at random places (no two places alike at a block's scale),
    /// zoomed by `scale` about the frame's centre and shifted: what shows at (x, y) is what
    /// the view at rest shows at `centre + (x - centre) / scale + shift`. `seed` picks
    /// another view altogether (a cut). `size` makes the same view at another size, its
    /// things stretched with it (the shift stays in its pixels).
    private func view(
        scale: Double = 1, shift: (x: Double, y: Double) = (0, 0), seed: UInt64 = 7,
        size: (width: Int, height: Int) = (width, height)
    ) -> PixelBuffer {
        let (width, height) = (Double(size.width), Double(size.height))
        let stretch = (x: width / Double(Self.width), y: height / Double(Self.height))
        // Where the view at `at` shows, along a side of `length` (and back).
        let placed = { (at: Double, length: Double, shift: Double) in length / 2 + (at - length / 2 - shift) * scale }
        let shown = { (at: Double, length: Double, shift: Double) in length / 2 + (at - length / 2) / scale + shift }
        var random = SplitMix(seed: seed)
        var values = [Double](repeating: 120, count: size.width * size.height)
        for _ in 0..<300 {
            let (u, v) = (
                (Double(random.next() % 800) - 80) * stretch.x, (Double(random.next() % 640) - 80) * stretch.y
            )
            let radius = (10 + Double(random.next() % 31)) * stretch.x
            let brightness = Double(random.next() % 201) - 100
            // The pixels that show the view from u - radius to u + radius (and so down).
            let (left, top) = (placed(u - radius, width, shift.x), placed(v - radius, height, shift.y))
            let (right, bottom) = (placed(u + radius, width, shift.x), placed(v + radius, height, shift.y))
            for y in stride(from: max(0, Int(top)), to: min(size.height, Int(bottom) + 1), by: 1) {
                for x in stride(from: max(0, Int(left)), to: min(size.width, Int(right) + 1), by: 1) {
                    let at = (shown(Double(x), width, shift.x), shown(Double(y), height, shift.y))
                    let (dx, dy) = ((at.0 - u) / stretch.x, (at.1 - v) / stretch.y)
                    let distance = (dx * dx + dy * dy).squareRoot() * stretch.x
                    values[y * size.width + x] += brightness * max(0, 1 - distance / radius)
                }
            }
        }
        let pixels = values.map { UInt8(max(0, min(255, $0.rounded()))) }
        return PixelBuffer(format: .gray8, width: size.width, height: size.height, packedPlanes: [pixels])
    }

    private func blocks(_ pixels: PixelBuffer) throws -> LumaBlocks {
        var blocks = LumaBlocks()
        try blocks.measure(pixels)
        return blocks
    }

    /// In and out by 3% and 6%, with a pan of a few pixels: the scale to within 0.01 (3
    /// pixels at the frame's sides) and the shift to within 2 pixels.
    @Test(arguments: [(1.03, 0.0, 0.0), (0.97, 0.0, 0.0), (1.06, 5.0, -3.0), (0.94, -6.0, 4.0), (1.0, 9.0, 0.0)])
    func aZoomIsMeasured(scale: Double, x: Double, y: Double) throws {
        let zoom = try #require(ViewZoom.measure(blocks(view(scale: scale, shift: (x, y))), from: blocks(view())))
        #expect(abs(zoom.scale - scale) <= 0.01, "\(zoom.scale)")
        #expect(abs(zoom.shift.x - x) <= 2 && abs(zoom.shift.y - y) <= 2, "\(zoom.shift)")
    }

    /// A frame wider than `longestProfile` blocks (2560x1440: 320 by 180) is measured on
    /// its blocks averaged in pairs, as closely.
    @Test func aLargeFramesZoomIsMeasuredOnGroupsOfBlocks() throws {
        let size = (width: 2560, height: 1440)
        let zoom = try #require(
            ViewZoom.measure(
                blocks(view(scale: 1.04, shift: (12, -8), size: size)), from: blocks(view(size: size))))
        #expect(abs(zoom.scale - 1.04) <= 0.01, "\(zoom.scale)")
        #expect(abs(zoom.shift.x - 12) <= 4 && abs(zoom.shift.y + 8) <= 4, "\(zoom.shift)")
        #expect(zoom.width == 2560 && zoom.height == 1440)
    }

    /// Another view altogether is no zoom of the first.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func aCutIsNoZoom(seed: UInt64) throws {
        let (cut, before) = try (blocks(view(seed: seed)), blocks(view()))
        #expect(ViewZoom.measure(cut, from: before) == nil)
    }

    /// Zoomed out by 5%, the frame shows a ring new around what it showed: 16 pixels deep at
    /// the sides and 12 at the top and bottom (within the measurement's precision).
    @Test func zoomedOutTheRingAroundIsNew() throws {
        let zoom = try #require(ViewZoom.measure(blocks(view(scale: 0.95)), from: blocks(view())))
        let uncovered = zoom.uncovered(width: Self.width, height: Self.height)
        #expect(uncovered.map(\.edge) == [.left, .top, .right, .bottom])
        for (edge, by) in uncovered {
            let expected = (edge == .left || edge == .right ? Double(Self.width) : Double(Self.height)) * 0.05 / 2
            #expect(abs(by - expected) <= 3, "\(edge): \(by)")
        }
        // Zoomed in, nothing is new.
        let closer = try #require(ViewZoom.measure(blocks(view(scale: 1.05)), from: blocks(view())))
        #expect(closer.uncovered(width: Self.width, height: Self.height).allSatisfy { $0.by == 0 })
    }

    /// Tracking through a zoom out by 10% (which changes most blocks of this view): the
    /// frame is not a scene change; a tracked face is looked for
    /// where the view took it, at the size it took it to; zoomed out, every edge gets a band
    /// at every level as deep as its face plus a frame's motion of its own and the ring.
    /// A cut after it is still scanned whole.
    @Test func trackingFollowsAZoomAndScansACutWhole() throws {
        var tracking = RegionTracking(fullScanInterval: 5)
        var measured = try blocks(view())
        let first = tracking.compare(&measured)
        #expect(!first)
        let face = FaceDetection(left: 400, top: 100, right: 479, bottom: 179, score: 1, subDetector: 0)
        tracking.found([face], width: Self.width, height: Self.height)
        measured = try blocks(view(scale: 0.9))
        let zoomed = tracking.compare(&measured)
        #expect(!zoomed, "a zoom is not a cut")
        let zoom = try #require(tracking.viewZoom)
        let (regions, alongPan) = tracking.regions(
            width: Self.width, height: Self.height, levelSizes: Self.levelSizes, reach: { $0 / 4 })
        #expect(!alongPan)
        let placed = zoom.placed(RegionTracking.Box(face))
        let around = try #require(regions.first)
        #expect(around.neighbourLevels && around.sizes.contains(placed.size))
        #expect(around.area.left <= placed.left && around.area.right >= placed.right)
        #expect(around.area.top <= placed.top && around.area.bottom >= placed.bottom)
        let bands = regions.dropFirst()
        #expect(bands.count == Self.levelSizes.count * 4)
        for (band, (size, (edge, by))) in zip(
            bands,
            Self.levelSizes.flatMap { size in zoom.uncovered(width: Self.width, height: Self.height).map { (size, $0) }
            })
        {
            #expect(band.sizes == size...size && !band.neighbourLevels)
            let depth: Double
            switch edge {
            case .left: depth = band.area.right
            case .right: depth = Double(Self.width) - band.area.left
            case .top: depth = band.area.bottom
            case .bottom: depth = Double(Self.height) - band.area.top
            }
            #expect(abs(depth - (size * 1.25 + by)) < 0.001, "\(edge) at \(size): \(band.area)")
        }
        measured = try blocks(view(seed: 2))
        let cut = tracking.compare(&measured)
        #expect(cut, "a cut is scanned whole")
        #expect(tracking.viewZoom == nil)
    }

    /// On the bundled clips, frames 40 and 100 apart (the pan has moved the view further
    /// than a zoom is looked for) and the clip's loop (its last frame, then its first) are
    /// no zoom of each other: each is scanned whole.
    @Test(arguments: [SampleMedia.faces640x480, SampleMedia.faces1280x720])
    func framesOfAnotherViewAreNoZoom(clip: URL) throws {
        let blocks = try sampleFrames(clip).map { try self.blocks($0.pixels) }
        var pairs = [(blocks.count - 1, 0)]
        for first in stride(from: 0, to: blocks.count - 100, by: 10) {
            pairs += [(first, first + 40), (first, first + 100)]
        }
        let zooms = pairs.filter { ViewZoom.measure(blocks[$0.1], from: blocks[$0.0]) != nil }
        #expect(pairs.count > 40 && zooms.isEmpty, "\(zooms.count) of \(pairs.count): \(zooms.prefix(5))")
    }
}
