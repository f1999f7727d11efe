import SightlineCore

/// One entry of a `mebx` key table: a local id, the `<keyspace>/<key>` identifier, its data
/// type, and whatever other child boxes the key carries (iOS's `sdpd`, `ctps`), verbatim.
package struct MetadataKey: Sendable, Hashable {
    package var localID: UInt32
    package var identifier: String
    package var dataType: MetadataDataType
    /// Child boxes after `keyd` and `dtyp`, byte for byte.
    package var extraBoxes: [UInt8]

    package init(localID: UInt32, identifier: String, dataType: MetadataDataType, extraBoxes: [UInt8] = []) {
        self.localID = localID
        self.identifier = identifier
        self.dataType = dataType
        self.extraBoxes = extraBoxes
    }

    /// The types this key's value also conforms to (the well-known codes in `ctps`), which
    /// say how to read a value of a named type, for example location as UTF-8.
    package var conformingTypes: [UInt32] {
        guard let boxes = try? Box.children(of: extraBoxes, in: extraBoxes.indices),
            let ctps = boxes.first("ctps"),
            let dtyps = try? Box.children(of: extraBoxes, in: ctps.payload)
        else { return [] }
        return dtyps.all("dtyp").compactMap { box in
            var reader = ByteReader(extraBoxes, range: box.payload)
            guard (try? reader.u32()) == 0 else { return nil }
            return try? reader.u32()
        }
    }
}

/// The sample description of a timed metadata track: its key table, and whether it describes
/// the video track (`tref/cdsc`) or the movie as a whole.
package struct MetadataTrackFormat: Sendable, Hashable {
    /// In table order (not necessarily sorted by local id: iOS writes 3, 1, 4, 2, 5).
    package var keys: [MetadataKey]
    package var describesVideo: Bool
    /// Boxes after `keys` in the sample entry (iOS's `lidp`/`lidl` for nested keys), verbatim.
    package var trailingBoxes: [UInt8]

    package init(keys: [MetadataKey], describesVideo: Bool, trailingBoxes: [UInt8] = []) {
        self.keys = keys
        self.describesVideo = describesVideo
        self.trailingBoxes = trailingBoxes
    }

    /// A track for one client identifier with a well-known type, like a format description
    /// made with `CMMetadataFormatDescriptionCreateWithMetadataSpecifications`.
    package static func client(identifier: String, dataType: MetadataDataType, describesVideo: Bool = true)
        -> MetadataTrackFormat
    {
        switch identifier {
        case MetadataIdentifier.locationISO6709 where dataType == .utf8 || dataType == locationType:
            return .locationISO6709
        case MetadataIdentifier.videoOrientation where dataType == .int16:
            return .videoOrientation
        default:
            return MetadataTrackFormat(
                keys: [MetadataKey(localID: 1, identifier: identifier, dataType: dataType)],
                describesVideo: describesVideo)
        }
    }

    /// Detected faces exactly as iOS 12 declares them (see docs/movie-format.md).
    package static let detectedFaces = detectedFaces(identityKeys: false)

    /// The same with our two fields for faces a gallery named, after Apple's five: a
    /// recorder uses it when the source says it names faces (docs/movie-format.md).
    package static let detectedFacesWithIdentities = detectedFaces(identityKeys: true)

    private static func detectedFaces(identityKeys: Bool) -> MetadataTrackFormat {
        let sdpd = boxBytes { $0.box("sdpd") { $0.box("sdpi") { $0.u32(0) } } }
        let ctps = boxBytes {
            $0.box("ctps") {
                $0.box("dtyp") {
                    $0.u32(0)
                    $0.u32(69)
                }
            }
        }
        // iOS lists the children of key 1 as a 24-byte record: its length, a word of
        // unknown meaning, the child ids 2-5. Ours lists the identity fields too.
        let children: ClosedRange<UInt32> = identityKeys ? 2...7 : 2...5
        let lidpLidl = boxBytes { w in
            w.box("lidp") { $0.u32(1) }
            w.box("lidl") { w in
                w.u32(UInt32(8 + 4 * children.count))
                w.u32(0x0100_0000)
                for child in children { w.u32(child) }
            }
        }
        var keys = [
            MetadataKey(
                localID: 3, identifier: MetadataIdentifier.detectedFaceBounds, dataType: .polygonF32, extraBoxes: sdpd),
            MetadataKey(
                localID: 1, identifier: MetadataIdentifier.detectedFace,
                dataType: .named("com.apple.quicktime.detected-face"), extraBoxes: ctps),
            MetadataKey(
                localID: 4, identifier: MetadataIdentifier.detectedFaceRollAngle, dataType: .float32, extraBoxes: sdpd),
            MetadataKey(localID: 2, identifier: MetadataIdentifier.detectedFaceID, dataType: .uint32),
            MetadataKey(
                localID: 5, identifier: MetadataIdentifier.detectedFaceYawAngle, dataType: .float32, extraBoxes: sdpd),
        ]
        if identityKeys {
            keys += [
                MetadataKey(localID: 6, identifier: MetadataIdentifier.detectedFaceIdentity, dataType: .utf8),
                MetadataKey(
                    localID: 7, identifier: MetadataIdentifier.detectedFaceIdentityDistance, dataType: .float32,
                    extraBoxes: sdpd),
            ]
        }
        return MetadataTrackFormat(keys: keys, describesVideo: true, trailingBoxes: lidpLidl)
    }

    /// One detector's objects (docs/movie-format.md): in each sample the detector's name,
    /// then for each object its Sightline ID, type and bounds (x y width height), and the
    /// confidence, label and detector's own ID it has. An object's fields follow its ID.
    package static let detectedObjects: MetadataTrackFormat = {
        let keys: [(String, MetadataDataType)] = [
            (MetadataIdentifier.detectedObjectDetector, .utf8), (MetadataIdentifier.detectedObjectID, .uint32),
            (MetadataIdentifier.detectedObjectType, .utf8), (MetadataIdentifier.detectedObjectBounds, .rectF32),
            (MetadataIdentifier.detectedObjectConfidence, .float32), (MetadataIdentifier.detectedObjectLabel, .utf8),
            (MetadataIdentifier.detectedObjectDetectorID, .uint64),
        ]
        return MetadataTrackFormat(
            keys: keys.enumerated().map { index, key in
                MetadataKey(localID: UInt32(index + 1), identifier: key.0, dataType: key.1)
            }, describesVideo: true)
    }()

    /// EXIF orientation of the frames (1 normal … 8), as iOS records it.
    package static let videoOrientation = MetadataTrackFormat(
        keys: [
            MetadataKey(
                localID: 1, identifier: MetadataIdentifier.videoOrientation, dataType: .int16,
                extraBoxes: boxBytes { $0.box("sdpd") { $0.box("sdpi") { $0.u32(0) } } })
        ], describesVideo: true)

    static let locationType = MetadataDataType.named("com.apple.quicktime.location.ISO6709")

    /// ISO 6709 location text in Apple's form (a named type conforming to UTF-8); it
    /// describes the movie, so it has no `cdsc` reference.
    package static let locationISO6709 = MetadataTrackFormat(
        keys: [
            MetadataKey(
                localID: 1, identifier: MetadataIdentifier.locationISO6709, dataType: locationType,
                extraBoxes: boxBytes {
                    $0.box("ctps") {
                        $0.box("dtyp") {
                            $0.u32(0)
                            $0.u32(1)
                        }
                    }
                })
        ], describesVideo: false)

    /// Barcodes and QR codes: a JSON array as UTF-8, which every tool shows as text.
    package static let detectedMachineReadableCodes = MetadataTrackFormat(
        keys: [MetadataKey(localID: 1, identifier: MetadataIdentifier.detectedMachineReadableCodes, dataType: .utf8)],
        describesVideo: true)

    /// `item` as a track of this format holds it: record fields the format does not declare
    /// are left out (the names of faces, in a face track declared without the identity
    /// fields).
    package func fitting(_ item: MetadataItem) -> MetadataItem {
        guard case .records(let records) = item.value else { return item }
        let declared = Set(keys.map(\.identifier))
        var fitted = item
        fitted.value = .records(records.map { $0.filter { declared.contains($0.identifier) } })
        return fitted
    }

    func key(localID: UInt32) -> MetadataKey? { keys.first { $0.localID == localID } }
    func key(identifier: String) -> MetadataKey? { keys.first { $0.identifier == identifier } }
}

func boxBytes(_ body: (inout ByteWriter) -> Void) -> [UInt8] {
    var writer = ByteWriter()
    body(&writer)
    return writer.bytes
}
