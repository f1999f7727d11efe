import Foundation
import SightlineCore

/// The people a face can be matched to: names with the descriptors they were enrolled
/// with, in one JSON file that only its owner can read (docs/identities.md).
///
/// ```json
/// {"format": "sightline-face-gallery", "version": 1,
///  "model": "dlib_face_recognition_resnet_model_v1",
///  "people": [{"name": "Ada", "enrolments": [
///     {"image": "ada.jpg", "enrolledAt": "2026-11-24T08:00:00Z", "jitters": 10,
///      "descriptor": [-0.09, 0.12, …]}]}]}
/// ```
package struct FaceGallery: Sendable, Equatable, Codable {
    package static let formatName = "sightline-face-gallery"
    package static let currentVersion = 1
    package static let modelName = "dlib_face_recognition_resnet_model_v1"

    /// One enrolled image of a person.
    package struct Enrolment: Sendable, Equatable, Codable {
        /// The image's file name (never its directory): where the descriptor came from.
        package var image: String
        /// ISO 8601, UTC.
        package var enrolledAt: String
        package var jitters: Int
        package var descriptor: FaceDescriptor

        package init(image: String, enrolledAt: Date = Date(), jitters: Int, descriptor: FaceDescriptor) {
            self.image = image
            self.enrolledAt = ISO8601DateFormatter().string(from: enrolledAt)
            self.jitters = jitters
            self.descriptor = descriptor
        }
    }

    package struct Person: Sendable, Equatable, Codable {
        package var name: String
        package var enrolments: [Enrolment]
    }

    package var format = Self.formatName
    package var version = Self.currentVersion
    package var model = Self.modelName
    package private(set) var people: [Person] = []

    package init() {}

    /// Names are what events and movies show: 1 to 64 characters, none of them a control
    /// character, not only spaces.
    package static func validate(name: String) throws {
        guard (1...64).contains(name.count), !name.allSatisfy(\.isWhitespace),
            !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw SightlineError.invalidArgument(
                "a person's name is 1 to 64 characters without control characters, not '\(name)'")
        }
    }

    /// Adds an enrolment to the person of that name, who is created when new.
    package mutating func enrol(name: String, _ enrolment: Enrolment) throws {
        try Self.validate(name: name)
        if let index = people.firstIndex(where: { $0.name == name }) {
            people[index].enrolments.append(enrolment)
        } else {
            people.append(Person(name: name, enrolments: [enrolment]))
        }
    }

    /// Removes a person and every descriptor of theirs; false when there was nobody of that name.
    package mutating func remove(name: String) -> Bool {
        let before = people.count
        people.removeAll { $0.name == name }
        return people.count != before
    }

    /// Removes the enrolments of one image (by the name `faces list` shows) from a person,
    /// and the person with their last; the number removed (0: no such image).
    package mutating func remove(name: String, image: String) -> Int {
        guard let index = people.firstIndex(where: { $0.name == name }) else { return 0 }
        let before = people[index].enrolments.count
        people[index].enrolments.removeAll { $0.image == image }
        let removed = before - people[index].enrolments.count
        if people[index].enrolments.isEmpty { people.remove(at: index) }
        return removed
    }

    /// The enrolled person closest to `descriptor`, when closer than `threshold`.
    package func match(_ descriptor: FaceDescriptor, threshold: Double) -> FaceIdentity? {
        var best: FaceIdentity?
        for person in people {
            for enrolment in person.enrolments {
                let distance = descriptor.distance(to: enrolment.descriptor)
                if distance < threshold, distance < (best?.distance ?? .infinity) {
                    best = FaceIdentity(name: person.name, distance: distance)
                }
            }
        }
        return best
    }

    /// Reads a gallery; a missing file is an empty gallery when `allowMissing`.
    package static func load(path: String, allowMissing: Bool = false) throws -> FaceGallery {
        guard FileManager.default.fileExists(atPath: path) else {
            if allowMissing { return FaceGallery() }
            throw SightlineError.gallery(path: path, reason: "not found; enrol someone with 'sightline faces enroll'")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw SightlineError.gallery(path: path, reason: "cannot be read (\(error.localizedDescription))")
        }
        let header = try? JSONDecoder().decode(Header.self, from: data)
        guard header?.format == formatName else {
            throw SightlineError.gallery(path: path, reason: "is not a Sightline face gallery")
        }
        guard header?.version == currentVersion, header?.model == modelName else {
            throw SightlineError.gallery(
                path: path,
                reason:
                    "is version \(header?.version ?? 0) for model \(header?.model ?? "?"); this Sightline reads version \(currentVersion) for \(modelName)"
            )
        }
        do {
            let gallery = try JSONDecoder().decode(FaceGallery.self, from: data)
            for person in gallery.people { try validate(name: person.name) }
            return gallery
        } catch {
            throw SightlineError.gallery(path: path, reason: "is corrupt (\(Self.summary(of: error)))")
        }
    }

    /// Writes the gallery whole to a new file readable by its owner only (mode 0600), then
    /// renames it over `path`: a crash leaves the old gallery or the new one.
    package func save(path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        let temporary = "\(path).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw SightlineError.gallery(path: path, reason: "cannot be written (\(String(cString: strerror(errno))))")
        }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw SightlineError.gallery(path: path, reason: "cannot be written (\(reason))")
        }
    }

    private struct Header: Decodable {
        var format: String?
        var version: Int?
        var model: String?
    }

    private static func summary(of error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context), DecodingError.keyNotFound(_, let context),
            DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        default: return "\(error)"
        }
    }
}
