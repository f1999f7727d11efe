import Foundation
import SightlineBus
import SightlineCore
import SightlineMovie
import SightlineTesting
import Testing

/// Identities as a user gets them: `faces enroll` from a still, then `run --gallery`
/// over the bundled clip, whose faces are the astronaut, Obama, Biden and Obama again.
@Suite struct IdentityTests {
    static let faces = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("SightlineDetectionTests/Faces")
    static let obama = faces.appendingPathComponent("obama2.jpg").path
    static let biden = faces.appendingPathComponent("biden.jpg").path
    let cli = CommandLineTests()

    func enrolObama(in directory: TemporaryDirectory) throws -> String {
        let gallery = directory.file("faces.json")
        let enrolled = try cli.sightline(["faces", "enroll", "Obama", Self.obama, "--gallery", gallery], timeout: 120)
        #expect(enrolled.status == 0, "\(enrolled.stderrLines)")
        #expect(enrolled.stdout.contains("enrolled Obama from 1 image(s)"))
        return gallery
    }

    /// Enrolled from one still that is not in the clip, Obama's two tracks carry his name
    /// and nobody else's does. With a strict threshold, the first track is too far at its
    /// entry (its face half outside the frame) and is named by a refresh half a second
    /// later, with an `identified` event. Faces have 5 landmarks and a measured roll; no
    /// descriptor leaves the process. The recording holds the names, which exiftool reads.
    @Test func namesTheEnrolledPersonLiveAndInTheRecording() throws {
        let directory = try TemporaryDirectory("identities")
        let gallery = try enrolObama(in: directory)
        let mode = try FileManager.default.attributesOfItem(atPath: gallery)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let listed = try cli.sightline(["faces", "list", "--gallery", gallery, "--json"])
        #expect(listed.stdout.contains("\"name\":\"Obama\""))

        let recordings = directory.file("recordings")
        let outcome = try cli.sightline(
            [
                "run", "--every-frame", "--print", "--gallery", gallery, "--match-threshold", "0.45",
                "--identify-every", "0.5", "--record", recordings, "--publish",
                "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())",
            ], timeout: 300)
        #expect(outcome.status == 0, "\(outcome.stderrLines)")
        let messages = try outcome.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(Message.self, from: Data($0.utf8))
        }
        let events = messages.compactMap(\.event)
        let entered = events.filter { $0.change == .enter }
        #expect(entered.map(\.id) == [1, 2, 3, 4])
        #expect(entered.map { $0.face?.identity?.name } == [nil, nil, nil, "Obama"])
        let identified = events.filter { $0.change == .identified }
        #expect(identified.map(\.id) == [2])
        let named = try #require(identified.first?.face)
        #expect(named.identity?.name == "Obama" && named.identity!.distance < 0.45)
        let left = Dictionary(events.filter { $0.change == .leave }.map { ($0.id, $0.face?.identity?.name) }) { a, _ in
            a
        }
        #expect(left == [1: nil, 2: "Obama", 3: nil, 4: "Obama"])
        for event in events where event.face?.identity != nil {
            print("identity: face \(event.id) \(event.change) \(event.face!.identity!)")
        }

        let faces = messages.filter { $0.kind == .faces }.flatMap { $0.faces ?? [] }
        #expect(faces.count > 300)
        #expect(faces.allSatisfy { $0.landmarks?.count == 5 && $0.descriptor == nil })
        // Named from the refresh on, to the end of the track; the others never.
        for face in faces where face.faceID == 2 {
            #expect((face.identity != nil) == (face.time >= named.time), "face 2 at \(face.time.seconds)")
        }
        #expect(faces.filter { $0.faceID == 1 || $0.faceID == 3 }.allSatisfy { $0.identity == nil })
        // Roll is measured, not one of the three values the HOG filters imply.
        let rolls = Set(faces.compactMap(\.rollAngle))
        #expect(rolls.count > 20)

        // The movie: our record fields, read by our reader and by exiftool.
        let movie = try #require(
            try FileManager.default.contentsOfDirectory(atPath: recordings).first { $0.hasSuffix(".mov") })
        let path = "\(recordings)/\(movie)"
        let reader = try MovieReader(path: path)
        let faceTrack = try #require(reader.tracks.first { $0.mediaType == "meta" })
        var recordedNames: [Int: Set<String>] = [:]
        for group in try reader.metadataGroups(track: faceTrack.id) {
            for record in group.items.compactMap({ $0.detectedFaceRecords }).joined() {
                recordedNames[record.faceID, default: []].formUnion(record.identity.map { [$0.name] } ?? [])
            }
        }
        #expect(recordedNames == [1: [], 2: ["Obama"], 3: [], 4: ["Obama"]])
        let documents = try IndependentReaders.exiftoolDocuments(path)
        let exifNames = documents.values.flatMap { $0["FielcomSightlineDetectedFaceIdentity"] ?? [] }
        #expect(!exifNames.isEmpty && exifNames.allSatisfy { $0 == "Obama" })
    }

    @Test func publishesDescriptorsOnlyWhenAsked() throws {
        let outcome = try cli.sightline(
            [
                "run", "--every-frame", "--print", "--publish-descriptors", "--identify-every", "2", "--publish",
                "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())",
            ], timeout: 300)
        #expect(outcome.status == 0, "\(outcome.stderrLines)")
        let faces = try outcome.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(Message.self, from: Data($0.utf8))
        }.filter { $0.kind == .faces }.flatMap { $0.faces ?? [] }
        let described = faces.filter { $0.descriptor != nil }
        // One per face on entry, then every two seconds of media time: never every frame.
        #expect(described.count >= 4 && described.count < 20, "\(described.count)")
        #expect(described.allSatisfy { $0.descriptor?.count == 128 && $0.identity == nil })
    }

    /// Without the model files a run goes on as before, saying so once: no landmarks, and
    /// the roll the HOG filters imply.
    @Test func runsWithoutTheModels() throws {
        let outcome = try cli.sightline(
            [
                "run", "--every-frame", "--print", "--models", "/nonexistent", "--publish",
                "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())",
            ], timeout: 300)
        #expect(outcome.status == 0, "\(outcome.stderrLines)")
        #expect(outcome.stderrLines.filter { $0.contains("no landmark model") }.count == 1)
        let faces = try outcome.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(Message.self, from: Data($0.utf8))
        }.filter { $0.kind == .faces }.flatMap { $0.faces ?? [] }
        #expect(faces.count > 300)
        #expect(faces.allSatisfy { $0.landmarks == nil && $0.identity == nil })
        #expect(Set(faces.compactMap(\.rollAngle)).isSubset(of: [0, 27, 333]))
    }

    @Test func badEnrolmentsAndOptionsAreOneLine() throws {
        let directory = try TemporaryDirectory("identities-bad")
        let gallery = try enrolObama(in: directory)
        let books = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SightlineDetectionTests/Barcodes/books.jpg").path
        let pair = directory.file("pair.jpg")
        let made = try ExternalTool.run(
            "ffmpeg", ["-v", "error", "-y", "-i", Self.obama, "-i", Self.biden, "-filter_complex", "hstack", pair])
        #expect(made.status == 0)
        let corrupt = directory.file("corrupt.json")
        try Data(
            "{\"format\": \"sightline-face-gallery\", \"version\": 1, \"model\": \"dlib_face_recognition_resnet_model_v1\", \"people\": 7}"
                .utf8
        )
        .write(to: URL(fileURLWithPath: corrupt))
        let foreign = directory.file("foreign.json")
        try Data("[1, 2, 3]".utf8).write(to: URL(fileURLWithPath: foreign))
        let before = try Data(contentsOf: URL(fileURLWithPath: gallery))
        for (arguments, text) in [
            (["faces", "enroll", "X", books, "--gallery", gallery], "books.jpg: no face found"),
            (["faces", "enroll", "X", pair, "--gallery", gallery], "pair.jpg: 2 faces found"),
            (["faces", "enroll", "X", Self.obama, pair, "--gallery", gallery], "pair.jpg: 2 faces found"),
            (["faces", "enroll", "", Self.obama, "--gallery", gallery], "a person's name is 1 to 64 characters"),
            (["faces", "enroll", "X", "/no/such.jpg", "--gallery", gallery], "cannot open /no/such.jpg"),
            (
                ["faces", "enroll", "X", Self.obama, "--gallery", gallery, "--models", "/nonexistent"],
                "model /nonexistent/"
            ),
            (["faces", "remove", "Nobody", "--gallery", gallery], "nobody called Nobody"),
            (["faces", "list", "--gallery", corrupt], "is corrupt"),
            (["faces", "list", "--gallery", foreign], "is not a Sightline face gallery"),
            (["run", "--gallery", gallery, "--match-threshold", "3"], "match threshold must be between 0 and 2"),
            (["run", "--gallery", gallery, "--match-threshold=-0.1"], "match threshold must be between 0 and 2"),
            (["run", "--gallery", corrupt], "is corrupt"),
            (["run", "--gallery", directory.file("none.json")], "not found"),
            (["run", "--gallery", gallery, "--models", "/nonexistent"], "fetch it with tools/fetch-models.sh"),
        ] {
            try cli.expectOneLineError(arguments, mentioning: text)
        }
        // A refused enrolment leaves the gallery as it was.
        #expect(try Data(contentsOf: URL(fileURLWithPath: gallery)) == before)
        let removed = try cli.sightline(["faces", "remove", "Obama", "--gallery", gallery])
        #expect(removed.status == 0)
        let listed = try cli.sightline(["faces", "list", "--gallery", gallery])
        #expect(listed.stdout.contains("nobody enrolled"))
    }

    /// A photo of Biden enrolled as Obama would make both wrong: refused, naming Biden,
    /// unless forced; one image can then be taken out again.
    @Test func enrolmentProtectsTheGallery() throws {
        let directory = try TemporaryDirectory("enrolment")
        let gallery = try enrolObama(in: directory)
        let biden = try cli.sightline(["faces", "enroll", "Biden", Self.biden, "--gallery", gallery], timeout: 120)
        #expect(biden.status == 0, "\(biden.stderrLines)")
        let before = try Data(contentsOf: URL(fileURLWithPath: gallery))
        try cli.expectOneLineError(
            ["faces", "enroll", "Obama", Self.biden, "--gallery", gallery],
            mentioning: "biden.jpg's face matches Biden (distance 0.000, under 0.6); nothing was enrolled")
        #expect(try Data(contentsOf: URL(fileURLWithPath: gallery)) == before)
        let forced = try cli.sightline(
            ["faces", "enroll", "Obama", Self.biden, "--force", "--gallery", gallery], timeout: 120)
        #expect(forced.status == 0, "\(forced.stderrLines)")
        #expect(
            forced.stdout.contains("note: biden.jpg also matches Biden (distance 0.000); enrolled as asked (--force)"))
        try cli.expectOneLineError(
            ["faces", "remove", "Obama", "--image", "nope.jpg", "--gallery", gallery],
            mentioning: "Obama has no image nope.jpg; their images: obama2.jpg, biden.jpg")
        let removed = try cli.sightline(["faces", "remove", "Obama", "--image", "biden.jpg", "--gallery", gallery])
        #expect(removed.stdout.contains("removed biden.jpg from Obama; 1 image(s) left"), "\(removed.stderrLines)")
        let listed = try cli.sightline(["faces", "list", "--gallery", gallery])
        #expect(listed.stdout.contains("Obama\t1 image(s): obama2.jpg") && listed.stdout.contains("Biden\t1 image(s)"))
    }
}
