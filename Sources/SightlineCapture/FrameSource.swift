import SightlineCore

/// What one read from a source yields: a small flow result, in the manner of GStreamer.
package enum SourceRead: Sendable {
    case frame(VideoFrame)
    /// Something was read but skipped (a corrupt packet or frame), or `count` frames were
    /// lost before they reached us (a driver's sequence gap); the source goes on.
    case skipped(reason: String, count: Int = 1)
    /// The device failed or disappeared; the source is trying to get it back.
    case interrupted(reason: String)
    /// Frames flow again after an interruption.
    case resumed
    /// The source has no more frames.
    case end
}

/// Where frames come from: a camera, a file, a network stream.
///
/// A source is owned by one thread, the capture session's capture thread, which calls
/// every requirement except `cancel()`.
package protocol FrameSource: AnyObject {
    /// What is being read, once it is open.
    var input: InputDescription { get }

    /// Blocks until the next frame is available. Throws `SightlineError.sourceFailed` when
    /// the source cannot go on.
    func read() throws -> SourceRead

    /// Makes a blocked or future `read()` return `.end` soon. Called from any thread.
    func cancel()

    /// Why the source ended, when it was not simply the end of the media.
    var endReason: String? { get }
}

extension FrameSource {
    package var endReason: String? { nil }
}
