import SightlineCore

/// An H.264 video track's format: the decoder configuration record (`avcC`) and the
/// picture size. Samples are length-prefixed NAL units, as the record's length size says.
package struct VideoTrackFormat: Sendable, Hashable {
    package var avcConfiguration: [UInt8]
    package var width: Int
    package var height: Int
    /// Ticks per second of the track (and of the movie); use the source's time base so
    /// timestamps stay exact.
    package var timescale: Int32

    package init(avcConfiguration: [UInt8], width: Int, height: Int, timescale: Int32) throws {
        guard avcConfiguration.count >= 7, avcConfiguration[0] == 1 else {
            throw MovieError.invalidInput("the H.264 configuration is not an avcC record (version 1)")
        }
        guard (1...65535).contains(width), (1...65535).contains(height), timescale > 0 else {
            throw MovieError.invalidInput("video size \(width)x\(height) or timescale \(timescale) is out of range")
        }
        self.avcConfiguration = avcConfiguration
        self.width = width
        self.height = height
        self.timescale = timescale
    }

    /// Builds the `avcC` record from parameter sets in Annex B form (start codes), as an
    /// encoder's extradata or the first key frame carries them.
    package init(annexBParameterSets: [UInt8], width: Int, height: Int, timescale: Int32) throws {
        let units = H264.nalUnits(annexB: annexBParameterSets)
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
        try self.init(avcConfiguration: w.bytes, width: width, height: height, timescale: timescale)
    }

    var sampleEntry: [UInt8] {
        boxBytes { w in
            w.box("avc1") { w in
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
                name.pascalString("H.264")
                w.append(name.bytes)
                w.zeros(32 - name.count)
                w.u16(0x18)  // depth
                w.i16(-1)  // no colour table
                w.box("avcC") { $0.append(avcConfiguration) }
            }
        }
    }
}
