import Foundation
import SightlineSamples
import SightlineTesting
import Testing

@testable import sightline

/// `serve`'s configuration file as someone hostile or careless writes it: nested
/// thousands deep, values past every range, mutated at random. Each is refused with lines
/// that name a line and a column and never echo more than 80 characters of a value; none
/// traps or overflows the stack.
@Suite struct ServeFileTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory("serve-file") }

    func problems(_ text: String) throws -> [String] {
        let path = directory.file("config-\(UUID().uuidString.prefix(8)).yml")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return ServeFile(path: path).problems.map { String($0.dropFirst(path.count)) }
    }

    static let valid = """
        publish: tcp://127.0.0.1:5599
        retention:
          keep: 7d
          max-total: 10G
        defaults:
          segment: 10m
          status-interval: 5
        sources:
          - source-id: lobby
            source: \(SampleMedia.faces640x480.path)
            realtime: true
            loop: true
          - source-id: shelf
            source: \(SampleMedia.faces640x480.path)
            detect: faces,barcodes
        """

    @Test func theValidConfigHasNoProblem() throws {
        #expect(try problems(Self.valid) == [])
    }

    @Test func nestingThousandsDeepIsRefusedBeforeParsing() throws {
        let deep = [
            "sources:\n  - source-id: a\n    upsample: " + String(repeating: "[", count: 5000)
                + String(repeating: "]", count: 5000),
            "sources:\n" + (0..<5000).map { String(repeating: " ", count: $0) + "- x:\n" }.joined(),
            "a: " + String(repeating: "{b: ", count: 5000) + String(repeating: "}", count: 5000),
        ]
        for text in deep {
            let found = try problems(text)
            #expect(found.count == 1 && found[0].contains("nested deeper than 64 levels"), "\(found)")
            #expect(found.allSatisfy { $0.range(of: #"^:\d+:\d+: "#, options: .regularExpression) != nil }, "\(found)")
        }
    }

    @Test func valuesPastEveryRangeAreRefusedOnTheirLine() throws {
        let cases: [(String, String, String)] = [
            ("segment", "9999999999999h", "segment"), ("keep", "99999999999999d", "keep"),
            ("max-total", "9999999999T", "max-total"), ("status-interval", "1e308", "status-interval"),
            ("fps", "nan", "fps"), ("fragment", "inf", "fragment"), ("reconnect-timeout", "-1", "reconnect-timeout"),
            ("network-timeout", "601", "network-timeout"), ("network-timeout", "0", "network-timeout"),
            ("crf", "99", "crf"),
            ("frames-size", "99999999999999999999x1", "frames-size"), ("metadata-rate", "0", "metadata-rate"),
        ]
        for (key, value, named) in cases {
            let text = Self.valid + "\n    \(key): \"\(value)\"\n"
            let found = try problems(text)
            #expect(found.count == 1, "\(key): \(value): \(found)")
            #expect(found.first?.hasPrefix(":16:") == true, "\(key): \(value): \(found)")
            #expect(found.first?.contains(named) == true, "\(key): \(value): \(found)")
        }
        // Source IDs that `serve` would refuse, refused by `serve --check` as well.
        for id in ["../x", "a/b", String(repeating: "a", count: 65), "-x"] {
            let found = try problems(
                Self.valid.replacingOccurrences(of: "source-id: shelf", with: "source-id: \"\(id)\""))
            #expect(found.count == 1, "\(id): \(found)")
            #expect(
                found.first?.hasPrefix(":13:") == true && found.first?.contains("source ID") == true, "\(id): \(found)")
        }
    }

    @Test func anMQTTSectionIsRunsOptionsAndBadValuesAreRefusedOnTheirLine() throws {
        let path = directory.file("mqtt.yml")
        try (Self.valid + "\nmqtt:\n  url: mqtt://127.0.0.1:1884\n  prefix: home/cams\n  qos: 0\n  queue: 50\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let file = ServeFile(path: path)
        #expect(file.problems == [])
        let mqtt = try #require(file.services.mqtt)
        #expect(mqtt.url == "mqtt://127.0.0.1:1884" && mqtt.prefix == "home/cams")
        #expect(mqtt.qos == 0 && mqtt.queueLimit == 50)
        for (section, named) in [
            ("  url: mqtt://x\n  prefix: a/#", "prefix"), ("  url: http://x", "mqtt://"), ("  prefix: a", "url"),
            ("  url: mqtt://x\n  qos: 7", "QoS"), ("  url: mqtt://x\n  colour: red", "unknown key 'mqtt.colour'"),
        ] {
            let found = try problems(Self.valid + "\nmqtt:\n" + section + "\n")
            #expect(found.count == 1 && found[0].contains(named), "\(section): \(found)")
            #expect(found.first?.range(of: #"^:\d+:\d+: "#, options: .regularExpression) != nil, "\(found)")
        }
    }

    /// Sources that analyse faces divide the cores among them, unless one says how many threads
    /// its scans take; a source that does not analyse faces takes none.
    @Test func faceSourcesShareTheCores() throws {
        let path = directory.file("cores.yml")
        let clip = SampleMedia.faces640x480.path
        try """
        sources:
          - source-id: a
            source: \(clip)
          - source-id: b
            source: \(clip)
          - source-id: c
            source: \(clip)
            detector-threads: 3
          - source-id: d
            source: \(clip)
            detect: barcodes
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let file = ServeFile(path: path)
        #expect(file.problems == [])
        let threads = Dictionary(
            uniqueKeysWithValues: file.services.sources.map { ($0.id, $0.pipeline?.detection.faces.threads) })
        // d keeps the default, all the cores.
        let cores = try #require(threads["d"] ?? nil)
        #expect(threads == ["a": max(1, cores / 3), "b": max(1, cores / 3), "c": 3, "d": cores])
    }

    /// `controls:` is a mapping of a camera's controls, each becoming `--control NAME=VALUE`.
    @Test func aCamerasControlsAreAMapping() throws {
        let path = directory.file("controls.yml")
        try
            (Self.valid + "\n  - source-id: door\n    source: /dev/video9\n    controls:\n      brightness: 140\n"
            + "      exposureMode: locked\n").write(toFile: path, atomically: true, encoding: .utf8)
        let file = ServeFile(path: path)
        #expect(file.problems == [])
        let door = try #require(file.services.sources.first { $0.id == "door" }?.pipeline?.source)
        guard case .camera(_, let options, _) = door else {
            Issue.record("door is not a camera: \(door)")
            return
        }
        #expect(
            options.controls == [
                .init(name: "brightness", value: "140"), .init(name: "exposureMode", value: "locked"),
            ])
        for (controls, named) in [
            ("\n    controls:\n      brightness: {a: 1}", "controls"),
            ("\n    controls: [brightness=1]", "'controls' takes one value"),
        ] {
            let found = try problems(Self.valid + "\n  - source-id: door\n    source: /dev/video9" + controls + "\n")
            #expect(found.count == 1 && found[0].contains(named), "\(controls): \(found)")
        }
        let onAFile = try problems(Self.valid + "\n    controls:\n      brightness: 1\n")
        #expect(onAFile.count == 1 && onAFile[0].contains("control goes with a camera"), "\(onAFile)")
    }

    /// Every problem of a file in one pass, each once: a bad value does not hide a duplicate
    /// ID or a directory that cannot be written, and a bad default is reported on its line
    /// once, not for every source.
    @Test func everyProblemInOnePassEachOnce() throws {
        let file = directory.file("a-file")
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let found = try problems(
            Self.valid + "\n    fps: nan\n  - source-id: lobby\n    source: /dev/video9\n    record: \(file)\n")
        #expect(found.count == 3, "\(found)")
        #expect(found.contains { $0.hasPrefix(":16:") && $0.contains("fps") }, "\(found)")
        #expect(
            found.contains { $0.hasPrefix(":17:16:") && $0.contains("source ID 'lobby' is already used at 9:") },
            "\(found)")
        #expect(
            found.contains { $0.hasPrefix(":17:") && $0.contains("cannot record to \(file): it is a file") }, "\(found)"
        )
        let defaulted = try problems(
            Self.valid.replacingOccurrences(of: "  status-interval: 5", with: "  status-interval: 5\n  crf: 99"))
        #expect(defaulted.count == 1 && defaulted[0].hasPrefix(":8:") && defaulted[0].contains("crf"), "\(defaulted)")
    }

    /// `run`'s parser stops at a source's first bad value; the file's check does not.
    @Test func everyBadValueOfASourceIsReportedOnItsLine() throws {
        let found = try problems(
            Self.valid + "\n    fps: nan\n    crf: 99\n    upsample: -1\n    status-interval: 0\n    size: 640x480\n")
        #expect(found.count == 5, "\(found)")
        for (line, key) in [
            (16, "fps"), (17, "crf"), (18, "upsample -1 must be from 0 to 3"), (19, "status-interval"), (20, "size"),
        ] {
            #expect(found.contains { $0.hasPrefix(":\(line):") && $0.contains(key) }, "\(key): \(found)")
        }
    }

    @Test func longValuesAreCutTo80Characters() throws {
        let long = String(repeating: "x", count: 10_000_000)
        for text in [Self.valid + "\n    fps: \(long)\n", Self.valid + "\n    \(long): 1\n", "colour: \(long)\n"] {
            let found = try problems(text)
            #expect(!found.isEmpty)
            for line in found { #expect(line.count < 400, "\(line.prefix(200))") }
        }
    }

    /// 1,000 configurations mutated from the valid one: each parses or is refused with
    /// lines of the form `:LINE:COLUMN: message`; none traps.
    @Test func mutatedConfigurationsNeverTrap() async throws {
        try await onAThreadOfItsOwn {
            let runs = Int(ProcessInfo.processInfo.environment["SIGHTLINE_CONFIG_MUTATIONS"] ?? "") ?? 1000
            var random = SplitMix(seed: 1_000)
            let fragments = [
                "[", "]", "{", "}", ": ", "- ", "\n", "  ", "&a ", "*a ", "<<: *a\n", "!!binary ", "\"", "'", "#",
                "9999999999999999999999", "-1", "1e308", "nan", ".inf", "~", "0x", "%TAG ! !\n", "? ", "|\n", "\t",
                "\u{0}",
                "sources:", "source-id: x", "defaults:", "\u{FEFF}",
            ]
            var (accepted, refused) = (0, 0)
            for _ in 0..<runs {
                var text = Array(Self.valid.unicodeScalars)
                for _ in 0...random.next(below: 4) {
                    let at = random.next(below: text.count + 1)
                    switch random.next(below: 3) {
                    case 0:
                        text.insert(contentsOf: fragments[random.next(below: fragments.count)].unicodeScalars, at: at)
                    case 1:
                        if at < text.count {
                            text.removeSubrange(at..<min(text.count, at + random.next(below: 20) + 1))
                        }
                    default:
                        let length = min(random.next(below: 40) + 1, text.count - min(at, text.count))
                        let start = min(at, text.count)
                        text.insert(contentsOf: text[start..<start + length], at: random.next(below: text.count + 1))
                    }
                }
                var string = ""
                string.unicodeScalars.append(contentsOf: text)
                let found = try problems(string)
                if found.isEmpty { accepted += 1 } else { refused += 1 }
                for line in found {
                    #expect(line.range(of: #"^:\d+:\d+: "#, options: .regularExpression) != nil, "\(line)")
                }
            }
            #expect(accepted > 0 && refused > 0)
            print("mutated configurations: \(accepted) accepted, \(refused) refused")
        }
    }
}
