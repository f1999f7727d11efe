import SightlineCore
import SightlineTesting
import Testing

@testable import SightlineDetection

/// What a scan beside must look at, on frames made to show a pan, a change and a cut.
@Suite struct ScannedViewTests {
    static let (width, height) = (320, 240)

    /// A frame of random 4x4 squares: every 8x8 block differs from its neighbours, and from
    /// itself moved by a few pixels.
    static func texture(seed: UInt64, width: Int = width, height: Int = height) -> [UInt8] {
        var random = SplitMix(seed: seed)
        let squares = (0..<(width / 4 + 1) * (height / 4 + 1)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        return (0..<width * height).map { squares[($0 / width / 4) * (width / 4 + 1) + $0 % width / 4] }
    }

    /// `pixels` as the frame moves by `shift` pixels to the left: the view it uncovers on
    /// the right is new noise.
    static func panned(_ pixels: [UInt8], by shift: Int) -> [UInt8] {
        let fresh = texture(seed: 99)
        return (0..<width * height).map { index in
            let (x, y) = (index % width, index / width)
            return x + shift < width ? pixels[y * width + x + shift] : fresh[index]
        }
    }

    static func frame(_ bytes: [UInt8], width: Int = width, height: Int = height) -> PixelBuffer {
        PixelBuffer(format: .gray8, width: width, height: height, packedPlanes: [bytes])
    }

    static func areas(_ unscanned: ScannedView.Unscanned) -> [RegionTracking.Box]? {
        if case .areas(let areas) = unscanned { return areas }
        return nil
    }

    @Test func theFirstFrameAndOneOfAnotherSizeAreWhole() throws {
        var view = ScannedView()
        #expect(try view.unscanned(in: Self.frame(Self.texture(seed: 1))) == .whole)
        #expect(try view.unscanned(in: Self.frame(Self.texture(seed: 1))) == .areas([]))
        let smaller = Self.frame(Self.texture(seed: 1, width: 160, height: 120), width: 160, height: 120)
        #expect(try view.unscanned(in: smaller) == .whole)
    }

    /// A frame larger than 4K UHD is scanned whole every time, and nothing of it is kept.
    @Test func aFrameLargerThan4KIsAlwaysWhole() throws {
        var view = ScannedView()
        let (width, height) = (3841, 2160)
        let large = PixelBuffer(
            format: .gray8, width: width, height: height,
            packedPlanes: [[UInt8](repeating: 100, count: width * height)])
        #expect(try view.unscanned(in: large) == .whole)
        #expect(try view.unscanned(in: large) == .whole)
        _ = try view.unscanned(in: Self.frame(Self.texture(seed: 9)))
        #expect(try view.unscanned(in: Self.frame(Self.texture(seed: 9))) == .areas([]))
    }

    /// Frames of any size from 1x1 up, each like the one before, moved, changed or new:
    /// never a trap, and every area lies within its frame (a stream may say any size).
    @Test func framesOfAnySizeAreAnswered() throws {
        var random = SplitMix(seed: 36)
        var view = ScannedView()
        var (width, height) = (1, 1)
        var bytes = [UInt8](repeating: 0, count: 1)
        for _ in 0..<2_000 {
            switch random.next(below: 4) {
            case 0:
                (width, height) = (
                    [1, 2, 7, 8, 9, 31, 64][random.next(below: 7)], [1, 7, 8, 9, 33][random.next(below: 5)]
                )
                bytes = Self.texture(seed: random.next(), width: width, height: height)
            case 1: bytes = bytes.indices.map { bytes[($0 + random.next(below: 3)) % bytes.count] }
            case 2: bytes[random.next(below: bytes.count)] ^= 0xFF
            default: break
            }
            switch try view.unscanned(in: Self.frame(bytes, width: width, height: height)) {
            case .whole: break
            case .areas(let areas):
                #expect(areas.allSatisfy { $0.left >= 0 && $0.top >= 0 && $0.right <= Double(width) })
                #expect(
                    areas.allSatisfy { $0.left < $0.right && $0.top < $0.bottom && $0.bottom <= Double(height) })
            }
        }
    }

    /// A pan: what it uncovered at the right edge, as deep as it moved, and nothing else.
    @Test(arguments: [3, 13, 40])
    func aPanUncoversAStripAtOneEdge(shift: Int) throws {
        var view = ScannedView()
        let first = Self.texture(seed: 2)
        _ = try view.unscanned(in: Self.frame(first))
        let areas = try #require(Self.areas(view.unscanned(in: Self.frame(Self.panned(first, by: shift)))))
        #expect(!areas.isEmpty)
        for area in areas {
            #expect(area.right == Double(Self.width))
            #expect(area.left <= Double(Self.width - shift) && area.left > Double(Self.width - shift - 8))
        }
        #expect(areas.map { $0.bottom - $0.top }.reduce(0, +) == Double(Self.height))
    }

    /// A still view where one thing changed: its blocks, and nothing at the edges.
    @Test func aChangeInAStillViewIsWhereItIs() throws {
        var view = ScannedView()
        let first = Self.texture(seed: 3)
        _ = try view.unscanned(in: Self.frame(first))
        var changed = first
        for y in 104..<144 {
            for x in 152..<192 { changed[y * Self.width + x] = first[y * Self.width + x] / 2 }
        }
        // Its blocks' columns, over the bands of four blocks' rows (32 pixels) they are in.
        #expect(
            try view.unscanned(in: Self.frame(changed))
                == .areas([
                    RegionTracking.Box(left: 152, top: 96, right: 192, bottom: 128),
                    RegionTracking.Box(left: 152, top: 128, right: 192, bottom: 160),
                ]))
    }

    /// Something large moving over a plain background in a still view shifts the profiles
    /// as a pan would: it is scanned where it was and where it went, not taken for a pan.
    @Test func aThingMovingInAStillViewIsNoPan() throws {
        var view = ScannedView()
        let thing = Self.texture(seed: 8, width: 96, height: 96)
        func frame(thingAt left: Int) -> PixelBuffer {
            var bytes = [UInt8](repeating: 112, count: Self.width * Self.height)
            for y in 0..<96 {
                for x in 0..<96 { bytes[(y + 72) * Self.width + left + x] = thing[y * 96 + x] }
            }
            return Self.frame(bytes)
        }
        _ = try view.unscanned(in: frame(thingAt: 64))
        let areas = try #require(Self.areas(view.unscanned(in: frame(thingAt: 80))))
        let union = try #require(areas.dropFirst().reduce(areas.first) { $0?.union($1) })
        #expect(union == RegionTracking.Box(left: 64, top: 64, right: 176, bottom: 192))
    }

    /// A cut changes every block: the frame is scanned whole.
    @Test func aCutIsWhole() throws {
        var view = ScannedView()
        _ = try view.unscanned(in: Self.frame(Self.texture(seed: 4)))
        #expect(try view.unscanned(in: Self.frame(Self.texture(seed: 5).map { $0 / 2 })) == .whole)
    }

    /// However little changes, one scan in `scansPerWhole` is whole; a whole scan asked for
    /// starts the count again.
    @Test func everyFewScansOneIsWhole() throws {
        var view = ScannedView()
        let still = Self.frame(Self.texture(seed: 6))
        let answers = try (0..<(2 * ScannedView.scansPerWhole + 1)).map { _ in try view.unscanned(in: still) }
        #expect(answers.indices.filter { answers[$0] == .whole } == [0, 6, 12])
        try view.scannedWhole(still)
        #expect(try view.unscanned(in: still) == .areas([]))
    }

    /// The profiles' shift is found however far (within reach) and whichever way.
    @Test func theShiftOfAProfileIsFound() {
        let profile = Self.texture(seed: 7, width: 400, height: 1).map(Int.init)
        for shift in [-90, -17, -1, 0, 1, 8, 55, 99] {
            let now = (0..<400).map { profile[min(max($0 + shift, 0), 399)] }
            #expect(ScannedView.shift(now, from: profile, farthest: 100) == shift)
        }
    }
}
