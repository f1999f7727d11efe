import SightlineCore

/// What one read from a source yields: a small flow result, in the manner of GStreamer.
public enum SourceRead: Sendable {
    case frame(VideoFrame)
    /// Something was read but skipped (a corrupt packet or frame); the source goes on.
    case skipped(reason: String)
    /// The source has no more frames.
    case end
}

/// Where frames come from: a camera, a file, a network stream.
///
/// A source is owned by one thread, the capture session's capture thread, which calls
/// every requirement except `cancel()`.
public protocol FrameSource: AnyObject {
    /// What is being read, once it is open.
    var input: InputDescription { get }

    /// Blocks until the next frame is available. Throws `SightlineError.sourceFailed` when
    /// the source cannot go on.
    func read() throws -> SourceRead

    /// Makes a blocked or future `read()` return `.end` soon. Called from any thread.
    func cancel()
}
