import Foundation
import SightlineCore
import SightlineSamples
import SightlineTesting
import Testing

@testable import SightlineDetection

/// Bands along the edges a pan brings the view in at, on a live source with room to spare
/// (`FaceDetector.Configuration.PanBands`, `IdleCores`).
@Suite struct PanBandsTests {
    private static let (width, height) = (640, 480)
    private static let levelSizes = [73.0, 87.6, 105.1, 126.1, 151.4]

    /// A view whose top two thirds are a texture of 8-pixel tiles, bright or dark at random
    /// (no shift of it looks like another), over a plain wall, moved by `shift`: what shows
    /// at (x, y) is what the view at rest shows at (x + shift.x, y + shift.y). A move of 7
    /// pixels changes about half the textured blocks: a pan, not a cut.
    private func view(shift: (x: Int, y: Int)) -> PixelBuffer {
        var pixels = [UInt8](repeating: 120, count: Self.width * Self.height)
        for y in 0..<Self.height {
            for x in 0..<Self.width {
                let (atX, atY) = (x + shift.x + 64, y + shift.y + 64)
                guard atY < Self.height * 2 / 3 + 64 else { continue }
                var tile = SplitMix(seed: UInt64(atX / 8 * 1000 + atY / 8))
                pixels[y * Self.width + x] = tile.next() % 2 == 0 ? 40 : 200
            }
        }
        return PixelBuffer(format: .gray8, width: Self.width, height: Self.height, packedPlanes: [pixels])
    }

    /// The regions after a move from `before` to `after`, the pan measured or not.
    private func regions(from before: (x: Int, y: Int), to after: (x: Int, y: Int), measuring: Bool) throws -> (
        regions: [FaceDetector.Region], alongPan: Bool
    ) {
        var tracking = RegionTracking(fullScanInterval: 5)
        var blocks = LumaBlocks()
        for shift in [before, after] {
            try blocks.measure(view(shift: shift))
            #expect(!tracking.compare(&blocks, measuringPan: measuring), "a pan is not a cut")
        }
        return tracking.regions(width: Self.width, height: Self.height, levelSizes: Self.levelSizes) { $0 / 4 }
    }

    /// The view moves 7 pixels a frame one way or another: a band at every level along the
    /// one edge it comes in at, over all of it, as deep as that level's face plus a quarter
    /// of it (a frame's motion of its own) plus the shift (within the profiles' precision:
    /// the block means locate it to a couple of pixels), and hanging half a face over.
    @Test(arguments: [(7, 0), (-7, 0), (0, 7), (0, -7)])
    func aMeasuredPanGetsABandAlongTheEdgeItComesInAt(x: Int, y: Int) throws {
        let (regions, alongPan) = try regions(from: (0, 0), to: (x, y), measuring: true)
        #expect(alongPan && regions.count == Self.levelSizes.count)
        for (band, size) in zip(regions, Self.levelSizes) {
            let area = band.area
            #expect(band.sizes == size...size && !band.neighbourLevels)
            let (width, height) = (Double(Self.width), Double(Self.height))
            // Across the edge: how deep it reaches in; along it: all of it and half a face over.
            let (depth, along): (Double, ClosedRange<Double>)
            switch (x, y) {
            case (7, _): (depth, along) = (width - area.left, area.top...area.bottom)
            case (-7, _): (depth, along) = (area.right, area.top...area.bottom)
            case (_, 7): (depth, along) = (height - area.top, area.left...area.right)
            default: (depth, along) = (area.bottom, area.left...area.right)
            }
            #expect(abs(depth - (size * 1.25 + 7)) <= 2, "\(x), \(y): \(area)")
            let length = x != 0 ? height : width
            #expect(along == -size / 2...(length - 1 + size / 2), "\(x), \(y): \(area)")
            switch (x, y) {
            case (7, _): #expect(area.right == width + size / 2)
            case (-7, _): #expect(area.left == -size / 2)
            case (_, 7): #expect(area.bottom == height + size / 2)
            default: #expect(area.top == -size / 2)
            }
        }
    }

    /// Not measured (the machine is busy, or nothing is made beside), a pan gets no band.
    @Test func anUnmeasuredPanGetsNone() throws {
        let (regions, alongPan) = try regions(from: (0, 0), to: (7, 0), measuring: false)
        #expect(regions.isEmpty && !alongPan)
    }

    /// The readings of `/proc/stat` and the room between two of them: open at 60% idle,
    /// kept down to 35%, none from a line that is not the CPUs' sum or from no time passed.
    @Test func roomIsTheIdleShareBetweenTwoReadings() throws {
        let line = "cpu  4705 356 584 3699176 23 23 0 7 11 0"
        #expect(IdleCores.times(line[...]) == IdleCores.Times(idle: 3_699_199, total: 3_704_874))
        for bad in [
            "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 3 x 5 6 7 8", "cpu 18446744073709551615 1 0 0 0 0 0 0",
        ] {
            #expect(IdleCores.times(bad[...]) == nil, "\(bad)")
        }
        let start = IdleCores.Times(idle: 1000, total: 2000)
        func after(idle: UInt64) -> IdleCores.Times { IdleCores.Times(idle: 1000 + idle, total: 2100) }
        #expect(IdleCores.room(from: start, to: after(idle: 60), had: false))
        #expect(!IdleCores.room(from: start, to: after(idle: 59), had: false))
        #expect(IdleCores.room(from: start, to: after(idle: 35), had: true))
        #expect(!IdleCores.room(from: start, to: after(idle: 34), had: true))
        #expect(!IdleCores.room(from: start, to: start, had: true))
        #expect(!IdleCores.room(from: nil, to: start, had: true))
        #expect(!IdleCores.room(from: after(idle: 50), to: start, had: true))
    }

    /// The 720p sample pans the whole time, and faces come in at its right edge. Its first
    /// 150 frames, tracked as a live source (full scans beside, taken at the next frame):
    /// with the bands, every face the full scan finds is published from the first frame it
    /// is found in, at the loop's start included; without, those that come in between two
    /// full scans wait for the next. Every box published is the full scan's either way.
    @Test func facesComingInDuringAPanAreFoundInTheFrameTheyCan() throws {
        let frames = Array(try sampleFrames(SampleMedia.faces1280x720).prefix(150))
        let whole = try FaceDetector()
        let truth = try frames.map { try whole.detect(in: $0.pixels) }
        var missed: [FaceDetector.Configuration.PanBands: Int] = [:]
        for bands in [FaceDetector.Configuration.PanBands.always, .never] {
            var configuration = FaceDetector.Configuration(fullScanInterval: 5)
            configuration.panBands = bands
            let tracking = try FaceDetector(configuration: configuration)
            tracking.fullScansBeside = try FullScansBeside(for: tracking.configuration)
            var (found, exact) = (0, 0)
            for (frame, expected) in zip(frames, truth) {
                let faces = try tracking.detectTracking(in: frame.pixels, frameDuration: frame.duration)
                tracking.fullScansBeside?.waitUntilIdle()
                found += faces.count
                exact += faces.filter(expected.contains).count
            }
            #expect(exact == found, "\(bands): \(exact) of \(found) published boxes are the full scan's")
            missed[bands] = truth.map(\.count).reduce(0, +) - exact
            #expect((tracking.scansAlongPans > 0) == (bands == .always), "\(bands): \(tracking.scansAlongPans)")
        }
        #expect(missed[.always] == 0 && missed[.never, default: 0] > 0, "\(missed)")
    }
}
