import Foundation
import SightlineCore
import SightlineTesting
import Testing

@testable import SightlineBus

/// The message decoder takes whatever other services send: it must never crash, and what
/// it accepts must hold together. Mutation fuzzing seeded from the committed corpus of real
/// messages (Corpus/, one `topic` line then the JSON). Short by default;
/// `SIGHTLINE_FUZZ_SECONDS=300` runs it for five minutes.
@Suite struct MessageFuzzTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus")

    static func seeds() throws -> [[[UInt8]]] {
        try FileManager.default.contentsOfDirectory(at: corpus, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "msg" }.sorted { $0.path < $1.path }
            .map { url in
                let text = try String(contentsOf: url, encoding: .utf8)
                let newline = text.firstIndex(of: "\n")!
                return [Array(text[..<newline].utf8), Array(text[text.index(after: newline)...].utf8)]
            }
    }

    @Test func everySeedDecodes() throws {
        let seeds = try Self.seeds()
        #expect(seeds.count >= 10)
        for seed in seeds {
            let received = try Subscriber.decode(seed).get()
            if let group = received.message.metadata { _ = try group.validated() }
            try received.message.objects?.validated()
        }
    }

    /// A detector may send the shape docs/protocol.md shows, without `seq` or `wallTimeNs`.
    @Test func anObjectsGroupAsADetectorSendsIt() throws {
        let seed = try #require(try Self.seeds().first { String(decoding: $0[0], as: UTF8.self) == "objects/cam1/" })
        let message = try Subscriber.decode(seed).get().message
        #expect(message.seq == 0 && message.wallTimeNs == 0)
        #expect(message.time == MediaTime(value: 76800, timescale: 15360))
        let group = try #require(message.objects)
        try group.validated()
        #expect(group.detector == "people" && group.items.map(\.type) == ["humanBody", "org.example.forklift"])
        #expect(group.items[0].label == "person" && group.items[0].confidence == 0.92 && group.items[0].id == nil)
        #expect(group.items[1].id == 17 && group.items[1].objectID == 0)
    }

    /// Random groups, with values from everywhere a float or an integer can be: checking one
    /// never traps, and what it accepts is what docs/protocol.md promises.
    @Test func objectsGroupsAreCheckedWhateverTheyHold() {
        var random = SplitMix(seed: 7)
        let numbers: [Double] = [
            0, 0.5, 1, -0.5, 1.5, 2, 3, -1, -1.01, 1e300, -1e300, .infinity, -.infinity, .nan, .ulpOfOne, 0.999,
        ]
        let types = ["humanBody", "dogBody", "person", "org.example.x", "x.", ".x", "1a.b", "a.b-c_d", "", "a..b"]
        var accepted = 0
        for _ in 0..<20_000 {
            func number() -> Double { numbers[random.next(below: numbers.count)] }
            let count = [0, 1, 3, 256, 257][random.next(below: 5)]
            let items = (0..<count).map { _ in
                DetectedObject(
                    type: types[random.next(below: types.count)],
                    bounds: NormalizedRect(x: number(), y: number(), width: number(), height: number()),
                    confidence: random.next(below: 2) == 0 ? nil : number(),
                    id: [nil, 0, -1, 1 << 53, 5][random.next(below: 5)])
            }
            let group = DetectedObjectGroup(detector: ["people", "", "a b"][random.next(below: 3)], items: items)
            guard (try? group.validated()) != nil else { continue }
            accepted += 1
            #expect(group.items.count <= 256 && SourceID.isValid(group.detector))
            for item in group.items {
                let box = item.bounds
                #expect(box.width > 0 && box.height > 0 && box.x < 1 && box.y < 1)
                #expect(box.x + box.width > 0 && box.y + box.height > 0 && box.x >= -1 && box.y >= -1)
                #expect(item.confidence.map { (0...1).contains($0) } ?? true)
                #expect(item.id.map { $0 >= 0 && $0 < 1 << 52 } ?? true)
                #expect(DetectedObject.appleTypes.contains(item.type) || item.type.contains("."))
            }
        }
        #expect(accepted > 100)
    }

    @Test func fuzzTheDecoder() async throws {
        try await onAThreadOfItsOwn {
            let seconds = Double(ProcessInfo.processInfo.environment["SIGHTLINE_FUZZ_SECONDS"] ?? "") ?? 0
            let seeds = try Self.seeds()
            var random = SplitMix(seed: UInt64(ProcessInfo.processInfo.environment["SIGHTLINE_FUZZ_SEED"] ?? "") ?? 42)
            let deadline = Date().addingTimeInterval(seconds)
            var (runs, accepted) = (0, 0)
            while runs < 3000 || Date() < deadline {
                var frames = seeds[runs % seeds.count]
                for _ in 0...random.next(below: 4) { Self.mutate(&frames, &random) }
                if case .success(let received) = Subscriber.decode(frames) {
                    accepted += 1
                    // Whatever is accepted agrees with its topic.
                    #expect(Topic.make(kind: received.message.kind, source: received.message.source) == received.topic)
                    _ = try? received.message.metadata?.validated()
                    try? received.message.objects?.validated()
                }
                runs += 1
            }
            #expect(accepted > 0 && accepted < runs)
            if seconds > 0 {
                print("fuzzed the decoder with \(runs) inputs (\(accepted) accepted) in \(Int(seconds)) s")
            }
        }
    }

    static func mutate(_ frames: inout [[UInt8]], _ random: inout SplitMix) {
        switch random.next(below: 10) {
        case 0: frames.append(Array("x".utf8))
        case 1: _ = frames.popLast()
        case 2: frames = frames.reversed()
        default:
            guard !frames.isEmpty else { return }
            let part = random.next(below: frames.count)
            mutate(bytes: &frames[part], &random)
        }
    }

    static func mutate(bytes: inout [UInt8], _ random: inout SplitMix) {
        guard !bytes.isEmpty else {
            bytes = Array("{}".utf8)
            return
        }
        let at = random.next(below: bytes.count)
        // JSON fragments that stress a decoder: wrong types, extremes, deep nesting.
        let fragments = [
            "null", "-1", "1e999", "18446744073709551616", "-9223372036854775809", "\"\"", "[]", "{}", "true",
            "\"\\u0000\"", "\"\\ud800\"", String(repeating: "[", count: 200), "0.0000001", "\"mdta/\"",
            "\"metadata\"", "\"codes\"",
        ]
        switch random.next(below: 6) {
        case 0: bytes[at] ^= UInt8(1 << random.next(below: 8))
        case 1: bytes.removeSubrange(at...)
        case 2: bytes.insert(contentsOf: Array(fragments[random.next(below: fragments.count)].utf8), at: at)
        case 3:
            // Replace a JSON value (after a colon) with a fragment.
            if let colon = bytes[at...].firstIndex(of: UInt8(ascii: ":")) {
                let end = bytes[(colon + 1)...].firstIndex { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "}") }
                bytes.replaceSubrange(
                    (colon + 1)..<(end ?? bytes.count), with: Array(fragments[random.next(below: fragments.count)].utf8)
                )
            }
        case 4:
            let length = min(random.next(below: 32) + 1, bytes.count - at)
            bytes.insert(contentsOf: bytes[at..<at + length], at: random.next(below: bytes.count))
        default: bytes[at] = UInt8(truncatingIfNeeded: random.next(below: 256))
        }
    }
}
