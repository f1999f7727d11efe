import SightlineCore

/// A video track's format: its codec (H.264 or H.265), the decoder configuration record
/// (`avcC` or `hvcC`) and the picture size. Samples are length-prefixed NAL units, as the
/// record's length size says.
package struct VideoTrackFormat: Sendable, Hashable {
    package var codec: VideoCodec
    /// The configuration box's payload, as a decoder's extradata takes it.
    package var configuration: [UInt8]
    package var width: Int
    package var height: Int
    /// Ticks per second of the track (and of the movie); use the source's time base so
    /// timestamps stay exact.
    package var timescale: Int32

    package init(codec: VideoCodec = .h264, configuration: [UInt8], width: Int, height: Int, timescale: Int32) throws {
        let readable =
            switch codec {
            case .h264: configuration.count >= 7 && configuration[0] == 1
            case .hevc: H265.parameterSets(hvcC: configuration) != nil
            }
        guard readable else {
            throw MovieError.invalidInput(
                "the \(codec.displayName) configuration is not an \(codec.configurationBoxType) record (version 1)")
        }
        guard (1...65535).contains(width), (1...65535).contains(height), timescale > 0 else {
            throw MovieError.invalidInput("video size \(width)x\(height) or timescale \(timescale) is out of range")
        }
        self.codec = codec
        self.configuration = configuration
        self.width = width
        self.height = height
        self.timescale = timescale
    }

    /// Builds the `avcC` or `hvcC` record from parameter sets in Annex B form (start codes),
    /// as an encoder's extradata or the first key frame carries them.
    package init(
        annexBParameterSets: [UInt8], codec: VideoCodec = .h264, width: Int, height: Int, timescale: Int32
    ) throws {
        let units = H264.nalUnits(annexB: annexBParameterSets)
        if codec == .hevc {
            guard let record = H265.configurationRecord(parameterSets: units) else {
                throw MovieError.invalidInput(
                    "the H.265 parameter sets lack a VPS, an SPS or a PPS, or the SPS is unreadable")
            }
            try self.init(codec: .hevc, configuration: record, width: width, height: height, timescale: timescale)
            return
        }
        let sps = units.filter { H264.type(of: $0) == H264.sequenceParameterSet }
        let pps = units.filter { H264.type(of: $0) == H264.pictureParameterSet }
        guard let first = sps.first, first.count >= 4, !pps.isEmpty else {
            throw MovieError.invalidInput("the H.264 parameter sets lack an SPS or a PPS")
        }
        var w = ByteWriter()
        w.u8(1)
        w.append(first.dropFirst().prefix(3))  // profile, compatibility, level
        w.u8(0xFF)  // 4-byte NAL lengths
        w.u8(0xE0 | UInt8(sps.count))
        for unit in sps {
            w.u16(UInt16(unit.count))
            w.append(unit)
        }
        w.u8(UInt8(pps.count))
        for unit in pps {
            w.u16(UInt16(unit.count))
            w.append(unit)
        }
        try self.init(configuration: w.bytes, width: width, height: height, timescale: timescale)
    }

    /// The RFC 6381 codec (`avc1.64001f`, `hvc1.1.6.L93.B0`): profile, constraints and level
    /// from the configuration record, as a browser's `canPlayType` and `isTypeSupported` take
    /// it.
    package var codecString: String {
        switch codec {
        case .h264: "avc1." + configuration[1...3].map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        case .hevc: H265.codecString(hvcC: configuration) ?? "hvc1"
        }
    }

    var sampleEntry: [UInt8] {
        boxBytes { w in
            w.box(FourCC(stringLiteral: codec.sampleEntryType)) { w in
                w.zeros(6)
                w.u16(1)  // data reference index
                w.zeros(16)  // version, revision, vendor, temporal and spatial quality
                w.u16(UInt16(width))
                w.u16(UInt16(height))
                w.u32(0x0048_0000)  // 72 dpi
                w.u32(0x0048_0000)
                w.u32(0)
                w.u16(1)  // frames per sample
                var name = ByteWriter()
                name.pascalString(codec.displayName)
                w.append(name.bytes)
                w.zeros(32 - name.count)
                w.u16(0x18)  // depth
                w.i16(-1)  // no colour table
                w.box(FourCC(stringLiteral: codec.configurationBoxType)) { $0.append(configuration) }
            }
        }
    }
}
