import SightlineTesting
import Testing

@testable import SightlineCore

/// The `hvcC` record built from an H.265 stream's parameter sets: over generated SPSs (each
/// field drawn from a seed, escaped as a camera sends it), against what the record must say;
/// and hostile bytes never trap. FFmpeg's own record for a libx265 stream is compared in
/// `HEVCRecordingTests`.
@Suite struct H265Tests {
    /// Writes bits most significant first, and Exp-Golomb codes.
    struct BitWriter {
        var bytes: [UInt8] = []
        var count = 0

        mutating func write(_ value: Int, bits: Int) {
            for bit in stride(from: bits - 1, through: 0, by: -1) {
                if count % 8 == 0 { bytes.append(0) }
                bytes[bytes.count - 1] |= UInt8((value >> bit) & 1) << (7 - UInt8(count % 8))
                count += 1
            }
        }

        mutating func writeExpGolomb(_ value: Int) {
            let coded = value + 1
            let length = Int.bitWidth - coded.leadingZeroBitCount
            write(0, bits: length - 1)
            write(coded, bits: length)
        }
    }

    /// A NAL unit's payload with emulation prevention bytes, as in a stream.
    static func escaped(_ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var zeros = 0
        for byte in payload {
            if zeros >= 2, byte <= 3 {
                out.append(3)
                zeros = 0
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return out
    }

    /// An SPS drawn from `random`, and what its record must say.
    static func sequenceParameterSet(_ random: inout SplitMix) -> (unit: [UInt8], summary: H265.SequenceSummary) {
        var bits = BitWriter()
        bits.write(random.next(below: 16), bits: 4)
        let subLayersMinus1 = random.next(below: 7)
        bits.write(subLayersMinus1, bits: 3)
        let nested = random.next(below: 2)
        bits.write(nested, bits: 1)
        // Often zeros, so that escapes turn up inside the profile, tier and level.
        let profileTierLevel = (0..<12).map { _ in random.next(below: 3) == 0 ? 0 : UInt8(random.next(below: 256)) }
        for byte in profileTierLevel { bits.write(Int(byte), bits: 8) }
        let present = (0..<subLayersMinus1).map { _ in (random.next(below: 2), random.next(below: 2)) }
        for (profile, level) in present {
            bits.write(profile, bits: 1)
            bits.write(level, bits: 1)
        }
        if subLayersMinus1 > 0 { bits.write(0, bits: 2 * (8 - subLayersMinus1)) }
        for (profile, level) in present {
            for _ in 0..<(profile * 11 + level) { bits.write(random.next(below: 256), bits: 8) }
        }
        bits.writeExpGolomb(random.next(below: 16))
        let chroma = random.next(below: 4)
        bits.writeExpGolomb(chroma)
        if chroma == 3 { bits.write(random.next(below: 2), bits: 1) }
        let (width, height) = (1 + random.next(below: 8192), 1 + random.next(below: 4320))
        bits.writeExpGolomb(width)
        bits.writeExpGolomb(height)
        let cropped = random.next(below: 2)
        bits.write(cropped, bits: 1)
        if cropped == 1 { for _ in 0..<4 { bits.writeExpGolomb(random.next(below: 64)) } }
        let (luma, chromaDepth) = (random.next(below: 9), random.next(below: 9))
        bits.writeExpGolomb(luma)
        bits.writeExpGolomb(chromaDepth)
        for _ in 0..<random.next(below: 40) { bits.write(random.next(below: 2), bits: 1) }  // the rest of an SPS
        bits.write(1, bits: 1)  // rbsp_stop_one_bit
        let unit = [0x42, 0x01] + escaped(bits.bytes)
        return (
            unit,
            H265.SequenceSummary(
                profileTierLevel: profileTierLevel, chromaFormat: UInt8(chroma), bitDepthLumaMinus8: UInt8(luma),
                bitDepthChromaMinus8: UInt8(chromaDepth), temporalLayers: UInt8(subLayersMinus1 + 1),
                temporalIDNested: nested == 1, width: width, height: height)
        )
    }

    static func otherUnit(type: UInt8, _ random: inout SplitMix) -> [UInt8] {
        [type << 1, 0x01] + escaped((0..<(1 + random.next(below: 30))).map { _ in UInt8(random.next(below: 256)) })
    }

    @Test func recordsSayWhatGeneratedParameterSetsSay() throws {
        for seed in UInt64(0)..<2_000 {
            var random = SplitMix(seed: seed)
            let (sps, expected) = Self.sequenceParameterSet(&random)
            #expect(H265.summary(ofSequenceParameterSet: sps[...]) == expected, "seed \(seed)")
            let vps = (0...random.next(below: 2)).map { _ in Self.otherUnit(type: H265.videoParameterSet, &random) }
            let pps = (0...random.next(below: 3)).map { _ in Self.otherUnit(type: H265.pictureParameterSet, &random) }
            // In any order, as a stream may send them, with a slice after them.
            let units = (pps + [sps] + vps + [Self.otherUnit(type: 19, &random)]).map { $0[...] }
            let record = try #require(H265.configurationRecord(parameterSets: units), "seed \(seed)")
            #expect(record[0] == 1 && Array(record[1..<13]) == expected.profileTierLevel)
            #expect(record[13] == 0xF0 && record[14] == 0 && record[15] == 0xFC)
            #expect(record[16] == 0xFC | expected.chromaFormat)
            #expect(
                record[17] == 0xF8 | expected.bitDepthLumaMinus8 && record[18] == 0xF8 | expected.bitDepthChromaMinus8)
            #expect(record[21] >> 3 == expected.temporalLayers && (record[21] & 0x04 != 0) == expected.temporalIDNested)
            let (back, lengthSize) = try #require(H265.parameterSets(hvcC: record))
            #expect(lengthSize == 4)
            #expect(back.map(Array.init) == vps + [sps] + pps, "seed \(seed)")
        }
    }

    @Test func withoutOneOfEachThereIsNoRecord() {
        var random = SplitMix(seed: 7)
        let sps = Self.sequenceParameterSet(&random).unit[...]
        let vps = Self.otherUnit(type: H265.videoParameterSet, &random)[...]
        let pps = Self.otherUnit(type: H265.pictureParameterSet, &random)[...]
        #expect(H265.configurationRecord(parameterSets: [vps, sps, pps]) != nil)
        #expect(H265.configurationRecord(parameterSets: [sps, pps]) == nil)
        #expect(H265.configurationRecord(parameterSets: [vps, pps]) == nil)
        #expect(H265.configurationRecord(parameterSets: [vps, sps]) == nil)
    }

    @Test func codecStringsFollowRFC6381() {
        func record(_ first: UInt8, _ compatibility: [UInt8], level: UInt8, constraints: [UInt8]) -> [UInt8] {
            [1, first] + compatibility + constraints + [level] + Array(repeating: 0, count: 10)
        }
        // Main: profile 1, compatible with 1 and 2 (reversed: 6), level 3.1, progressive and frame-only.
        #expect(
            H265.codecString(hvcC: record(0x01, [0x60, 0, 0, 0], level: 93, constraints: [0xB0, 0, 0, 0, 0, 0]))
                == "hvc1.1.6.L93.B0")
        // Main 10, high tier, level 4.
        #expect(
            H265.codecString(hvcC: record(0x22, [0x20, 0, 0, 0], level: 120, constraints: [0x90, 0, 0, 0, 0, 0]))
                == "hvc1.2.4.H120.90")
        // A profile space, and constraint bytes that end later.
        #expect(
            H265.codecString(hvcC: record(0x43, [0x10, 0, 0, 0], level: 150, constraints: [0xB0, 0, 0x08, 0, 0, 0]))
                == "hvc1.A3.8.L150.B0.0.8")
        #expect(H265.codecString(hvcC: [1, 2, 3]) == nil)
    }

    /// Cut, flipped and made-up bytes: nil or a record, never a trap or a read past the end.
    @Test func hostileBytesNeverTrap() {
        var random = SplitMix(seed: 0x265)
        for _ in 0..<5_000 {
            var (sps, _) = Self.sequenceParameterSet(&random)
            switch random.next(below: 3) {
            case 0: sps = Array(sps.prefix(random.next(below: sps.count + 1)))
            case 1:
                for _ in 0...random.next(below: 4) { sps[random.next(below: sps.count)] ^= 1 << random.next(below: 8) }
            default: sps = [0x42, 0x01] + (0..<random.next(below: 64)).map { _ in UInt8(random.next(below: 256)) }
            }
            _ = H265.summary(ofSequenceParameterSet: sps[...])
            let units = [Self.otherUnit(type: 32, &random)[...], sps[...], Self.otherUnit(type: 34, &random)[...]]
            if var record = H265.configurationRecord(parameterSets: units) {
                _ = H265.codecString(hvcC: record)
                record = Array(record.prefix(random.next(below: record.count + 1)))
                if !record.isEmpty { record[random.next(below: record.count)] = UInt8(random.next(below: 256)) }
                _ = H265.parameterSets(hvcC: record)
                _ = H265.codecString(hvcC: record)
            }
            let noise = (0..<random.next(below: 80)).map { _ in UInt8(random.next(below: 256)) }
            _ = H265.parameterSets(hvcC: [1] + noise)
            _ = H265.codecString(hvcC: [1] + noise)
        }
    }
}
