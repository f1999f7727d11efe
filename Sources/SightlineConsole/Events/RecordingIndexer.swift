import Foundation
import Logging
import NIOPosix
import ServiceLifecycle
import SightlineCore

/// Keeps the event index in step with the recordings directories: at start and every
/// `interval`, reads the recordings that are new or have grown since they were read, and
/// forgets the ones that went (retention, or a person deleting them).
package struct RecordingIndexer: Service {
    let index: EventIndex
    let library: RecordingLibrary
    let interval: Duration
    let logger: Logger

    package func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                var first = true
                while true {
                    let (read, removed) = try await NIOThreadPool.singleton.runIfActive { try scan() }
                    if first || read + removed > 0 {
                        logger.log(
                            level: first ? .info : .debug, "event index in step with the recordings",
                            metadata: ["read": "\(read)", "removed": "\(removed)"])
                    }
                    first = false
                    try await Task.sleep(for: interval)
                }
            }
        } catch is CancellationError {
            return
        }
    }

    /// One pass: how many recordings were read and how many removed.
    @discardableResult
    package func scan() throws -> (read: Int, removed: Int) {
        let indexed = try index.indexedRecordings()
        // Only new and grown files are opened: a directory of months of segments is listed,
        // not read, every pass.
        let sizes = library.sizes()
        var read = 0
        for (name, size) in sizes where indexed[name] != size {
            // A file that cannot be read now (cut mid-write) is tried again at the next pass.
            guard let summary = try? library.summary(of: name), summary.error == nil,
                let metadata = try? library.metadata(of: name).player
            else { continue }
            let camera = RecordingName.sourceIDOrStem(of: summary.name)
            let events = metadata.objects.map {
                IndexedEvent($0, camera: camera, recording: summary.name, recordingStart: summary.start)
            }
            try index.replace(
                IndexedRecording(
                    name: summary.name, camera: camera, start: summary.start, duration: summary.duration,
                    size: summary.size),
                events: events)
            read += 1
        }
        let gone = indexed.keys.filter { sizes[$0] == nil }
        try index.remove(recordings: gone)
        return (read, gone.count)
    }
}
