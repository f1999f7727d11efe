/// Errors a user can act on. Each prints as one line that says what happened and to what.
public enum SightlineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A file or URL could not be opened or read as video.
    case sourceUnavailable(source: String, reason: String)
    /// The source opened but failed while reading.
    case sourceFailed(source: String, reason: String)
    /// An endpoint string that ZeroMQ cannot use, or one we refuse.
    case invalidEndpoint(String, reason: String)
    case endpointInUse(String)
    case messaging(String)
    /// A detector (faces, codes) or the frames output could not process a frame.
    case detector(String)
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .sourceUnavailable(let source, let reason): "cannot open \(source): \(reason)"
        case .sourceFailed(let source, let reason): "reading \(source) failed: \(reason)"
        case .invalidEndpoint(let endpoint, let reason): "invalid endpoint '\(endpoint)': \(reason)"
        case .endpointInUse(let endpoint): "endpoint \(endpoint) is already in use by another process"
        case .messaging(let reason): "messaging error: \(reason)"
        case .detector(let reason): "detector error: \(reason)"
        case .invalidArgument(let reason): reason
        }
    }
}
