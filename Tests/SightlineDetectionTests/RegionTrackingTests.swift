import Foundation
import SightlineCore
import SightlineSamples
import SightlineTesting
import Synchronization
import Testing

@testable import SightlineDetection

@Suite struct RegionTrackingTests {
    /// The detector built into the shim is dlib's own, byte for byte as it serialises.
    @Test func embeddedDetectorIsDlibs() {
        #expect(FaceDetector.embeddedDetectorMatchesDlib)
    }

    /// The pyramid is dlib's, pixel for pixel, however it is built.
    @Test(arguments: [SampleMedia.faces640x480, SampleMedia.faces1280x720])
    func pyramidIsDlibsPixelForPixel(clip: URL) throws {
        for frame in try sampleFrames(clip).enumerated().filter({ $0.offset % 50 == 0 }).map(\.element) {
            #expect(try FaceDetector.pyramidMismatches(in: frame.pixels) == 0)
        }
    }

    /// The filters' responses are dlib's, bit for bit, on every level and on crops of it that
    /// leave every number of columns over (also the SSE2 build's, and 16 columns at a time
    /// where the CPU has AVX-512), and where every product in a sum is -0.
    @Test(arguments: [SampleMedia.faces640x480, SampleMedia.faces1280x720])
    func filterResponsesAreDlibsBitForBit(clip: URL) throws {
        for frame in try sampleFrames(clip).enumerated().filter({ $0.offset % 60 == 0 }).map(\.element) {
            #expect(try FaceDetector.filterMismatches(in: frame.pixels) == 0)
        }
    }

    /// The HOG features are dlib's, bit for bit, on every level and on crops whose widths
    /// leave each possible number of columns to dlib's one-by-one tail: on frames of both
    /// clips, and on noise, whose gradients reach every orientation and the extremes (±255).
    @Test(arguments: [SampleMedia.faces640x480, SampleMedia.faces1280x720])
    func featuresAreDlibsBitForBit(clip: URL) throws {
        for frame in try sampleFrames(clip).enumerated().filter({ $0.offset % 60 == 0 }).map(\.element) {
            #expect(try FaceDetector.featureMismatches(in: frame.pixels) == 0)
        }
    }

    @Test func featuresOfNoiseAreDlibsBitForBit() throws {
        for noise in Self.noise() { #expect(try FaceDetector.featureMismatches(in: noise) == 0) }
    }

    /// On noise too, whose pixels reach the extremes and every fraction a blend rounds.
    @Test func pyramidOfNoiseIsDlibsPixelForPixel() throws {
        for noise in Self.noise() { #expect(try FaceDetector.pyramidMismatches(in: noise) == 0) }
    }

    /// Grey and black-or-white noise, of odd and even sizes.
    private static func noise() -> [PixelBuffer] {
        var random = SplitMix(seed: 12)
        return [(331, 247), (96, 80), (640, 480)].flatMap { width, height in
            [false, true].map { blackOrWhite in
                let pixels = (0..<(width * height)).map { _ in
                    blackOrWhite ? (random.next() & 1 == 0 ? 0 : 255) : UInt8(truncatingIfNeeded: random.next())
                }
                return PixelBuffer(format: .gray8, width: width, height: height, packedPlanes: [pixels])
            }
        }
    }

    /// Scanning only around a face finds that face with the box, score and filter of the
    /// whole scan, at the image's edges too (faces entering and leaving the sample's pan).
    @Test(arguments: [(SampleMedia.faces640x480, 0), (SampleMedia.faces1280x720, 0), (SampleMedia.faces640x480, 1)])
    func regionScanFindsTheWholeScansFaces(clip: URL, upsample: Int) throws {
        let detector = try FaceDetector(configuration: .init(upsample: upsample, adjustThreshold: -0.3))
        var (faces, refound, atEdges) = (0, 0, 0)
        for frame in try sampleFrames(clip).enumerated().filter({ $0.offset % 10 == 0 }).map(\.element) {
            let whole = try detector.detect(in: frame.pixels)
            for face in whole {
                faces += 1
                if face.left < 0 || face.top < 0 || face.right >= frame.pixels.width { atEdges += 1 }
                let around = try detector.detect(in: frame.pixels, around: [face]) { $0.width / 4 }
                if around.contains(face) { refound += 1 }
                // Whatever else it finds is a face the whole scan found too.
                for other in around where other != face {
                    #expect(whole.contains(other) || whole.contains { $0.intersectionOverUnion(other) > 0.3 })
                }
            }
        }
        #expect(faces > 20)
        #expect(atEdges > 0)
        #expect(refound == faces)
    }

    /// Regions cut anywhere across a face (moved up to half its width, grown by up to half,
    /// at any sizes near its own, with or without the levels either side): every box found is
    /// one the whole scan keeps, with its score. A box whose rivals the region cut off (the
    /// box a level up or down, or another filter's a cell away, that the whole scan keeps
    /// instead) has them scanned too before it is kept.
    @Test(arguments: [(SampleMedia.faces640x480, 0), (SampleMedia.faces1280x720, 0), (SampleMedia.faces640x480, 1)])
    func regionsCutAnywhereFindOnlyTheWholeScansBoxes(clip: URL, upsample: Int) throws {
        let detector = try FaceDetector(configuration: .init(upsample: upsample))
        var random = SplitMix(seed: 5)
        var (found, exact) = (0, 0)
        for frame in try sampleFrames(clip).enumerated().filter({ $0.offset % 15 == 0 }).map(\.element) {
            let whole = try detector.detect(in: frame.pixels)
            for face in whole {
                for _ in 0..<(upsample == 0 ? 30 : 8) {
                    let box = RegionTracking.Box(face)
                    let area = box.moved(
                        x: random.next(in: -0.5...0.5) * box.size, y: random.next(in: -0.5...0.5) * box.size
                    )
                    .grown(by: random.next(in: 0...0.5) * box.size)
                    let (a, b) = (random.next(in: 0.7...1.4) * box.size, random.next(in: 0.7...1.4) * box.size)
                    let region = FaceDetector.Region(
                        area: area, sizes: min(a, b)...max(a, b), neighbourLevels: random.next() % 2 == 0)
                    let around = try detector.detect(in: frame.pixels, regions: [region])
                    found += around.count
                    exact += around.filter(whole.contains).count
                }
            }
        }
        #expect(found > (upsample == 0 ? 500 : 100))
        #expect(exact == found, "\(exact) of \(found) boxes are the whole scan's")
    }

    @Test func regionScanWithoutRegionsFindsNothing() throws {
        let frame = try sampleFrames()[150]
        let detector = try FaceDetector()
        #expect(try !detector.detect(in: frame.pixels).isEmpty)
        #expect(try detector.detect(in: frame.pixels, around: []) { _ in 10 }.isEmpty)
    }

    /// With a full scan every 5 frames, the faces published are those of full scans on every
    /// frame: recall and precision against them on the sample's pan, where faces enter and
    /// leave at both edges.
    @Test func trackingKeepsRecallAndPrecision() throws {
        let frames = try sampleFrames()
        let whole = try FaceDetector()
        let tracking = try FaceDetector(configuration: .init(fullScanInterval: 5))
        var (expected, found, matched) = (0, 0, 0)
        for frame in frames {
            let truth = try whole.detect(in: frame.pixels)
            let faces = try tracking.detectTracking(in: frame.pixels, frameDuration: frame.duration)
            expected += truth.count
            found += faces.count
            matched += truth.filter { t in faces.contains { $0.intersectionOverUnion(t) >= 0.5 } }.count
        }
        #expect(tracking.scans.full == 60)
        #expect(tracking.scans.regions == 240)
        #expect(Double(matched) / Double(expected) >= 0.98, "recall \(matched) of \(expected)")
        #expect(Double(matched) / Double(found) >= 0.99, "precision \(matched) of \(found)")
    }

    /// A live source's tracking, its full scans made beside it: the frame due one is scanned
    /// where faces can be, and the full scan's faces are followed from the frame after it is
    /// done (here the next: the test waits for it, so the answers are any machine's). Every
    /// box published is a full scan's, with its score, and nearly every face is published.
    @Test(arguments: [SampleMedia.faces640x480, SampleMedia.faces1280x720])
    func trackingWithFullScansBesideKeepsRecallAndPrecision(clip: URL) throws {
        let frames = try sampleFrames(clip)
        let whole = try FaceDetector()
        let tracking = try FaceDetector(configuration: .init(fullScanInterval: 5))
        tracking.fullScansBeside = try FullScansBeside(for: tracking.configuration)
        var (expected, found, exact) = (0, 0, 0)
        for frame in frames {
            let truth = try whole.detect(in: frame.pixels)
            let faces = try tracking.detectTracking(in: frame.pixels, frameDuration: frame.duration)
            tracking.fullScansBeside?.waitUntilIdle()
            expected += truth.count
            found += faces.count
            exact += faces.filter(truth.contains).count
        }
        #expect(tracking.scans.full == 60 && tracking.scans.regions == 299)
        // The pan shows a strip new at its edge from scan to scan; one scan in six is whole.
        let counts = try #require(tracking.fullScansBeside?.counts)
        #expect(counts.whole == 10 && counts.partial == 49, "\(counts)")
        #expect(exact == found, "\(exact) of \(found) published boxes are the full scan's")
        #expect(Double(exact) / Double(expected) >= 0.98, "recall \(exact) of \(expected)")
    }

    /// A cut on a live source: the frame after it has its full scan started beside at once
    /// (no frame waits for it), and the faces of the new view are published from the frame
    /// after that scan is done, each with the full scan's box.
    @Test func aCutOnALiveSourceIsScannedWholeBeside() throws {
        let frames = try sampleFrames()
        let cut = Array(frames[0..<60]) + Array(frames[200..<260])
        let whole = try FaceDetector()
        let tracking = try FaceDetector(configuration: .init(fullScanInterval: 5))
        tracking.fullScansBeside = try FullScansBeside(for: tracking.configuration)
        var published: [[FaceDetection]] = []
        var truth: [[FaceDetection]] = []
        for frame in cut {
            truth.append(try whole.detect(in: frame.pixels))
            published.append(try tracking.detectTracking(in: frame.pixels, frameDuration: frame.duration))
            tracking.fullScansBeside?.waitUntilIdle()
        }
        #expect(tracking.scans.sceneChanges == 1)
        #expect(zip(published, truth).allSatisfy { faces, truth in faces.allSatisfy(truth.contains) })
        // From the frame after the cut's scan is taken (the cut is frame 60), every face.
        #expect(truth[61].count > 0 && published[61] == truth[61], "\(published[61]) vs \(truth[61])")
        let after = zip(published[61...], truth[61...])
        let found = after.map { faces, truth in truth.filter(faces.contains).count }.reduce(0, +)
        #expect(Double(found) >= 0.98 * Double(after.map(\.1.count).reduce(0, +)))
    }

    /// Scans asked for while one is under way (a view that keeps changing, as in a zoom):
    /// the last is made, whole, after the one under way; one that had not started when another
    /// was asked for is not made (the thread may not have started the first either);
    /// the faces taken are the latest scan's, once.
    @Test func scansAskedForBehindAnotherAreMadeInTurn() throws {
        let frames = try sampleFrames()
        let expected = try FaceDetector().detect(in: frames[200].pixels)
        let beside = try FullScansBeside(for: .init(fullScanInterval: 5))
        for frame in [0, 150, 200] { beside.restart(frames[frame].pixels) }
        beside.waitUntilIdle()
        #expect(!expected.isEmpty)
        #expect(try beside.finished() == expected)
        #expect(try beside.finished() == nil)
        #expect((1...3).contains(beside.counts.whole) && beside.counts.partial == 0)
    }

    /// A scan beside gives way while live sources' frames being analysed fill every core:
    /// its jobs wait (a quarter of a second at most each), and it still finds the full scan's
    /// faces. A whole scan after a cut does not: until it is done nothing is followed.
    @Test func scansBesideGiveWayToFramesAnalysed() throws {
        let frames = try sampleFrames()
        let expected = try FaceDetector().detect(in: frames[200].pixels)
        let beside = try FullScansBeside(for: .init(fullScanInterval: 5))
        for _ in 0..<FaceDetector.availableCores { FullScansBeside.frameAnalysed(started: true) }
        defer { for _ in 0..<FaceDetector.availableCores { FullScansBeside.frameAnalysed(started: false) } }
        #expect(beside.start(frames[200].pixels))
        beside.waitUntilIdle()
        #expect(beside.waitsForFramePath > 0)
        #expect(!expected.isEmpty)
        #expect(try beside.finished() == expected)
        let waited = beside.waitsForFramePath
        beside.restart(frames[200].pixels)
        beside.waitUntilIdle()
        #expect(beside.waitsForFramePath == waited)
        #expect(try beside.finished() == expected)
    }

    /// Preparing a tracking detector for the frames' size, as the pipeline does before the
    /// first frame, changes nothing it finds or counts: its faces, with their landmarks, are
    /// an unprepared detector's, frame for frame and scan for scan.
    @Test func preparingChangesNothingFound() throws {
        let frames = try sampleFrames().prefix(30)
        let (landmarker, _) = try FaceModelFixtures.loadModels()
        let prepared = try FaceDetector(configuration: .init(fullScanInterval: 5))
        let plain = try FaceDetector(configuration: .init(fullScanInterval: 5))
        prepared.landmarker = landmarker
        plain.landmarker = landmarker
        let size = (width: frames[0].pixels.width, height: frames[0].pixels.height)
        try prepared.prepare(
            for: InputDescription(
                url: "sample", width: size.width, height: size.height, pixelFormat: "yuv420p", frameRate: 30))
        var faces = 0
        for frame in frames {
            let found = try prepared.objects(in: frame)
            faces += found.count
            #expect(try found == plain.objects(in: frame))
        }
        #expect(faces > 20)
        #expect(prepared.scans == plain.scans && prepared.scans.full == 6)
    }

    /// Every frame scanned whole with the default interval: exactly `detect(in:)`.
    @Test func intervalOneIsAFullScanEveryFrame() throws {
        let frames = try sampleFrames().prefix(40)
        let whole = try FaceDetector()
        let tracking = try FaceDetector()
        for frame in frames {
            #expect(
                try tracking.detectTracking(in: frame.pixels, frameDuration: frame.duration)
                    == whole.detect(in: frame.pixels))
        }
        #expect(tracking.scans.full == 40 && tracking.scans.regions == 0)
    }

    /// All faces' landmarks in one call are each face's own, found one by one, also when the
    /// detector's threads share the faces out.
    @Test func landmarksOfAllFacesMatchOneByOne() throws {
        let (landmarker, _) = try FaceModelFixtures.loadModels()
        let detector = try FaceDetector(configuration: .init(adjustThreshold: -0.5, threads: 3))
        var faces = 0
        var framesWithMoreThanOne = 0
        for frame in try sampleFrames().enumerated().filter({ $0.offset % 25 == 0 }).map(\.element) {
            let found = try detector.detect(in: frame.pixels)
            faces += found.count
            if found.count > 1 { framesWithMoreThanOne += 1 }
            let oneByOne = try found.map { try landmarker.landmarks(of: $0, in: frame.pixels) }
            #expect(try landmarker.landmarks(of: found, in: frame.pixels) == oneByOne)
            #expect(try landmarker.landmarks(of: found, in: frame.pixels, sharingThreadsOf: detector) == oneByOne)
        }
        #expect(faces > 5 && framesWithMoreThanOne > 2)
    }

    /// Detectors share one landmarker: the landmarks three threads compute with it at the same
    /// time, over and over, are the ones one thread computes alone.
    @Test func landmarksOnManyThreadsAtOnceAreOneThreadsLandmarks() throws {
        let (landmarker, _) = try FaceModelFixtures.loadModels()
        let alone = try FaceDetector(configuration: .init(adjustThreshold: -0.5))
        let frames = try sampleFrames().enumerated().filter { $0.offset % 25 == 0 }.map(\.element)
        let faces = try frames.map { try alone.detect(in: $0.pixels) }
        let expected = try zip(frames, faces).map { try landmarker.landmarks(of: $1, in: $0.pixels) }
        try #require(faces.joined().count > 5)

        let threads = 3
        nonisolated(unsafe) let shared = landmarker
        let pixels = frames.map(\.pixels)
        let mismatches = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for _ in 0..<20 {
                for (index, frame) in pixels.enumerated() {
                    let landmarks = try? shared.landmarks(of: faces[index], in: frame)
                    if landmarks != expected[index] { mismatches.withLock { $0 += 1 } }
                }
            }
        }
        #expect(mismatches.withLock { $0 } == 0)
    }
}

@Suite struct MotionGateTests {
    private func frame(_ fill: (Int, Int) -> UInt8) -> PixelBuffer {
        var pixels = [UInt8](repeating: 0, count: 320 * 240)
        for y in 0..<240 { for x in 0..<320 { pixels[y * 320 + x] = fill(x, y) } }
        return PixelBuffer(format: .gray8, width: 320, height: 240, packedPlanes: [pixels])
    }

    /// Each block's mean is its 64 pixels' sum over 64, rounded down, on noise that reaches
    /// 0 and 255, in a plane whose rows are longer than the frame (only the frame is read)
    /// and whose size leaves blocks cut at the right and bottom.
    @Test func blockMeansAreTheirPixelsMeans() throws {
        var random = SplitMix(seed: 7)
        let (width, height, bytesPerRow) = (77, 43, 96)
        let bytes = (0..<(bytesPerRow * height)).map { index in
            index % bytesPerRow >= width ? 0 : [0, 255, UInt8(truncatingIfNeeded: random.next())][index % 3]
        }
        var blocks = LumaBlocks()
        try bytes.withUnsafeBytes { raw in
            let plane = Plane(baseAddress: raw.baseAddress!, bytesPerRow: bytesPerRow, rows: height)
            try blocks.measure(PixelBuffer(format: .gray8, width: width, height: height, planes: [plane], owner: nil))
        }
        #expect((blocks.columns, blocks.rows) == (9, 5))
        let expected = (0..<45).map { index in
            let (left, top) = (index % 9 * 8, index / 9 * 8)
            let sum = (top..<top + 8).reduce(0) { sum, y in
                (left..<left + 8).reduce(sum) { $0 + Int(bytes[y * bytesPerRow + $1]) }
            }
            return UInt8(sum / 64)
        }
        #expect(blocks.means == expected)
    }

    @Test func stillFramesAreHeldAndMovementPassesWithSlowChangesAddingUp() throws {
        let gate = MotionGate()
        var blocks = LumaBlocks()
        func moved(_ pixels: PixelBuffer) throws -> Bool {
            try blocks.measure(pixels)
            return gate.moved(blocks)
        }
        let scene = frame { x, y in UInt8((x * 3 + y) % 200) }
        #expect(try moved(scene))  // the first frame is always analysed
        #expect(try !moved(scene))
        // Noise of a few grey levels on every pixel is not movement.
        #expect(try !moved(frame { x, y in UInt8((x * 3 + y) % 200 + (x + y) % 5) }))
        // Something the size of a small face appears.
        let entered = frame { x, y in (100..<140).contains(x) && (80..<120).contains(y) ? 250 : UInt8((x * 3 + y) % 200)
        }
        #expect(try moved(entered))
        #expect(try !moved(entered))
        // A slow fade: each step alone is below the threshold, but they add up against the
        // last frame let through.
        var passed = false
        for step in 1...8 {
            let faded = frame { x, y in UInt8(min(255, Int((x * 3 + y) % 200) + 3 * step)) }
            if try moved(faded) { passed = true }
        }
        #expect(passed)
    }

    /// The detector holds the faces of the last scan on frames the gate holds.
    @Test func detectorHoldsFacesOnStillFrames() throws {
        let frame = try sampleFrames()[150]
        let gated = try FaceDetector(configuration: .init(motionGate: true))
        let first = try gated.detectTracking(in: frame.pixels, frameDuration: frame.duration)
        #expect(!first.isEmpty)
        for _ in 0..<3 {
            #expect(try gated.detectTracking(in: frame.pixels, frameDuration: frame.duration) == first)
        }
        #expect(gated.scans.full == 1 && gated.scans.held == 3)
    }
}

/// Where region tracking looks between full scans, on frames drawn for it: gray, with a
/// bright square where something is.
@Suite struct RegionTrackingPlanTests {
    private static let (width, height) = (640, 480)
    private static let levelSizes = [73.0, 87.6, 105.1, 126.1, 151.4]

    private func frame(squares: [(x: Int, y: Int, size: Int)] = [], shift: Int = 0) -> PixelBuffer {
        var pixels = [UInt8](repeating: 0, count: Self.width * Self.height)
        for y in 0..<Self.height {
            for x in 0..<Self.width {
                // A textured top third (which a shift of the whole view changes) over a plain wall.
                pixels[y * Self.width + x] = y < Self.height / 3 && ((x + shift) / 16 + y / 16) % 2 == 0 ? 60 : 120
            }
        }
        for square in squares {
            for y in max(0, square.y)..<min(Self.height, square.y + square.size) {
                for x in max(0, square.x)..<min(Self.width, square.x + square.size) { pixels[y * Self.width + x] = 250 }
            }
        }
        return PixelBuffer(format: .gray8, width: Self.width, height: Self.height, packedPlanes: [pixels])
    }

    /// Compares `pixels` with the frame before and returns the regions to scan.
    private func regions(_ tracking: inout RegionTracking, _ pixels: PixelBuffer) throws -> (
        Bool, [FaceDetector.Region]
    ) {
        var blocks = LumaBlocks()
        try blocks.measure(pixels)
        let scene = tracking.compare(&blocks)
        return (
            scene,
            tracking.regions(width: Self.width, height: Self.height, levelSizes: Self.levelSizes) { $0 / 4 }.regions
        )
    }

    private func face(x: Int, y: Int, size: Int) -> FaceDetection {
        FaceDetection(left: x, top: y, right: x + size - 1, bottom: y + size - 1, score: 1, subDetector: 0)
    }

    /// Something crossing the left edge gets a band there, at every size it is tall enough
    /// for, deep enough to hold a face of that size; nothing moved, nothing to scan.
    @Test func somethingEnteringAtAnEdgeGetsABandThere() throws {
        var tracking = RegionTracking(fullScanInterval: 5)
        _ = try regions(&tracking, frame())
        #expect(try regions(&tracking, frame()).1.isEmpty)
        let (scene, bands) = try regions(&tracking, frame(squares: [(x: -60, y: 200, size: 120)]))
        #expect(!scene)
        #expect(bands.count == Self.levelSizes.count)  // 120 px along the edge: every size up to 2x that
        for (band, size) in zip(bands, Self.levelSizes) {
            #expect(band.sizes == size...size && !band.neighbourLevels)
            #expect(band.area.left < 0 && band.area.right >= size + size / 4)
            #expect(band.area.top <= 200 && band.area.bottom >= 320)
            #expect(band.area.right < Double(Self.width) / 2)
        }
    }

    /// The same square moving beside the edge without crossing it is not something entering.
    @Test func movementClearOfTheEdgesGetsNoBand() throws {
        var tracking = RegionTracking(fullScanInterval: 5)
        _ = try regions(&tracking, frame(squares: [(x: 40, y: 200, size: 100)]))
        _ = try regions(&tracking, frame(squares: [(x: 40, y: 210, size: 100)]))
        #expect(try regions(&tracking, frame(squares: [(x: 40, y: 220, size: 100)])).1.isEmpty)
    }

    /// A view that moves as a whole (a pan: a third of the blocks change) gets no bands
    /// (they would cost a full scan); one that changes almost everywhere (a cut) is scanned
    /// whole.
    @Test func panGetsNoBandsAndACutAFullScan() throws {
        var tracking = RegionTracking(fullScanInterval: 5)
        _ = try regions(&tracking, frame())
        let (scene, bands) = try regions(&tracking, frame(shift: 16))
        #expect(!scene && bands.isEmpty)
        var blank = PixelBuffer(
            format: .gray8, width: Self.width, height: Self.height,
            packedPlanes: [
                [UInt8](repeating: 255, count: Self.width * Self.height)
            ])
        #expect(try regions(&tracking, blank).0)
        blank = frame()
        #expect(try regions(&tracking, blank).0)
    }

    /// A face seen twice moving fast is looked for where its motion carries it, at the sizes
    /// it grows to; one seen once is looked for three quarters of its width around; one lost
    /// is looked for along its way, and dropped once predicted out of the frame.
    @Test func trackedFacesAreLookedForWhereTheyMove() throws {
        var tracking = RegionTracking(fullScanInterval: 5)
        tracking.found([face(x: 100, y: 100, size: 80)], width: Self.width, height: Self.height)
        let once = try #require(try regions(&tracking, frame()).1.first)
        #expect(once.area.left == 40 && once.area.right == 240 && once.sizes == 80...80)
        tracking.found([face(x: 150, y: 100, size: 88)], width: Self.width, height: Self.height)
        #expect(tracking.tracked.count == 1 && tracking.tracked[0].moving)
        #expect(tracking.tracked[0].velocity.x == 54 && tracking.tracked[0].velocity.size == 8)
        let moving = try #require(try regions(&tracking, frame()).1.first)
        // Predicted: centre 194 + 54 = 248, 96 wide; the last box (150...238) and that one.
        #expect(moving.sizes == 88...96 && moving.neighbourLevels)
        #expect(moving.area.left < 150 && moving.area.right > 296)
        // Lost: kept (a second at most) until its predicted centre leaves the frame.
        var frames = 0
        while !tracking.tracked.isEmpty && frames < 40 {
            tracking.found([], width: Self.width, height: Self.height)
            frames += 1
        }
        #expect(frames == 8)  // its centre 194 + 54 x (8 + 1) > 640
    }
}

/// Faces entering fast from each edge, on a clip made from stills Debian ships
/// (tools/make-hard-tracking-media.sh): tracking every 5th frame whole finds every face a full
/// scan of every frame finds, with its box and score, and spends fewer scans on it.
@Suite(.serialized) struct HardFootageTests {
    /// The clips, made once for the suite's tests.
    private static let clips: Result<URL, any Error> = Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sightline-hard-\(getpid())")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let make = Process()
        make.executableURL = URL(fileURLWithPath: "/bin/bash")
        make.arguments = [
            root.appendingPathComponent("tools/make-hard-tracking-media.sh").path, directory.path, "640x480",
        ]
        make.standardOutput = FileHandle.nullDevice
        try make.run()
        make.waitUntilExit()
        guard make.terminationStatus == 0 else { throw SightlineError.detector("make-hard-tracking-media.sh failed") }
        return directory
    }

    /// Each frame of a hard clip scanned whole, and tracked with a full scan every 5th: the
    /// faces of each full scan, how many of them tracking found with the full scan's box and
    /// score, how many it found in all, and the tracking detector (its scans counted).
    private func tracked(_ name: String) throws -> (
        truth: [[FaceDetection]], exact: Int, found: Int, tracking: FaceDetector
    ) {
        let frames = try sampleFrames(Self.clips.get().appendingPathComponent(name))
        #expect(frames.count == 300)
        let whole = try FaceDetector()
        let tracking = try FaceDetector(configuration: .init(fullScanInterval: 5))
        var (truths, exact, found) = ([[FaceDetection]](), 0, 0)
        for frame in frames {
            let truth = try whole.detect(in: frame.pixels)
            let faces = try tracking.detectTracking(in: frame.pixels, frameDuration: frame.duration)
            truths.append(truth)
            found += faces.count
            exact += truth.filter(faces.contains).count
        }
        return (truths, exact, found, tracking)
    }

    @Test func facesEnteringAtEveryEdgeAreAllFound() throws {
        let (truth, exact, found, tracking) = try tracked("edges_640x480.mp4")
        let expected = truth.map(\.count).reduce(0, +)
        let atEdges = truth.joined().filter { $0.left < 40 || $0.top < 40 || $0.right > 600 || $0.bottom > 440 }.count
        #expect(expected > 100 && atEdges > 10)
        #expect(exact == expected, "\(exact) of \(expected) faces found with the full scan's box and score")
        #expect(found == expected)
        #expect(tracking.scans.full == 60 && tracking.scans.sceneChanges == 0)
    }

    /// A collage zoomed 3x in and out twice, panning as it goes: most frames change most of
    /// their blocks, and a zoom explains them, so they are scanned where the view took the
    /// faces and along the edges it reaches past, not whole. Every box is the full scan's,
    /// and 99% of its faces are found.
    @Test func facesThroughAZoomAreFollowedWithoutWholeScans() throws {
        let (truth, exact, found, tracking) = try tracked("zoom_640x480.mp4")
        let expected = truth.map(\.count).reduce(0, +)
        #expect(expected > 1000)
        #expect(exact == found, "\(found - exact) of \(found) boxes are not the full scan's")
        #expect(Double(exact) >= 0.99 * Double(expected), "\(exact) of \(expected) faces")
        #expect(tracking.scansAcrossZooms >= 120, "\(tracking.scansAcrossZooms) frames followed through a zoom")
        #expect(tracking.scans.full <= 64 && tracking.scans.sceneChanges <= 4, "\(tracking.scans)")
    }
}
