import SightlineCapture
import SightlineCore
import SightlineDetection

/// Finds the one face of a still image and describes it, for enrolment.
package struct FaceEnroller {
    private let detector: FaceDetector
    private let landmarker: FaceLandmarker
    private let recognizer: FaceRecognizer

    package init(models: FaceModelFiles, upsample: Int) throws {
        detector = try FaceDetector(configuration: FaceDetector.Configuration(upsample: upsample))
        (landmarker, recognizer) = try models.recognitionModels()
    }

    /// The descriptor of the only face in the image; an image with none or several is
    /// refused, naming it.
    package func descriptor(ofOnlyFaceIn image: String, jitters: Int) throws -> FaceDescriptor {
        let picture = try StillImage.load(image)
        let faces = try detector.detect(in: picture)
        guard faces.count == 1, let face = faces.first else {
            throw SightlineError.invalidArgument(
                faces.isEmpty
                    ? "\(image): no face found; use a photo where the face is at least 80 pixels wide, or --upsample 1"
                    : "\(image): \(faces.count) faces found; enrol from a photo of that person alone")
        }
        guard let rgb = picture.converted(to: .rgb24) else {
            throw SightlineError.sourceUnavailable(source: image, reason: "cannot convert its pixels to RGB")
        }
        return try recognizer.descriptor(of: landmarker.landmarks(of: face, in: picture), in: rgb, jitters: jitters)
    }
}
