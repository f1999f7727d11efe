import Foundation
import SightlineCore

/// Where dlib's model files are: the landmark predictor and the recognition network that
/// `tools/fetch-models.sh` fetches (models/README.md). Neither is needed to detect faces.
package struct FaceModelFiles: Sendable, Equatable {
    package static let landmarksFileName = "shape_predictor_5_face_landmarks.dat"
    package static let recognitionFileName = "dlib_face_recognition_resnet_model_v1.dat"

    package var directory: String

    package init(directory: String) { self.directory = directory }

    /// `explicit` (`--models`), else `$SIGHTLINE_MODELS`, else `models/` in the working
    /// directory when it has a model, else the `models/` of the checkout this was built
    /// from, where `tools/fetch-models.sh` puts them.
    package static func locate(
        explicit: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> FaceModelFiles {
        if let explicit { return FaceModelFiles(directory: explicit) }
        if let fromEnvironment = environment["SIGHTLINE_MODELS"], !fromEnvironment.isEmpty {
            return FaceModelFiles(directory: fromEnvironment)
        }
        let local = FaceModelFiles(directory: "models")
        if local.hasLandmarks || local.hasRecognition { return local }
        // Installed by tools/install.sh: beside the executable (a link on PATH points there).
        let installed = FaceModelFiles(
            directory: URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
                .deletingLastPathComponent().appendingPathComponent("models").path)
        if installed.hasLandmarks || installed.hasRecognition { return installed }
        let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent()  // Faces
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return FaceModelFiles(directory: checkout.appendingPathComponent("models").path)
    }

    package var landmarksPath: String { "\(directory)/\(Self.landmarksFileName)" }
    package var recognitionPath: String { "\(directory)/\(Self.recognitionFileName)" }
    package var hasLandmarks: Bool { FileManager.default.fileExists(atPath: landmarksPath) }
    package var hasRecognition: Bool { FileManager.default.fileExists(atPath: recognitionPath) }

    /// The landmark predictor, or nil when its file is absent (a file that is there but
    /// cannot be read is an error).
    package func landmarkerIfPresent() throws -> FaceLandmarker? {
        hasLandmarks ? try FaceLandmarker(modelPath: landmarksPath) : nil
    }

    /// Both models, for identities: each must be there.
    package func recognitionModels() throws -> (FaceLandmarker, FaceRecognizer) {
        (try landmarkerForIdentities(), try recognizer())
    }

    /// The landmark predictor, for identities: both models must be there.
    package func landmarkerForIdentities() throws -> FaceLandmarker {
        try requireRecognitionModels()
        return try FaceLandmarker(modelPath: landmarksPath)
    }

    /// The recognition network, for identities: both models must be there. A value of its
    /// own (not a pair with the landmarker), so it can be handed to the one thread that uses it.
    package func recognizer() throws -> FaceRecognizer {
        try requireRecognitionModels()
        return try FaceRecognizer(modelPath: recognitionPath)
    }

    private func requireRecognitionModels() throws {
        for path in [landmarksPath, recognitionPath] where !FileManager.default.fileExists(atPath: path) {
            throw SightlineError.model(path: path, reason: "not found (identities need it)")
        }
    }
}
