import ArgumentParser
import Foundation
import SightlineCore
import SightlineDetection
import SightlinePipeline

/// Where the models and the gallery are; shared by `run` and `faces`.
struct FaceModelOptions: ParsableArguments {
    @Option(
        help:
            "Directory of dlib's landmark and recognition models. Default: $SIGHTLINE_MODELS, ./models, the checkout's models/."
    )
    var models: String?

    var modelFiles: FaceModelFiles { FaceModelFiles.locate(explicit: models) }
}

/// `run`'s options for naming faces.
struct IdentityOptions: ParsableArguments {
    @Option(help: "Match faces against the people enrolled in this gallery (see `sightline faces`).")
    var gallery: String?

    @Option(help: "Largest descriptor distance that is a match (0-2; dlib's 0.6).")
    var matchThreshold = 0.6

    @Option(help: "Seconds of media time before a tracked face is described and matched again.")
    var identifyEvery = 5.0

    @Flag(help: "Put each face's 128-number descriptor on the bus when computed (it identifies a person).")
    var publishDescriptors = false

    func apply(to configuration: inout PipelineConfiguration) throws {
        guard gallery != nil || publishDescriptors else {
            if matchThreshold != 0.6 { throw ValidationError("--match-threshold needs --gallery") }
            return
        }
        configuration.detection.identities = try IdentityConfiguration(
            gallery: try gallery.map { try FaceGallery.load(path: $0) }, matchThreshold: matchThreshold,
            refreshInterval: identifyEvery, publishDescriptors: publishDescriptors
        ).validated()
    }
}

struct FacesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "faces",
        abstract: "Enrol people in a face gallery, list them, remove them (docs/identities.md).",
        discussion: """
            Examples:
              sightline faces enroll Ada ada-1.jpg ada-2.jpg --gallery faces.json
              sightline faces list --gallery faces.json
              sightline faces remove Ada --gallery faces.json
              sightline run --gallery faces.json --print
            """,
        subcommands: [Enroll.self, List.self, Remove.self])

    struct GalleryOption: ParsableArguments {
        @Option(help: "The gallery file (created mode 0600 when new).")
        var gallery = "faces.json"
    }

    struct Enroll: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Describe the one face in each image and add it to the person NAME.")

        @Argument(help: "The person's name (1-64 characters).")
        var name: String

        @Argument(help: "Images (JPEG, PNG …) with exactly one face each.")
        var images: [String]

        @OptionGroup var gallery: GalleryOption
        @OptionGroup var models: FaceModelOptions

        @Option(help: "Average this many jittered copies of each face (dlib's num_jitters): steadier, slower.")
        var jitter = 10

        @Option(
            parsing: .unconditional, help: "Double the image this many times before detecting (0-2), for small faces.")
        var upsample = 0

        @Flag(help: "Enrol an image even when its face is within the match threshold of another person's.")
        var force = false

        func validate() throws {
            try FaceGallery.validate(name: name)
            guard !images.isEmpty else { throw ValidationError("give at least one image of \(name)") }
            guard (0...100).contains(jitter) else { throw ValidationError("--jitter must be 0 to 100") }
        }

        func run() throws {
            var stored = try FaceGallery.load(path: gallery.gallery, allowMissing: true)
            let enroller = try FaceEnroller(models: models.modelFiles, upsample: upsample)
            // Every image is checked before the gallery changes: one bad image enrols none.
            let enrolments = try images.map { image in
                let descriptor = try enroller.descriptor(ofOnlyFaceIn: image, jitters: jitter)
                return FaceGallery.Enrolment(
                    image: URL(fileURLWithPath: image).lastPathComponent, jitters: jitter, descriptor: descriptor)
            }
            // A face that already matches someone else would make both people's matches
            // wrong: refused unless asked for, naming who it matches.
            for enrolment in enrolments {
                guard let other = stored.match(enrolment.descriptor, threshold: 0.6), other.name != name else {
                    continue
                }
                let distance = String(format: "%.3f", other.distance)
                guard force else {
                    throw SightlineError.gallery(
                        path: gallery.gallery,
                        reason:
                            "\(enrolment.image)'s face matches \(other.name) (distance \(distance), under 0.6); nothing was enrolled. Check the image, or give --force to enrol it as \(name) anyway"
                    )
                }
                print(
                    "note: \(enrolment.image) also matches \(other.name) (distance \(distance)); enrolled as asked (--force)"
                )
            }
            for enrolment in enrolments { try stored.enrol(name: name, enrolment) }
            try stored.save(path: gallery.gallery)
            let total = stored.people.first { $0.name == name }?.enrolments.count ?? 0
            print("enrolled \(name) from \(images.count) image(s); \(total) in \(gallery.gallery)")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The people in the gallery.")

        @OptionGroup var gallery: GalleryOption

        @Flag(help: "As JSON (names, images, dates; no descriptors).")
        var json = false

        func run() throws {
            let stored = try FaceGallery.load(path: gallery.gallery)
            if json {
                let people = stored.people.map { person in
                    [
                        "name": person.name as Any,
                        "enrolments": person.enrolments.map { ["image": $0.image, "enrolledAt": $0.enrolledAt] },
                    ]
                }
                let data = try JSONSerialization.data(withJSONObject: people, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
                return
            }
            if stored.people.isEmpty { print("nobody enrolled in \(gallery.gallery)") }
            for person in stored.people {
                let images = person.enrolments.map(\.image).joined(separator: ", ")
                print("\(person.name)\t\(person.enrolments.count) image(s): \(images)")
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a person and every descriptor of theirs from the gallery, or one image of theirs.")

        @Argument(help: "The person's name.")
        var name: String

        @Option(help: "Remove only this image of the person (its file name, as `faces list` shows it).")
        var image: String?

        @OptionGroup var gallery: GalleryOption

        func run() throws {
            var stored = try FaceGallery.load(path: gallery.gallery)
            if let image {
                let images = stored.people.first { $0.name == name }?.enrolments.map(\.image) ?? []
                guard stored.remove(name: name, image: image) > 0 else {
                    throw SightlineError.gallery(
                        path: gallery.gallery,
                        reason: images.isEmpty
                            ? "nobody called \(name)"
                            : "\(name) has no image \(image); their images: \(images.joined(separator: ", "))")
                }
                try stored.save(path: gallery.gallery)
                let left = stored.people.first { $0.name == name }?.enrolments.count ?? 0
                print("removed \(image) from \(name); \(left) image(s) left in \(gallery.gallery)")
                return
            }
            guard stored.remove(name: name) else {
                throw SightlineError.gallery(
                    path: gallery.gallery,
                    reason: "nobody called \(name); enrolled: \(stored.people.map(\.name).joined(separator: ", "))")
            }
            try stored.save(path: gallery.gallery)
            print("removed \(name) from \(gallery.gallery)")
        }
    }
}
