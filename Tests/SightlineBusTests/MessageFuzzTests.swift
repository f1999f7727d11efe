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
        }
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
