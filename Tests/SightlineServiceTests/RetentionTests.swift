import Foundation
import Logging
import SightlineCore
import SightlineMovie
import SightlineRecorder
import SightlineTesting
import Testing

/// Retention over real recordings: the oldest finished files go first, by age or by total
/// size; a file a writer holds, a file a crash left unfinished that cannot be recovered, and
/// a file not named as a recording never go.
@Suite struct RetentionTests {
    let recording: SampleRecording
    let directory: TemporaryDirectory
    let logger = Logger(label: "retention-test")

    init() throws {
        recording = try SampleRecording()
        directory = try TemporaryDirectory("retention")
    }

    /// A finished recording of `source`, last written `age` seconds ago.
    @discardableResult
    private func recordingFile(_ source: String, minute: Int, age: Double) throws -> String {
        let path = directory.file(String(format: "\(source)-20261124T10%02d00Z.mov", minute))
        try recording.write(to: path)
        try setAge(path, age)
        return path
    }

    private func setAge(_ path: String, _ age: Double) throws {
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(-age)], ofItemAtPath: path)
    }

    private func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    private func size(_ path: String) throws -> UInt64 {
        try FileManager.default.attributesOfItem(atPath: path)[.size] as! UInt64
    }

    @Test func filesOlderThanTheLimitAreDeletedOldestFirst() throws {
        for (minute, age) in [(0, 500.0), (1, 400), (2, 100), (3, 10)] {
            try recordingFile("door", minute: minute, age: age)
        }
        try recordingFile("yard", minute: 0, age: 900)
        let retention = RecordingRetention(
            rules: [.init(policy: .init(keep: .seconds(300)), directories: [directory.path], sourceID: "door")],
            logger: logger)
        let deleted = retention.enforce()
        #expect(
            deleted.map { URL(fileURLWithPath: $0).lastPathComponent } == [
                "door-20261124T100000Z.mov", "door-20261124T100100Z.mov",
            ])
        #expect(try names() == ["door-20261124T100200Z.mov", "door-20261124T100300Z.mov", "yard-20261124T100000Z.mov"])
        #expect(retention.deleted == ["door": 2])
        #expect(retention.enforce().isEmpty)
    }

    @Test func theOldestGoUntilTheTotalFitsAndAnOverallRuleSpansSources() throws {
        let a = try recordingFile("door", minute: 0, age: 50)
        try recordingFile("yard", minute: 1, age: 40)
        try recordingFile("door", minute: 2, age: 30)
        try recordingFile("yard", minute: 3, age: 20)
        let each = try size(a)
        let retention = RecordingRetention(
            rules: [
                .init(policy: .init(maximumTotal: each * 2 + each / 2), directories: [directory.path], sourceID: nil)
            ],
            logger: logger)
        #expect(retention.enforce().count == 2)
        #expect(try names() == ["door-20261124T100200Z.mov", "yard-20261124T100300Z.mov"])
        #expect(retention.deleted == ["door": 1, "yard": 1])
    }

    @Test func aFileBeingWrittenOrNotARecordingIsNeverDeleted() throws {
        let writing = directory.file("door-20261124T100000Z.mov")
        let writer = try recording.write(to: writing, finish: false)
        try setAge(writing, 1000)
        let other = directory.file("holiday.mov")
        try recording.write(to: other)
        try setAge(other, 1000)
        let retention = RecordingRetention(
            rules: [
                .init(policy: .init(keep: .seconds(1), maximumTotal: 0), directories: [directory.path], sourceID: nil)
            ],
            logger: logger)
        #expect(retention.enforce().isEmpty)
        #expect(try names() == ["door-20261124T100000Z.mov", "holiday.mov"])
        withExtendedLifetime(writer) {}
    }

    @Test func aCrashLeftoverIsRecoveredBeforeItCounts() throws {
        let path = directory.file("door-20261124T100000Z.mov")
        try recording.write(to: path, fragmentInterval: MediaTime(value: 1, timescale: 1), finish: false)
        try setAge(path, 1000)
        let retention = RecordingRetention(
            rules: [.init(policy: .init(keep: .seconds(1)), directories: [directory.path], sourceID: "door")],
            logger: logger)
        #expect(retention.enforce() == [path])
    }
}
