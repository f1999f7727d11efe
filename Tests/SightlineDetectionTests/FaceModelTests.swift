import Foundation
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlineSamples
import SightlineTesting
import Testing

/// An image as both sides of a comparison see it: ffmpeg's decoding, as raw planes.
struct RawImage {
    let width: Int
    let height: Int
    /// The luma plane ffmpeg decodes (yuv420p), for detection and landmarks.
    let luma: PixelBuffer
    let rgb: PixelBuffer
    let lumaFile: String
    let rgbFile: String

    /// A still, or the frame `frame` of a 30 fps clip.
    init(_ path: String, frame: Int? = nil, in directory: TemporaryDirectory) throws {
        let probe = try ExternalTool.run(
            "ffprobe",
            ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of", "csv=p=0", path])
        let size = probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap {
            Int($0)
        }
        (width, height) = (size[0], size[1])
        let name = URL(fileURLWithPath: path).lastPathComponent + (frame.map { "-\($0)" } ?? "")
        (lumaFile, rgbFile) = (directory.file(name + ".y"), directory.file(name + ".rgb"))
        let select = frame.map { ["-vf", "select=eq(n\\,\($0))"] } ?? []
        for (file, format) in [(lumaFile, "yuv420p"), (rgbFile, "rgb24")] {
            let decoded = try ExternalTool.run(
                "ffmpeg",
                ["-v", "error", "-y", "-i", path] + select + [
                    "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", format, file,
                ])
            try #require(decoded.status == 0, "\(decoded.stderr)")
        }
        let yuv = [UInt8](try Data(contentsOf: URL(fileURLWithPath: lumaFile)))
        let lumaBytes = Array(yuv.prefix(width * height))
        try Data(lumaBytes).write(to: URL(fileURLWithPath: lumaFile))
        luma = PixelBuffer(format: .gray8, width: width, height: height, packedPlanes: [lumaBytes])
        rgb = PixelBuffer(
            format: .rgb24, width: width, height: height,
            packedPlanes: [[UInt8](try Data(contentsOf: URL(fileURLWithPath: rgbFile)))])
    }
}

/// What the Python binding says (tools/face-reference.py).
struct ReferenceFace: Decodable {
    let box: [Int]
    let landmarks: [[Int]]
    let descriptor: [Double]
}

enum FaceModelFixtures {
    static let faces = Bundle.module.resourceURL!.appendingPathComponent("Faces")
    static let obama = faces.appendingPathComponent("obama2.jpg").path
    static let biden = faces.appendingPathComponent("biden.jpg").path
    static let models = FaceModelFiles(directory: ExternalTool.checkout.appendingPathComponent("models").path)

    /// The real models, which tools/setup.sh fetches: these tests fail without them.
    static func loadModels() throws -> (FaceLandmarker, FaceRecognizer) {
        try #require(models.hasLandmarks && models.hasRecognition, "run tools/fetch-models.sh first")
        return try models.recognitionModels()
    }

    static func reference(_ image: RawImage) throws -> [ReferenceFace] {
        let output = try ExternalTool.run(
            "python3",
            [
                ExternalTool.checkout.appendingPathComponent("tools/face-reference.py").path, image.lumaFile,
                image.rgbFile,
                "\(image.width)", "\(image.height)", "--models", models.directory,
            ])
        try #require(output.status == 0, "the Python dlib binding (pip install dlib-bin): \(output.stderr)")
        return try output.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(ReferenceFace.self, from: Data($0.utf8))
        }
    }
}

@Suite struct FaceModelTests {
    /// Landmarks exactly as the Python binding's shape_predictor gives them, and descriptors
    /// within 1e-4 per component of its compute_face_descriptor, on the same pixels: two
    /// stills, and frames of the sample clip with faces of 90 to 200 pixels.
    @Test(
        arguments: [
            (FaceModelFixtures.obama, nil), (FaceModelFixtures.biden, nil), (SampleMedia.faces640x480.path, 75),
            (SampleMedia.faces640x480.path, 150), (SampleMedia.faces640x480.path, 240),
        ] as [(String, Int?)])
    func matchesPythonDlib(path: String, frame: Int?) throws {
        let (landmarker, recognizer) = try FaceModelFixtures.loadModels()
        let directory = try TemporaryDirectory("faces")
        let image = try RawImage(path, frame: frame, in: directory)
        let reference = try FaceModelFixtures.reference(image)
        let faces = try FaceDetector().detect(in: image.luma)
        try #require(faces.count == reference.count && !faces.isEmpty, "\(path) \(frame ?? -1)")
        for (face, expected) in zip(faces, reference) {
            #expect([face.left, face.top, face.right, face.bottom] == expected.box)
            let points = try landmarker.landmarks(of: face, in: image.luma)
            #expect(points.map { [$0.x, $0.y] } == expected.landmarks)
            let descriptor = try recognizer.descriptor(of: points, in: image.rgb)
            let worst = zip(descriptor.values, expected.descriptor).map { abs(Double($0) - $1) }.max() ?? .infinity
            #expect(worst <= 1e-4, "largest difference \(worst)")
        }
    }

    /// The roll angle follows the picture turned by known angles, within 3 degrees, where
    /// the HOG filters could only say 0, 27 or 333.
    @Test func rollFollowsATurnedPhoto() throws {
        let (landmarker, _) = try FaceModelFixtures.loadModels()
        let directory = try TemporaryDirectory("roll")
        let detector = try FaceDetector()
        detector.landmarker = landmarker
        func roll(turnedBy degrees: Int) throws -> Double {
            let turned = directory.file("turned\(degrees).png")
            let made = try ExternalTool.run(
                "ffmpeg",
                [
                    "-v", "error", "-y", "-i", FaceModelFixtures.obama, "-vf",
                    "rotate=\(degrees)*PI/180:ow=rotw(\(degrees)*PI/180):oh=roth(\(degrees)*PI/180):c=gray,scale=trunc(iw/2)*2:trunc(ih/2)*2",
                    turned,
                ])
            try #require(made.status == 0, "\(made.stderr)")
            let picture = try StillImage.load(turned)
            let faces = try detector.objects(
                in: VideoFrame(pixels: picture, time: .zero, duration: nil, wallClockNanoseconds: 0, index: 0))
            try #require(faces.count == 1, "turned by \(degrees): \(faces.count) faces")
            #expect(faces[0].landmarks?.count == 5)
            return try #require(faces[0].rollAngle)
        }
        let upright = try roll(turnedBy: 0)
        #expect(upright > 2 && upright < 8, "the portrait's own tilt: \(upright)")
        for degrees in [-30, -20, -10, 10, 20, 30] {
            let measured = try roll(turnedBy: degrees)
            var error = (measured - upright - Double(degrees)).truncatingRemainder(dividingBy: 360)
            if error > 180 { error -= 360 }
            if error < -180 { error += 360 }
            #expect(abs(error) <= 3, "turned by \(degrees): roll \(measured), upright \(upright)")
        }
    }

    @Test func rollAngleFromTheEyeLine() {
        func points(leftEye: (Int, Int), rightEye: (Int, Int)) -> [PixelPoint] {
            [
                PixelPoint(x: rightEye.0 + 10, y: rightEye.1), PixelPoint(x: rightEye.0 - 10, y: rightEye.1),
                PixelPoint(x: leftEye.0 - 10, y: leftEye.1), PixelPoint(x: leftEye.0 + 10, y: leftEye.1),
                PixelPoint(x: 50, y: 80),
            ]
        }
        #expect(FaceLandmarks.rollAngle(points(leftEye: (20, 40), rightEye: (80, 40))) == 0)
        #expect(abs(FaceLandmarks.rollAngle(points(leftEye: (20, 40), rightEye: (80, 100)))! - 45) < 1e-9)
        #expect(abs(FaceLandmarks.rollAngle(points(leftEye: (20, 100), rightEye: (80, 40)))! - 315) < 1e-9)
        #expect(FaceLandmarks.rollAngle([PixelPoint(x: 1, y: 1)]) == nil)
    }

    /// Two photos of one person are closer than 0.6; of two people, farther.
    @Test func descriptorsTellPeopleApart() throws {
        let (landmarker, recognizer) = try FaceModelFixtures.loadModels()
        let directory = try TemporaryDirectory("apart")
        func descriptor(_ path: String, frame: Int? = nil) throws -> FaceDescriptor {
            let image = try RawImage(path, frame: frame, in: directory)
            let face = try #require(try FaceDetector().detect(in: image.luma).max { $0.width < $1.width })
            return try recognizer.descriptor(of: landmarker.landmarks(of: face, in: image.luma), in: image.rgb)
        }
        let obama = try descriptor(FaceModelFixtures.obama)
        let biden = try descriptor(FaceModelFixtures.biden)
        let obamaInClip = try descriptor(SampleMedia.faces640x480.path, frame: 100)
        print(
            "distances: obama2-clip obama \(obama.distance(to: obamaInClip)), obama-biden \(obama.distance(to: biden))")
        #expect(obama.distance(to: obamaInClip) < 0.6)
        #expect(obama.distance(to: biden) > 0.6)
    }

    @Test func missingOrCorruptModelsAreOneLine() throws {
        let directory = try TemporaryDirectory("models")
        let missing = directory.file("none.dat")
        #expect(throws: SightlineError.self) { try FaceLandmarker(modelPath: missing) }
        let corrupt = directory.file(FaceModelFiles.recognitionFileName)
        try Data("not a model".utf8).write(to: URL(fileURLWithPath: corrupt))
        do {
            _ = try FaceRecognizer(modelPath: corrupt)
            Issue.record("a corrupt model loaded")
        } catch let error as SightlineError {
            #expect("\(error)".hasPrefix("model \(corrupt): "))
            #expect("\(error)".hasSuffix("; fetch it with tools/fetch-models.sh"))
            #expect(!"\(error)".contains("\n"))
        }
        // Identities need both files; plain detection needs neither.
        let empty = FaceModelFiles(directory: directory.path + "/empty")
        #expect(try empty.landmarkerIfPresent() == nil)
        #expect(throws: SightlineError.model(path: empty.landmarksPath, reason: "not found (identities need it)")) {
            _ = try empty.recognitionModels()
        }
    }
}

@Suite struct FaceGalleryTests {
    func descriptor(_ first: Float) throws -> FaceDescriptor {
        try FaceDescriptor([first] + [Float](repeating: 0, count: FaceDescriptor.length - 1))
    }

    @Test func savesReadableByItsOwnerOnlyAndLoadsBack() throws {
        let directory = try TemporaryDirectory("gallery")
        let path = directory.file("faces.json")
        var gallery = FaceGallery()
        try gallery.enrol(name: "Ada", .init(image: "ada.jpg", jitters: 10, descriptor: descriptor(0.1)))
        try gallery.enrol(name: "Ada", .init(image: "ada2.jpg", jitters: 10, descriptor: descriptor(0.2)))
        try gallery.enrol(name: "Grace", .init(image: "grace.jpg", jitters: 0, descriptor: descriptor(0.9)))
        try gallery.save(path: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let loaded = try FaceGallery.load(path: path)
        #expect(loaded == gallery)
        #expect(loaded.people.map(\.name) == ["Ada", "Grace"])
        // The closest enrolment wins; beyond the threshold nobody does.
        #expect(loaded.match(try descriptor(0.75), threshold: 0.6)?.name == "Grace")
        #expect(abs(loaded.match(try descriptor(0.25), threshold: 0.6)!.distance - 0.05) < 1e-6)
        #expect(loaded.match(try descriptor(5), threshold: 0.6) == nil)
        var removed = loaded
        let first = removed.remove(name: "Ada")
        let second = removed.remove(name: "Ada")
        #expect(first && !second)
        #expect(removed.people.map(\.name) == ["Grace"])
    }

    @Test func refusesWhatIsNotAGallery() throws {
        let directory = try TemporaryDirectory("gallery")
        func loading(_ text: String) throws -> String {
            let path = directory.file("g.json")
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            do {
                _ = try FaceGallery.load(path: path)
                return "loaded"
            } catch let error as SightlineError {
                #expect(!"\(error)".contains("\n"))
                return "\(error)"
            }
        }
        #expect(try loading("{\"people\": []}").hasSuffix("is not a Sightline face gallery"))
        #expect(try loading("not json").hasSuffix("is not a Sightline face gallery"))
        let header =
            "\"format\": \"sightline-face-gallery\", \"version\": 1, \"model\": \"dlib_face_recognition_resnet_model_v1\""
        #expect(
            try loading(
                "{\(header), \"people\": [{\"name\": \"A\", \"enrolments\": [{\"image\": \"a\", \"enrolledAt\": \"x\", \"jitters\": 0, \"descriptor\": [1, 2]}]}]}"
            ).contains("is corrupt"))
        #expect(
            try loading("{\"format\": \"sightline-face-gallery\", \"version\": 9, \"model\": \"m\", \"people\": []}")
                .contains("version 9"))
        #expect(try loading("{\(header), \"people\": []}") == "loaded")
        #expect(throws: SightlineError.self) { try FaceGallery.load(path: directory.file("missing.json")) }
        #expect(try FaceGallery.load(path: directory.file("missing.json"), allowMissing: true).people.isEmpty)
    }

    @Test func refusesBadNames() throws {
        for name in ["", "   ", "a\u{7}b", String(repeating: "x", count: 65)] {
            #expect(throws: SightlineError.self) { try FaceGallery.validate(name: name) }
        }
        try FaceGallery.validate(name: "Zoë O'Brien")
    }
}
