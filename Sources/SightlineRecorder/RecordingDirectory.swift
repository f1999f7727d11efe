import Foundation
import Logging
import SightlineCore
import SightlineMovie

/// A directory recordings are written to: made ready before the first file, and the
/// unfinished files a crash left there finalised.
package enum RecordingDirectory {
    /// Creates the directory if needed and checks that files can be written there.
    package static func prepare(_ directory: String) throws {
        if (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)) == nil {
            // Foundation's message hides why; the system call says it.
            if mkdir(directory, 0o755) != 0, errno != EEXIST {
                throw SightlineError.invalidArgument(
                    "cannot record to \(directory): \(String(cString: strerror(errno)))")
            }
        }
        guard access(directory, W_OK) == 0 else {
            throw SightlineError.invalidArgument("cannot record to \(directory): \(String(cString: strerror(errno)))")
        }
    }

    /// Finalises recordings a crash left in `directory`, keeping every complete fragment, and
    /// removes those cut off before their first fragment (they hold no frame). Files another
    /// recorder is writing hold its lock and are left alone.
    package static func recoverUnfinished(in directory: String, logger: Logger) {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in files.sorted() where name.hasSuffix(".mov") {
            let path = "\(directory)/\(name)"
            do {
                let outcome = try MovieRecovery.recover(
                    path: path, isRecording: RecordingName.sourceID(of: name) != nil)
                switch outcome {
                case .alreadyFinalised, .inUse: continue
                case .recovered(let fragments, let discarded):
                    logger.notice(
                        "recovered an unfinished recording",
                        metadata: ["file": "\(path)", "fragments": "\(fragments)", "discardedBytes": "\(discarded)"])
                case .removedEmpty:
                    logger.notice("removed \(path): \(MovieRecovery.describe(outcome))")
                }
            } catch {
                logger.error("could not recover \(path): \(error)")
            }
        }
    }
}
