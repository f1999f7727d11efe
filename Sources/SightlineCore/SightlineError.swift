/// Errors a user can act on. Each prints as one line that says what happened and to what.
///
/// A struct over a private enum (as swift-service-lifecycle's `ServiceRunnerError`), so
/// that kinds of error can be added without breaking a caller's exhaustive switch.
public struct SightlineError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case sourceUnavailable(source: String, reason: String)
        case sourceFailed(source: String, reason: String)
        case invalidEndpoint(String, reason: String)
        case endpointInUse(String)
        case messaging(String)
        case detector(String)
        case invalidArgument(String)
        case model(path: String, reason: String)
        case gallery(path: String, reason: String)
    }

    private let code: Code

    /// A file or URL could not be opened or read as video. The source's password, if its
    /// URL has one, is left out here: an error is logged, published and shown.
    public static func sourceUnavailable(source: String, reason: String) -> Self {
        Self(code: .sourceUnavailable(source: redactingPassword(source), reason: redactingPassword(reason)))
    }
    /// The source opened but failed while reading.
    public static func sourceFailed(source: String, reason: String) -> Self {
        Self(code: .sourceFailed(source: redactingPassword(source), reason: redactingPassword(reason)))
    }
    /// An endpoint string that ZeroMQ cannot use, or one we refuse.
    public static func invalidEndpoint(_ endpoint: String, reason: String) -> Self {
        Self(code: .invalidEndpoint(endpoint, reason: reason))
    }
    public static func endpointInUse(_ endpoint: String) -> Self { Self(code: .endpointInUse(endpoint)) }
    public static func messaging(_ reason: String) -> Self { Self(code: .messaging(reason)) }
    /// A detector (faces, codes) or the frames output could not process a frame.
    public static func detector(_ reason: String) -> Self { Self(code: .detector(reason)) }
    public static func invalidArgument(_ reason: String) -> Self { Self(code: .invalidArgument(reason)) }
    /// A model file (landmarks, recognition) is missing or is not what it should be.
    public static func model(path: String, reason: String) -> Self { Self(code: .model(path: path, reason: reason)) }
    /// A face gallery that is not ours, is corrupt, or cannot be written.
    public static func gallery(path: String, reason: String) -> Self {
        Self(code: .gallery(path: path, reason: reason))
    }

    /// An error of the source itself (unreachable, unplugged, unreadable), which may go
    /// away: not of the options.
    public var isAboutTheSource: Bool {
        switch code {
        case .sourceUnavailable, .sourceFailed: true
        default: false
        }
    }

    public var description: String {
        switch code {
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
