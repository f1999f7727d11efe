import Foundation
import Logging
import SightlineCore
import SightlineMovie
import Synchronization

/// How much recording to keep: by age, by total size, or both. Past either, the oldest
/// finished recordings go first.
package struct RetentionPolicy: Sendable, Equatable {
    /// Delete recordings whose last write is older than this.
    package var keep: Duration?
    /// Delete the oldest recordings while all of them together (the ones being written
    /// included) take more bytes than this.
    package var maximumTotal: UInt64?

    package init(keep: Duration? = nil, maximumTotal: UInt64? = nil) {
        self.keep = keep
        self.maximumTotal = maximumTotal
    }

    package var isEmpty: Bool { keep == nil && maximumTotal == nil }
}

/// Deletes the oldest recordings once a retention policy is passed, so a recorder that runs
/// for months keeps recording instead of stopping at a full disk (`minimumFreeSpace` stays
/// the last guard).
///
/// Only files named as recorders name them (`<source>-<UTC start>.mov`) are candidates, and
/// only once finished: a file a writer still holds (its lock) or that a crash left
/// unfinished and recovery has not yet finalised is never deleted. Each deletion is one log
/// line and counted by source. Thread-safe: every recorder of a process may share one.
package final class RecordingRetention: Sendable {
    /// One policy over a set of directories: one source's recordings, or all sources'.
    package struct Rule: Sendable {
        package var policy: RetentionPolicy
        package var directories: [String]
        /// nil: every source's recordings in these directories (an overall limit).
        package var sourceID: String?

        package init(policy: RetentionPolicy, directories: [String], sourceID: String?) {
            self.policy = policy
            self.directories = directories
            self.sourceID = sourceID
        }

        /// One recorder's own policy, over its own files.
        package init(_ policy: RetentionPolicy, for recorder: RecorderConfiguration) {
            self.init(policy: policy, directories: [recorder.directory], sourceID: recorder.sourceID)
        }
    }

    package let rules: [Rule]
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var deleted: [String: Int] = [:]
        /// When the last pass ran: recorders sharing this retention ask every minute, and one
        /// pass serves them all.
        var lastPass: ContinuousClock.Instant?
        /// Files found finalised, by path, with the size and time they had then: checked
        /// once, not on every pass.
        var finalised: [String: FileStamp] = [:]
    }

    private struct FileStamp: Equatable {
        var size: UInt64
        var modified: Date
    }

    private struct Recording {
        var path: String
        var sourceID: String
        var stamp: FileStamp
    }

    package init(rules: [Rule], logger: Logger) {
        self.rules = rules.filter { !$0.policy.isEmpty }
        self.logger = logger
    }

    /// Recordings deleted so far, by source.
    package var deleted: [String: Int] { state.withLock { $0.deleted } }

    /// Applies every rule now; returns the files deleted.
    @discardableResult
    package func enforce(now: Date = Date()) -> [String] {
        state.withLock { state in
            state.lastPass = .now
            return rules.flatMap { enforce($0, now: now, state: &state) }
        }
    }

    /// Applies every rule unless a pass ran within `interval`: files age while none is
    /// finished (a source that stopped), and however many recorders ask, one pass will do.
    package func enforceIfDue(every interval: Duration = .seconds(60)) {
        let due = state.withLock { state in state.lastPass.map { .now - $0 >= interval } ?? true }
        if due { enforce() }
    }

    private func enforce(_ rule: Rule, now: Date, state: inout State) -> [String] {
        var recordings = rule.directories.flatMap { Self.recordings(in: $0, sourceID: rule.sourceID) }
        recordings.sort { $0.stamp.modified < $1.stamp.modified }
        var total = recordings.reduce(0) { $0 + $1.stamp.size }
        var removed: [String] = []
        for recording in recordings {
            let expired = rule.policy.keep.map { now.timeIntervalSince(recording.stamp.modified) > $0.seconds } ?? false
            let overTotal = rule.policy.maximumTotal.map { total > $0 } ?? false
            guard expired || overTotal else { continue }
            guard isFinalised(recording, state: &state) else { continue }
            total -= recording.stamp.size
            state.finalised[recording.path] = nil
            guard unlink(recording.path) == 0 else {
                // Gone already: another process's retention over the same directory.
                if errno != ENOENT {
                    logger.error("retention: cannot delete \(recording.path): \(String(cString: strerror(errno)))")
                }
                continue
            }
            state.deleted[recording.sourceID, default: 0] += 1
            removed.append(recording.path)
            logger.notice(
                "retention: deleted \(recording.path)",
                metadata: [
                    "source": "\(recording.sourceID)", "bytes": "\(recording.stamp.size)",
                    "reason":
                        "\(expired ? "older than \(rule.policy.keep!)" : "over \(rule.policy.maximumTotal!) bytes")",
                ])
        }
        return removed
    }

    /// Finalised and not being written: recovery says so without changing it (or finalises
    /// a crash's leftover, which start-up recovery would have done anyway).
    private func isFinalised(_ recording: Recording, state: inout State) -> Bool {
        if state.finalised[recording.path] == recording.stamp { return true }
        switch try? MovieRecovery.recover(path: recording.path, isRecording: true) {
        case .alreadyFinalised, .recovered:
            guard let stamp = Self.stamp(recording.path) else { return false }
            state.finalised[recording.path] = stamp
            return true
        case .removedEmpty(let bytes):
            logger.notice("retention: removed \(recording.path), which held no frame (\(bytes) bytes)")
            return false
        case .inUse, nil:
            return false
        }
    }

    private static func recordings(in directory: String, sourceID: String?) -> [Recording] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name in
            guard let source = RecordingName.sourceID(of: name), sourceID == nil || source == sourceID,
                let stamp = stamp("\(directory)/\(name)")
            else { return nil }
            return Recording(path: "\(directory)/\(name)", sourceID: source, stamp: stamp)
        }
    }

    private static func stamp(_ path: String) -> FileStamp? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        let modified = Date(
            timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
        return FileStamp(size: UInt64(info.st_size), modified: modified)
    }
}
