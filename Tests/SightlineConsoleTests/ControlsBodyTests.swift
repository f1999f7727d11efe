import Foundation
import SightlineCapture
import SightlineHTTP
import SightlineTesting
import Testing

/// The body of `PUT /api/sources/<id>/controls` comes from anyone who may ask: whatever it
/// holds, it is a list of 1-64 `NAME=VALUE` requests or a 400 with one line, never a trap.
@Suite struct ControlsBodyTests {
    @Test func numbersSwitchesAndNames() throws {
        let requests = try SourceRoutes.parse(
            Data(#"{"brightness": 140, "exposureMode": "locked", "horizontal_flip": true, "hue": -20}"#.utf8))
        #expect(
            requests.map(\.description) == [
                "brightness=140", "exposureMode=locked", "horizontal_flip=1", "hue=-20",
            ])
    }

    @Test func whatIsNotAnObjectOfControlsIsOneLine() {
        let bodies = [
            "", "[]", "{}", "null", #"{"brightness": 1.5}"#, #"{"brightness": null}"#, #"{"brightness": [1]}"#,
            #"{"brightness": {"a": 1}}"#, #"{"": 1}"#, #"{"brightness": 99999999999999999999}"#,
            "{" + (0..<65).map { #""c\#($0)": 1"# }.joined(separator: ",") + "}",
            #"{"\#(String(repeating: "a", count: 65))": 1}"#,
        ]
        for body in bodies {
            #expect(throws: HTTPRefusal.self, "\(body.prefix(60))") { try SourceRoutes.parse(Data(body.utf8)) }
        }
    }

    /// Mutated bodies: each is refused or parsed into at most 64 requests with short names
    /// and values.
    @Test func mutatedBodiesNeverTrap() {
        var random = SplitMix(seed: 3838)
        let seed = Array(#"{"brightness": 140, "exposureMode": "locked", "flip": true}"#.utf8)
        let punctuation = Array(#"{}[]":,=-.0e\ "#.utf8)
        var accepted = 0
        for _ in 0..<20_000 {
            var bytes = seed
            for _ in 0..<(1 + random.next(below: 6)) {
                let position = random.next(below: bytes.count)
                switch random.next(below: 3) {
                case 0: bytes[position] = punctuation[random.next(below: punctuation.count)]
                case 1: bytes.remove(at: position)
                default: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: position)
                }
                if bytes.isEmpty { bytes = [0x7B] }
            }
            guard let requests = try? SourceRoutes.parse(Data(bytes)) else { continue }
            accepted += 1
            #expect((1...64).contains(requests.count))
            #expect(requests.allSatisfy { !$0.name.isEmpty && $0.name.count <= 64 && $0.value.count <= 64 })
        }
        #expect(accepted > 100)
    }
}
