import Foundation
import SightlineCore
import Testing

@Suite struct MediaTimeTests {
    @Test func comparesExactlyAcrossTimescales() {
        #expect(MediaTime(value: 512, timescale: 15360) == MediaTime(value: 1, timescale: 30))
        #expect(MediaTime(value: 1, timescale: 30) < MediaTime(value: 3001, timescale: 90000))
        #expect(Set([MediaTime(value: 2, timescale: 60), MediaTime(value: 1, timescale: 30)]).count == 1)
    }

    @Test func addsAndConverts() {
        let sum = MediaTime(value: 1, timescale: 30) + MediaTime(value: 1, timescale: 60)
        #expect(sum == MediaTime(value: 3, timescale: 60))
        #expect(MediaTime(value: 1001, timescale: 30000).converted(to: 90000).value == 3003)
        #expect(MediaTime(value: 10, timescale: 30) - MediaTime(value: 1, timescale: 3) == .zero)
        #expect(MediaTime(seconds: 1.5, timescale: 600).value == 900)
    }
}

@Suite struct TopicTests {
    @Test func prefixesAreExact() {
        let cam1 = Topic.prefix(kind: .faces, source: "cam1")
        #expect(Topic.make(kind: .faces, source: "cam1").hasPrefix(cam1))
        #expect(!Topic.make(kind: .faces, source: "cam10").hasPrefix(cam1))
        #expect(Topic.make(kind: .faces, source: "cam10").hasPrefix(Topic.prefix(kind: .faces, source: nil)))
        #expect(!Topic.make(kind: .events, source: "cam1").hasPrefix(Topic.prefix(kind: .faces, source: nil)))
    }

    @Test func parsesOnlyWellFormedTopics() {
        #expect(Topic.parse("faces/cam1/")! == (MessageKind.faces, "cam1"))
        #expect(Topic.parse("faces/cam1") == nil)
        #expect(Topic.parse("nope/cam1/") == nil)
        #expect(Topic.parse("faces/a/b/") == nil)
    }

    @Test func validatesSourceIDs() {
        #expect(SourceID.isValid("cam-1.front_door"))
        #expect(!SourceID.isValid(""))
        #expect(!SourceID.isValid("a/b"))
        #expect(!SourceID.isValid("-cam"))
        #expect(!SourceID.isValid(String(repeating: "x", count: 65)))
    }
}

@Suite struct MessageTests {
    @Test func roundTripsThroughJSON() throws {
        let face = FaceObject(
            faceID: 7, bounds: NormalizedRect(x: 0.25, y: 0.5, width: 0.125, height: 0.25), rollAngle: 333,
            yawAngle: nil, time: MediaTime(value: 512, timescale: 15360), duration: nil, score: 1.2285721935762282,
            subDetector: 3)
        let message = Message(
            kind: .faces, source: "cam1", seq: 42, time: face.time, wallTimeNs: 1_795_000_000_123_456_789, faces: [face]
        )
        let json = try JSONEncoder().encode(message)
        let decoded = try JSONDecoder().decode(Message.self, from: json)
        #expect(decoded == message)
        let object = try JSONSerialization.jsonObject(with: json) as! [String: Any]
        #expect(object["v"] as? Int == 1)
        #expect((object["faces"] as! [[String: Any]])[0]["yawAngle"] == nil)
    }

    @Test func intersectionOverUnion() {
        let a = NormalizedRect(x: 0, y: 0, width: 0.2, height: 0.2)
        #expect(a.intersectionOverUnion(a) == 1)
        #expect(a.intersectionOverUnion(NormalizedRect(x: 0.1, y: 0, width: 0.2, height: 0.2)) == 1.0 / 3.0)
        #expect(a.intersectionOverUnion(NormalizedRect(x: 0.5, y: 0.5, width: 0.1, height: 0.1)) == 0)
    }

    @Test func packsAndReadsPlanes() {
        let y = (0..<16).map { UInt8($0) }
        let u = [UInt8](repeating: 1, count: 4)
        let v = [UInt8](repeating: 2, count: 4)
        let buffer = PixelBuffer(format: .yuv420p, width: 4, height: 4, packedPlanes: [y, u, v])
        #expect(buffer.packedBytes(plane: 0) == y)
        #expect(buffer.packedBytes(plane: 2) == v)
        #expect(buffer.lumaPlane?.bytesPerRow == 4)
        #expect(PixelBuffer(format: .rgb24, width: 2, height: 1, packedPlanes: [[1, 2, 3, 4, 5, 6]]).lumaPlane == nil)
    }
}

@Suite struct NamedThreadTests {
    /// The kernel's name of a started thread, as `ps -L` reads it: set, and cut to the whole
    /// characters that fit in 15 bytes; on every one of 100 threads, because a thread that
    /// runs before `start()` returns is where naming went wrong.
    @Test(arguments: [
        ("capture", "capture"), ("recorder-entrance-north", "recorder-entran"), ("ééééééééé", "ééééééé"),
    ])
    func theKernelSeesTheName(name: String, expected: String) async {
        for _ in 0..<100 {
            let seen: String = await withCheckedContinuation { continuation in
                Thread.start(named: name) {
                    let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                    continuation.resume(returning: comm.trimmingCharacters(in: .newlines))
                }
            }
            #expect(seen == expected)
        }
    }
}
