/// The codecs Sightline carries and records as they come, without decoding: what a NAL unit's
/// type means in each, and how a movie names the track's format. Both frame their NAL units
/// the same way (Annex B on the bus, length-prefixed in a movie: `H264`'s framing serves
/// both); they differ in the header's layout and the configuration record.
package enum VideoCodec: String, Sendable, Hashable, CaseIterable {
    /// H.264 (AVC): `avc1` with an `avcC` record.
    case h264
    /// H.265 (HEVC), as FFmpeg names it: `hvc1` with an `hvcC` record.
    case hevc

    /// The codec a `video` message's `codec` names; nil for one Sightline does not carry.
    package init?(name: String) { self.init(rawValue: name) }

    /// The NAL unit type in a unit's header (its first byte in H.264, bits 1-6 in H.265).
    package func type(of unit: ArraySlice<UInt8>) -> UInt8 {
        switch self {
        case .h264: H264.type(of: unit)
        case .hevc: H265.type(of: unit)
        }
    }

    /// A parameter set: an SPS or PPS, and in H.265 a VPS. A key frame carries them in-band;
    /// a movie keeps them in the track's configuration record instead.
    package func isParameterSet(_ unit: ArraySlice<UInt8>) -> Bool {
        switch self {
        case .h264: [H264.sequenceParameterSet, H264.pictureParameterSet].contains(type(of: unit))
        case .hevc: H265.parameterSetTypes.contains(type(of: unit))
        }
    }

    /// What a movie's sample holds of an access unit: neither parameter sets nor delimiters.
    package func belongsInSample(_ unit: ArraySlice<UInt8>) -> Bool {
        guard !isParameterSet(unit) else { return false }
        switch self {
        case .h264: return type(of: unit) != H264.accessUnitDelimiter
        case .hevc: return type(of: unit) != H265.accessUnitDelimiter
        }
    }

    /// The movie sample entry's type.
    package var sampleEntryType: String {
        switch self {
        case .h264: "avc1"
        case .hevc: "hvc1"
        }
    }

    /// The configuration record's box inside the sample entry.
    package var configurationBoxType: String {
        switch self {
        case .h264: "avcC"
        case .hevc: "hvcC"
        }
    }

    /// The codec's name for people: log lines and errors.
    package var displayName: String {
        switch self {
        case .h264: "H.264"
        case .hevc: "H.265"
        }
    }
}
