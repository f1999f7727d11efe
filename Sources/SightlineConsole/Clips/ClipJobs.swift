import Foundation
import Logging
import NIOPosix
import SightlineCore
import SightlineExport
import Synchronization

/// Clips made from the console's pages: a recording trimmed with its metadata (`.mov`) or
/// with the boxes burned in (`.mp4`), made on NIO's thread pool while the page shows the
/// progress, then downloaded under a name that says camera, time and who was in it.
///
/// Bounded: at most two clips are made at once and twelve kept, a clip is at most an hour,
/// and each is deleted an hour after it was made (and all of them with the console).
package final class ClipJobs: Sendable {
    package struct Status: Sendable, Encodable {
        package enum State: String, Sendable, Encodable { case making, done, failed }
        package var id: String
        package var state: State
        /// 0 to 1.
        package var fraction: Double
        /// The file's name when downloaded.
        package var name: String
        package var bytes: UInt64?
        package var error: String?
    }

    private struct Job {
        var status: Status
        var path: String
        var made: ContinuousClock.Instant
    }

    private let directory: String
    private let jobs = Mutex<[String: Job]>([:])
    private let logger: Logger
    static let running = 2
    static let kept = 12
    static let longest = 3600.0
    static let keptFor = Duration.seconds(3600)

    package init(logger: Logger) {
        // One directory per console: each removes its own when it goes.
        directory = NSTemporaryDirectory() + "sightline-clips-\(UUID().uuidString.lowercased())"
        self.logger = logger
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// Starts making a clip: `make` writes it to the path it is given, reporting progress;
    /// throws `ClipRequestError` when the request cannot be met now.
    package func start(
        name: String, burnIn: Bool,
        make: @escaping @Sendable (_ output: String, _ progress: @escaping ExportProgress) throws -> ExportSummary
    ) throws -> Status {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let id = UUID().uuidString.lowercased()
        let output = "\(directory)/\(id).\(burnIn ? "mp4" : "mov")"
        let status = Status(id: id, state: .making, fraction: 0, name: name)
        try jobs.withLock { jobs in
            // Clips an hour old go first, then the oldest finished ones beyond the limit.
            let now = ContinuousClock.now
            for (key, job) in jobs where job.status.state != .making && now - job.made > Self.keptFor {
                try? FileManager.default.removeItem(atPath: job.path)
                jobs[key] = nil
            }
            guard jobs.values.filter({ $0.status.state == .making }).count < Self.running else {
                throw ClipRequestError("two clips are being made; try again when one is done")
            }
            while jobs.count >= Self.kept,
                let oldest = jobs.filter({ $0.value.status.state != .making }).min(by: { $0.value.made < $1.value.made }
                )
            {
                try? FileManager.default.removeItem(atPath: oldest.value.path)
                jobs[oldest.key] = nil
            }
            guard jobs.count < Self.kept else { throw ClipRequestError("too many clips are being made") }
            jobs[id] = Job(status: status, path: output, made: now)
        }
        let progress: ExportProgress = { [self] fraction, _ in
            jobs.withLock { $0[id]?.status.fraction = min(max(fraction, 0), 0.99) }
        }
        NIOThreadPool.singleton.submit { [self] _ in
            do {
                let summary = try make(output, progress)
                jobs.withLock { jobs in
                    jobs[id]?.status.state = .done
                    jobs[id]?.status.fraction = 1
                    jobs[id]?.status.bytes = summary.bytes
                }
                logger.info("clip made", metadata: ["clip": "\(name)"])
            } catch {
                jobs.withLock { jobs in
                    jobs[id]?.status.state = .failed
                    jobs[id]?.status.error = "\(error)"
                }
                logger.warning("a clip could not be made: \(error)", metadata: ["clip": "\(name)"])
            }
        }
        return status
    }

    package func status(_ id: String) -> Status? { jobs.withLock { $0[id]?.status } }

    /// The finished clip's file and its download name.
    package func file(_ id: String) -> (path: String, name: String)? {
        jobs.withLock { jobs in
            guard let job = jobs[id], job.status.state == .done else { return nil }
            return (job.path, job.status.name)
        }
    }
}

package struct ClipRequestError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
