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
    /// A model file (landmarks, recognition) is missing or is not what it should be.
    case model(path: String, reason: String)
    /// A face gallery that is not ours, is corrupt, or cannot be written.
    case gallery(path: String, reason: String)

    public var description: String {
        switch self {
        case .sourceUnavailable(let source, let reason): "cannot open \(source): \(reason)"
        case .sourceFailed(let source, let reason): "reading \(source) failed: \(reason)"
        case .invalidEndpoint(let endpoint, let reason): "invalid endpoint '\(endpoint)': \(reason)"
        case .endpointInUse(let endpoint): "endpoint \(endpoint) is already in use by another process"
        case .messaging(let reason): "messaging error: \(reason)"
        case .detector(let reason): "detector error: \(reason)"
        case .invalidArgument(let reason): reason
        case .model(let path, let reason): "model \(path): \(reason); fetch it with tools/fetch-models.sh"
        case .gallery(let path, let reason): "face gallery \(path): \(reason)"
        }
    }
}
