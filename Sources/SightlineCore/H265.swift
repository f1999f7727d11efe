/// H.265 (HEVC) as a movie stores it: NAL unit types, and the `hvcC` decoder configuration
/// record (ISO/IEC 14496-15, 8.3.3) built from the parameter sets a camera sends in-band.
/// The framing (start codes, length prefixes) is `H264`'s: the two codecs share it.
package enum H265 {
    package static let videoParameterSet: UInt8 = 32
    package static let sequenceParameterSet: UInt8 = 33
    package static let pictureParameterSet: UInt8 = 34
    package static let accessUnitDelimiter: UInt8 = 35
    package static let parameterSetTypes: [UInt8] = [videoParameterSet, sequenceParameterSet, pictureParameterSet]
    /// Random access points (BLA, IDR, CRA and the reserved IRAP types): a decoder may start
    /// at a picture made of these.
    package static let randomAccessTypes: ClosedRange<UInt8> = 16...23

    /// The NAL unit type: bits 1-6 of the 2-byte header.
    package static func type(of unit: ArraySlice<UInt8>) -> UInt8 { ((unit.first ?? 0) >> 1) & 0x3F }

    /// What the `hvcC` record says of a stream, read from its SPS.
    package struct SequenceSummary: Equatable, Sendable {
        /// general_profile_space through general_level_idc: 12 bytes as the SPS has them.
        package var profileTierLevel: [UInt8]
        package var chromaFormat: UInt8
        package var bitDepthLumaMinus8: UInt8
        package var bitDepthChromaMinus8: UInt8
        package var temporalLayers: UInt8
        package var temporalIDNested: Bool
        package var width: Int
        package var height: Int
    }

    /// Reads an SPS (its NAL header included); nil when it is cut short or out of range.
    package static func summary(ofSequenceParameterSet unit: ArraySlice<UInt8>) -> SequenceSummary? {
        guard type(of: unit) == sequenceParameterSet, unit.count > 2 else { return nil }
        let payload = rawPayload(unit.dropFirst(2))
        guard payload.count >= 13 else { return nil }
        var bits = BitReader(payload)
        guard bits.read(4) != nil, let subLayersMinus1 = bits.read(3), subLayersMinus1 < 7,
            let nested = bits.read(1), bits.skip(96)
        else { return nil }
        // Sub-layers' profile and level, present or not by a flag each: skipped.
        var present: [(profile: Bool, level: Bool)] = []
        for _ in 0..<subLayersMinus1 {
            guard let profile = bits.read(1), let level = bits.read(1) else { return nil }
            present.append((profile == 1, level == 1))
        }
        if subLayersMinus1 > 0, !bits.skip(2 * (8 - subLayersMinus1)) { return nil }
        for layer in present {
            guard bits.skip(layer.profile ? 88 : 0), bits.skip(layer.level ? 8 : 0) else { return nil }
        }
        guard let id = bits.readExpGolomb(), id < 16, let chroma = bits.readExpGolomb(), chroma <= 3,
            chroma != 3 || bits.skip(1), let width = bits.readExpGolomb(), let height = bits.readExpGolomb(),
            (1...65535).contains(width), (1...65535).contains(height), let cropped = bits.read(1)
        else { return nil }
        if cropped == 1 {
            for _ in 0..<4 { guard bits.readExpGolomb() != nil else { return nil } }
        }
        guard let luma = bits.readExpGolomb(), luma <= 8, let chromaDepth = bits.readExpGolomb(), chromaDepth <= 8
        else { return nil }
        return SequenceSummary(
            profileTierLevel: Array(payload[1..<13]), chromaFormat: UInt8(chroma), bitDepthLumaMinus8: UInt8(luma),
            bitDepthChromaMinus8: UInt8(chromaDepth), temporalLayers: UInt8(subLayersMinus1 + 1),
            temporalIDNested: nested == 1, width: width, height: height)
    }

    /// The `hvcC` record for `units` (VPS, SPS and PPS, as a key frame carries them), with
    /// 4-byte NAL lengths; nil without one of each or with an SPS it cannot read. What the
    /// record only hints at (spatial segmentation, parallelism, frame rate) is left at 0,
    /// "unknown", which every reader accepts.
    package static func configurationRecord(parameterSets units: [ArraySlice<UInt8>]) -> [UInt8]? {
        let arrays = parameterSetTypes.map { kind in units.filter { type(of: $0) == kind } }
        guard arrays.allSatisfy({ !$0.isEmpty && $0.count < 1 << 16 && $0.allSatisfy { $0.count < 1 << 16 } }),
            let summary = summary(ofSequenceParameterSet: arrays[1][0])
        else { return nil }
        var record: [UInt8] = [1] + summary.profileTierLevel
        record += [0xF0, 0x00]  // reserved, min_spatial_segmentation_idc 0
        record += [0xFC]  // reserved, parallelismType 0
        record += [0xFC | summary.chromaFormat, 0xF8 | summary.bitDepthLumaMinus8, 0xF8 | summary.bitDepthChromaMinus8]
        record += [0, 0]  // avgFrameRate 0
        // constantFrameRate 0, numTemporalLayers, temporalIdNested, lengthSizeMinusOne 3
        record.append(summary.temporalLayers << 3 | (summary.temporalIDNested ? 0x04 : 0) | 0x03)
        record.append(UInt8(arrays.count))
        for (kind, array) in zip(parameterSetTypes, arrays) {
            record.append(0x80 | kind)  // complete: every parameter set is here, none in-band needed
            record += [UInt8(array.count >> 8), UInt8(array.count & 0xFF)]
            for unit in array {
                record += [UInt8(unit.count >> 8), UInt8(unit.count & 0xFF)]
                record += unit
            }
        }
        return record
    }

    /// The parameter sets in an `hvcC` record, and its NAL length size; nil when the record
    /// is not one or its lengths do not add up.
    package static func parameterSets(hvcC record: [UInt8]) -> (units: [ArraySlice<UInt8>], lengthSize: Int)? {
        guard record.count >= 23, record[0] == 1 else { return nil }
        var units: [ArraySlice<UInt8>] = []
        var index = 23
        func u16() -> Int? {
            guard index + 2 <= record.count else { return nil }
            defer { index += 2 }
            return Int(record[index]) << 8 | Int(record[index + 1])
        }
        for _ in 0..<record[22] {
            guard index < record.count else { return nil }
            index += 1  // completeness and type: each unit's header says its type
            guard let count = u16() else { return nil }
            for _ in 0..<count {
                guard let length = u16(), length <= record.count - index else { return nil }
                units.append(record[index..<(index + length)])
                index += length
            }
        }
        return (units, Int(record[21] & 0x03) + 1)
    }

    /// The RFC 6381 codec of a stream with this `hvcC` record (`hvc1.1.6.L93.B0`), for
    /// `MediaSource.isTypeSupported`; nil for a record too short to hold one.
    package static func codecString(hvcC record: [UInt8]) -> String? {
        guard record.count >= 13, record[0] == 1 else { return nil }
        let space = ["", "A", "B", "C"][Int(record[1] >> 6)]
        let tier = record[1] & 0x20 != 0 ? "H" : "L"
        let compatibility = record[2..<6].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var constraints = Array(record[6..<12])
        while constraints.last == 0 { constraints.removeLast() }
        return
            ([
                "hvc1", "\(space)\(record[1] & 0x1F)", String(compatibility.bitReversed, radix: 16),
                "\(tier)\(record[12])",
            ] + constraints.map { String($0, radix: 16, uppercase: true) })
            .joined(separator: ".")
    }

    /// A NAL unit's payload without its emulation prevention bytes (00 00 03 → 00 00).
    static func rawPayload(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var payload: [UInt8] = []
        payload.reserveCapacity(bytes.count)
        var zeros = 0
        for byte in bytes {
            if zeros >= 2, byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            payload.append(byte)
        }
        return payload
    }
}

/// Reads bits most significant first, and Exp-Golomb codes; every read is nil past the end.
struct BitReader {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func read(_ count: Int) -> Int? {
        guard count <= 32, position + count <= bytes.count * 8 else { return nil }
        var value = 0
        for _ in 0..<count {
            value = value << 1 | Int(bytes[position >> 3] >> (7 - UInt8(position & 7)) & 1)
            position += 1
        }
        return value
    }

    /// Moves on `count` bits; false when that passes the end.
    mutating func skip(_ count: Int) -> Bool {
        guard position + count <= bytes.count * 8 else { return false }
        position += count
        return true
    }

    /// An unsigned Exp-Golomb code (`ue(v)`), up to 31 leading zeros.
    mutating func readExpGolomb() -> Int? {
        var zeros = 0
        while true {
            guard let bit = read(1) else { return nil }
            if bit == 1 { break }
            zeros += 1
            guard zeros < 32 else { return nil }
        }
        guard let rest = read(zeros) else { return nil }
        return (1 << zeros) - 1 + rest
    }
}

extension UInt32 {
    /// Its bits in the opposite order, as RFC 6381 writes HEVC's compatibility flags.
    fileprivate var bitReversed: UInt32 {
        (0..<32).reduce(UInt32(0)) { reversed, bit in reversed | ((self >> bit) & 1) << (31 - bit) }
    }
}
