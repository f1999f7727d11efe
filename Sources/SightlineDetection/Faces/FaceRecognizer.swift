import CDlib
import SightlineCore

/// The 128 numbers dlib's recognition network gives a face. Two descriptors closer than
/// about 0.6 (Euclidean) are the same person.
package struct FaceDescriptor: Sendable, Hashable, Codable {
    package static let length = Int(SL_FACE_DESCRIPTOR_LENGTH)
    package var values: [Float]

    package init(_ values: [Float]) throws {
        guard values.count == Self.length, values.allSatisfy(\.isFinite) else {
            throw SightlineError.invalidArgument(
                "a face descriptor is \(Self.length) finite numbers, not \(values.count)")
        }
        self.values = values
    }

    package func distance(to other: FaceDescriptor) -> Double {
        var sum = 0.0
        for (a, b) in zip(values, other.values) {
            let d = Double(a) - Double(b)
            sum += d * d
        }
        return sum.squareRoot()
    }

    /// Stored and sent as a plain array of numbers.
    package init(from decoder: any Decoder) throws {
        try self.init(try decoder.singleValueContainer().decode([Float].self))
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(values)
    }
}

/// dlib's ResNet face recognition network (`dlib_face_recognition_resnet_model_v1.dat`):
/// a face, placed by its landmarks, becomes a `FaceDescriptor`, as the Python binding's
/// `compute_face_descriptor` computes it. Tens of milliseconds per face: the pipeline runs it
/// when a face enters and now and then while it stays, never on every frame.
///
/// Not thread-safe: one instance per thread or serial queue.
package final class FaceRecognizer {
    private let handle: OpaquePointer
    private var errorBuffer = [CChar](repeating: 0, count: 256)

    package init(modelPath: String) throws {
        var error = [CChar](repeating: 0, count: 512)
        guard let handle = sl_face_describer_create(modelPath, &error, error.count) else {
            throw SightlineError.model(path: modelPath, reason: FaceLandmarker.reason(String(nulTerminated: error)))
        }
        self.handle = handle
    }

    deinit { sl_face_describer_destroy(handle) }

    /// The descriptor of the face with these landmarks (in pixels of `rgb`, an rgb24
    /// image). `jitters` above 1 averages that many randomly jittered copies (dlib's
    /// `num_jitters`): steadier, and that many times slower.
    package func descriptor(of landmarks: [PixelPoint], in rgb: PixelBuffer, jitters: Int = 0) throws -> FaceDescriptor
    {
        guard rgb.format == .rgb24 else {
            throw SightlineError.invalidArgument("face descriptors need rgb24 pixels, not \(rgb.format)")
        }
        let plane = rgb.planes[0]
        let points = landmarks.flatMap { [$0.x, $0.y] }
        var values = [Float](repeating: 0, count: FaceDescriptor.length)
        let status = sl_face_describer_compute(
            handle, plane.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(rgb.width), Int32(rgb.height),
            plane.bytesPerRow, points, Int32(landmarks.count), Int32(jitters), &values, &errorBuffer, errorBuffer.count)
        guard status == 0 else { throw SightlineError.detector(String(nulTerminated: errorBuffer)) }
        return try FaceDescriptor(values)
    }
}
