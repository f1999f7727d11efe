import Foundation
import Testing

@testable import SightlineCore

/// Values from outside at their extremes: nothing traps, and what an edge must refuse it
/// can tell.
@Suite struct HostileValueTests {
    static let integers: [Int64] = [0, -1, 1, .min, .max, .min + 1, .max - 1, 1 << 62, -(1 << 62), 90_000]
    static let timescales: [Int32] = [1, 2, 30, 1000, 90_000, 1 << 30, .max, .max - 1]
    static let doubles: [Double] = [0, -1, .nan, .infinity, -.infinity, 1e308, -1e308, 1e15, 0.5, .ulpOfOne]

    @Test func mediaTimeArithmeticNeverTraps() {
        var times: [MediaTime] = []
        for value in Self.integers {
            for timescale in Self.timescales { times.append(MediaTime(value: value, timescale: timescale)) }
        }
        for seconds in Self.doubles {
            for timescale in Self.timescales { times.append(MediaTime(seconds: seconds, timescale: timescale)) }
        }
        var hashes = Set<MediaTime>()
        for a in times {
            hashes.insert(a)
            for timescale in Self.timescales { _ = a.converted(to: timescale) }
            for b in times {
                _ = a + b
                _ = a - b
                _ = a < b
                _ = a == b
            }
        }
        #expect(MediaTime(seconds: .nan, timescale: 30).value == 0)
        #expect(MediaTime(seconds: .infinity, timescale: 30).value == .max)
        #expect(MediaTime(seconds: -1e308, timescale: 30).value == .min)
        #expect(
            MediaTime(value: .max, timescale: 1) + MediaTime(value: 1, timescale: 1)
                == MediaTime(value: .max, timescale: 1))
        #expect(
            MediaTime(value: 0, timescale: 1) - MediaTime(value: .min, timescale: 1)
                == MediaTime(value: .max, timescale: 1))
        // Ordinary arithmetic is unchanged.
        #expect(
            MediaTime(value: 1, timescale: 30) + MediaTime(value: 1, timescale: 90_000)
                == MediaTime(value: 3001, timescale: 90_000))
        #expect(MediaTime(value: 2, timescale: 4) == MediaTime(value: 1, timescale: 2))
        #expect(Set([MediaTime(value: 2, timescale: 4), MediaTime(value: 1, timescale: 2)]).count == 1)
        #expect(Set([MediaTime(value: -2, timescale: 4), MediaTime(value: 1, timescale: 2)]).count == 2)
    }

    @Test func aTimescaleThatIsNotPositiveIsNotDecoded() throws {
        for timescale in ["0", "-1", "-2147483648"] {
            #expect(throws: DecodingError.self) {
                try JSONDecoder().decode(MediaTime.self, from: Data(#"{"value":1,"timescale":\#(timescale)}"#.utf8))
            }
        }
        let decoded = try JSONDecoder().decode(MediaTime.self, from: Data(#"{"value":-5,"timescale":30}"#.utf8))
        #expect(decoded == MediaTime(value: -5, timescale: 30))
    }

    @Test func limitsTellWhatAnEdgeMustRefuse() {
        #expect(MediaTime(value: 1_800_000_000, timescale: 1).isWithinLimits)  // a wall clock in seconds
        #expect(MediaTime(value: 1_800_000_000 * 90_000, timescale: 90_000).isWithinLimits)
        #expect(!MediaTime(value: .min, timescale: 1).isWithinLimits)
        #expect(!MediaTime(value: 1, timescale: .max).isWithinLimits)

        let face = FaceObject(
            faceID: 1, bounds: NormalizedRect(x: 0.1, y: 0.1, width: 0.2, height: 0.2), rollAngle: 0, yawAngle: 0,
            time: MediaTime(value: 1, timescale: 30), duration: nil, score: 1, subDetector: 0)
        let good = Message(
            kind: .faces, source: "cam1", time: face.time, wallTimeNs: 1_800_000_000_000_000_000, faces: [face])
        #expect(MessageLimits.violation(in: good) == nil)
        var cases: [(Message, String)] = []
        var message = good
        message.seq = .max
        cases.append((message, "seq"))
        message = good
        message.faces![0].bounds.x = .nan
        cases.append((message, "faces[0].bounds.x"))
        message = good
        message.faces![0].score = .infinity
        cases.append((message, "faces[0].score"))
        message = good
        message.faces![0].faceID = -1
        cases.append((message, "faces[0].faceID"))
        message = good
        message.time = MediaTime(value: .min, timescale: 1)
        cases.append((message, "time"))
        message = good
        message.faces = Array(repeating: face, count: MessageLimits.objectsPerMessage + 1)
        cases.append((message, "faces"))
        for (message, field) in cases { #expect(MessageLimits.violation(in: message) == field) }
    }
}
