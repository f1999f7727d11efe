/// H.264 bitstream framing: Annex B (start codes, as encoders and the bus carry it) and
/// length-prefixed NAL units (as MP4 and QuickTime store it), and the `avcC` record.
package enum H264 {
    package static let sequenceParameterSet: UInt8 = 7
    package static let pictureParameterSet: UInt8 = 8
    package static let accessUnitDelimiter: UInt8 = 9
    package static let idrSlice: UInt8 = 5

    /// The NAL unit type of a unit's first byte.
    package static func type(of unit: ArraySlice<UInt8>) -> UInt8 { (unit.first ?? 0) & 0x1F }

    /// The NAL units between Annex B start codes (00 00 01 or 00 00 00 01).
    package static func nalUnits(annexB bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var units: [ArraySlice<UInt8>] = []
        var start: Int?
        var index = 0
        while index + 2 < bytes.count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                if let begin = start {
                    var end = index
                    while end > begin, bytes[end - 1] == 0 { end -= 1 }  // the first zero of a 4-byte code
                    units.append(bytes[begin..<end])
                }
                index += 3
                start = index
            } else {
                index += 1
            }
        }
        if let begin = start, begin < bytes.count { units.append(bytes[begin...]) }
        return units.filter { !$0.isEmpty }
    }

    /// The NAL units of length-prefixed data, or nil when the lengths do not add up.
    package static func nalUnits(lengthPrefixed bytes: [UInt8], lengthSize: Int = 4) -> [ArraySlice<UInt8>]? {
        var units: [ArraySlice<UInt8>] = []
        var index = 0
        while index < bytes.count {
            guard index + lengthSize <= bytes.count else { return nil }
            let length = bytes[index..<index + lengthSize].reduce(0) { $0 << 8 | Int($1) }
            index += lengthSize
            guard length > 0, length <= bytes.count - index else { return nil }
            units.append(bytes[index..<index + length])
            index += length
        }
        return units
    }

    /// Annex B bytes for `units`, each after a 4-byte start code.
    package static func annexB<S: Sequence>(_ units: S) -> [UInt8] where S.Element == ArraySlice<UInt8> {
        var bytes: [UInt8] = []
        for unit in units {
            bytes += [0, 0, 0, 1]
            bytes += unit
        }
        return bytes
    }

    /// 4-byte length-prefixed bytes for `units`.
    package static func lengthPrefixed<S: Sequence>(_ units: S) -> [UInt8] where S.Element == ArraySlice<UInt8> {
        var bytes: [UInt8] = []
        for unit in units {
            let count = UInt32(unit.count)
            bytes += [UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
            bytes += unit
        }
        return bytes
    }

    /// The SPS and PPS units of an `avcC` record, and its NAL length size.
    package static func parameterSets(avcC record: [UInt8]) -> (units: [ArraySlice<UInt8>], lengthSize: Int)? {
        guard record.count >= 7, record[0] == 1 else { return nil }
        var units: [ArraySlice<UInt8>] = []
        var index = 5
        for countMask: UInt8 in [0x1F, 0xFF] {
            guard index < record.count else { return nil }
            let count = Int(record[index] & countMask)
            index += 1
            for _ in 0..<count {
                guard index + 2 <= record.count else { return nil }
                let length = Int(record[index]) << 8 | Int(record[index + 1])
                index += 2
                guard index + length <= record.count else { return nil }
                units.append(record[index..<index + length])
                index += length
            }
        }
        return (units, Int(record[4] & 3) + 1)
    }
}
