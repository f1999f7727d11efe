import SightlineCore

/// The bytes of timed metadata samples and of the `mebx` sample entry.
enum MetadataCoding {
    /// The 8-byte item iOS writes for "no metadata during this sample".
    static let nullSample: [UInt8] = [0, 0, 0, 8, 0, 0, 0, 0]

    // MARK: Samples

    /// One sample holding `items`, each keyed by its local id in `format`; the NULL sample
    /// when `items` is empty (zero-byte samples are illegal).
    static func sample(_ items: [MetadataItem], format: MetadataTrackFormat) throws -> [UInt8] {
        if items.isEmpty { return nullSample }
        var writer = ByteWriter()
        try writeItems(items, format: format, into: &writer)
        return writer.bytes
    }

    private static func writeItems(_ items: [MetadataItem], format: MetadataTrackFormat, into writer: inout ByteWriter)
        throws
    {
        for item in items {
            guard let key = format.key(identifier: item.identifier) else {
                throw MovieError.invalidInput("the track has no key '\(item.identifier)'")
            }
            let value = try encode(item.value, as: key, format: format)
            writer.u32(UInt32(8 + value.count))
            writer.u32(key.localID)
            writer.append(value)
        }
    }

    static func encode(_ value: MetadataValue, as key: MetadataKey, format: MetadataTrackFormat) throws -> [UInt8] {
        var w = ByteWriter()
        func mismatch() -> MovieError {
            .invalidInput("'\(key.identifier)' is declared \(key.dataType); \(value) does not fit")
        }
        func number() throws -> Double {
            switch value {
            case .float(let v): return v
            case .int(let v): return Double(v)
            case .uint(let v): return Double(v)
            default: throw mismatch()
            }
        }
        if case .data(let bytes) = value { return bytes }
        switch key.dataType {
        case .wellKnown(1), .wellKnown(4):
            guard case .string(let text) = value else { throw mismatch() }
            w.append(Array(text.utf8))
        case .wellKnown(2), .wellKnown(5):
            guard case .string(let text) = value else { throw mismatch() }
            for unit in text.utf16 { w.u16(unit) }
        case .wellKnown(23): w.f32(Float(try number()))
        case .wellKnown(24): w.f64(try number())
        case _ where key.dataType.integerLayout != nil:
            guard writeInteger(value, as: key.dataType, into: &w) else { throw mismatch() }
        case .wellKnown(let code) where key.dataType.allowsComponents(0) != nil:
            guard case .floats(let components) = value, key.dataType.allowsComponents(components.count) == true else {
                throw mismatch()
            }
            for component in components {
                if code == 79 { w.f64(component) } else { w.f32(Float(component)) }
            }
        case .named:
            switch value {
            case .records(let records): try writeRecords(records, format: format, into: &w)
            case .string(let text) where key.conformingTypes.contains(1): w.append(Array(text.utf8))
            default: throw mismatch()
            }
        default:
            throw mismatch()
        }
        return w.bytes
    }

    /// `value` big-endian in the integer layout of `dataType`; false when it does not fit.
    private static func writeInteger(_ value: MetadataValue, as dataType: MetadataDataType, into w: inout ByteWriter)
        -> Bool
    {
        guard let (bits, signed) = dataType.integerLayout else { return false }
        let wide: Int64
        switch value {
        case .int(let v): wide = v
        case .uint(let v) where v <= UInt64(Int64.max): wide = Int64(v)
        case .uint(let v) where bits == 64 && !signed:
            w.u64(v)
            return true
        default: return false
        }
        guard dataType.holds(wide) else { return false }
        let pattern = UInt64(bitPattern: wide)
        for shift in stride(from: bits - 8, through: 0, by: -8) {
            w.u8(UInt8(truncatingIfNeeded: pattern >> UInt64(shift)))
        }
        return true
    }

    /// Records (faces, codes) as `crec` boxes, each holding its fields as items in `cits`.
    private static func writeRecords(_ records: [[MetadataItem]], format: MetadataTrackFormat, into w: inout ByteWriter)
        throws
    {
        for record in records {
            var fields = ByteWriter()
            try writeItems(record, format: format, into: &fields)
            w.u32(UInt32(16 + fields.count))
            w.fourCC("crec")
            w.u32(UInt32(8 + fields.count))
            w.fourCC("cits")
            w.append(fields.bytes)
        }
    }

    /// The items of a sample. Unknown ids and id 0 are padding; an item that overruns the
    /// sample ends the list.
    static func items(in bytes: [UInt8], range: Range<Int>, format: MetadataTrackFormat, depth: Int = 0)
        -> [MetadataItem]
    {
        var reader = ByteReader(bytes, range: range)
        var items: [MetadataItem] = []
        while reader.remaining >= 8 {
            let start = reader.position
            guard let size = try? Int(reader.u32()), let id = try? reader.u32(), size >= 8, size <= reader.remaining + 8
            else { break }
            let valueRange = (start + 8)..<(start + size)
            try? reader.skip(size - 8)
            guard id != 0, id != 0xFFFF_FFFF, let key = format.key(localID: id) else { continue }
            items.append(
                MetadataItem(
                    identifier: key.identifier, dataType: key.dataType,
                    value: decode(bytes, range: valueRange, key: key, format: format, depth: depth)))
        }
        return items
    }

    static func decode(_ bytes: [UInt8], range: Range<Int>, key: MetadataKey, format: MetadataTrackFormat, depth: Int)
        -> MetadataValue
    {
        var r = ByteReader(bytes, range: range)
        let raw = MetadataValue.data(Array(bytes[range]))
        func fixed<T>(_ size: Int, _ read: (inout ByteReader) throws -> T) -> T? {
            guard range.count == size else { return nil }
            return try? read(&r)
        }
        let decoded: MetadataValue?
        switch key.dataType {
        case .wellKnown(1), .wellKnown(4): decoded = .string(String(decoding: bytes[range], as: UTF8.self))
        case .wellKnown(2), .wellKnown(5):
            let units = stride(from: range.lowerBound, to: range.upperBound - 1, by: 2).map {
                UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1])
            }
            decoded = .string(String(decoding: units, as: UTF16.self))
        case .wellKnown(23): decoded = fixed(4) { .float(Double(try $0.f32())) }
        case .wellKnown(24): decoded = fixed(8) { .float(try $0.f64()) }
        case .wellKnown(65): decoded = fixed(1) { .int(Int64(Int8(bitPattern: try $0.u8()))) }
        case .wellKnown(66): decoded = fixed(2) { .int(Int64(try $0.i16())) }
        case .wellKnown(67): decoded = fixed(4) { .int(Int64(try $0.i32())) }
        case .wellKnown(74): decoded = fixed(8) { .int(try $0.i64()) }
        case .wellKnown(75): decoded = fixed(1) { .uint(UInt64(try $0.u8())) }
        case .wellKnown(76): decoded = fixed(2) { .uint(UInt64(try $0.u16())) }
        case .wellKnown(77): decoded = fixed(4) { .uint(UInt64(try $0.u32())) }
        case .wellKnown(78): decoded = fixed(8) { .uint(try $0.u64()) }
        case .wellKnown(let code) where key.dataType.allowsComponents(0) != nil:
            let width = code == 79 ? 8 : 4
            let count = range.count / width
            if range.count % width == 0, key.dataType.allowsComponents(count) == true {
                decoded = .floats(
                    (0..<count).compactMap { _ in width == 8 ? try? r.f64() : (try? r.f32()).map(Double.init) })
            } else {
                decoded = nil
            }
        case .named:
            if let records = self.records(bytes, range: range, format: format, depth: depth) {
                decoded = .records(records)
            } else if key.conformingTypes.contains(1) {
                decoded = .string(String(decoding: bytes[range], as: UTF8.self))
            } else {
                decoded = nil
            }
        default: decoded = nil
        }
        return decoded ?? raw
    }

    /// `crec` → `cits` → items, when the value is laid out that way (detected faces and
    /// other record collections); nil otherwise.
    private static func records(_ bytes: [UInt8], range: Range<Int>, format: MetadataTrackFormat, depth: Int)
        -> [[MetadataItem]]?
    {
        guard depth < 4, range.count >= 8, let crecs = try? Box.children(of: bytes, in: range), !crecs.isEmpty,
            crecs.allSatisfy({ $0.type == "crec" })
        else { return nil }
        return crecs.map { crec in
            let cits = (try? Box.children(of: bytes, in: crec.payload))?.first("cits")
            return cits.map { items(in: bytes, range: $0.payload, format: format, depth: depth + 1) } ?? []
        }
    }

    // MARK: Sample entry

    static func sampleEntry(_ format: MetadataTrackFormat) -> [UInt8] {
        boxBytes { w in
            w.box("mebx") { w in
                w.zeros(6)
                w.u16(1)
                w.box("keys") { w in
                    for key in format.keys {
                        w.box(FourCC(rawValue: key.localID)) { w in
                            let (namespace, name) = split(key.identifier)
                            w.box("keyd") {
                                $0.fourCC(namespace)
                                $0.append(Array(name.utf8))
                            }
                            w.box("dtyp") { w in
                                switch key.dataType {
                                case .wellKnown(let code):
                                    w.u32(0)
                                    w.u32(code)
                                case .named(let name):
                                    w.u32(1)
                                    w.append(Array(name.utf8))
                                case .other(let namespace, let bytes):
                                    w.u32(namespace)
                                    w.append(bytes)
                                }
                            }
                            w.append(key.extraBoxes)
                        }
                    }
                }
                w.append(format.trailingBoxes)
            }
        }
    }

    /// Splits `mdta/com.example.key` into the key namespace and the key.
    static func split(_ identifier: String) -> (FourCC, String) {
        let parts = identifier.split(separator: "/", maxSplits: 1)
        guard parts.count == 2, parts[0].unicodeScalars.count == 4 else { return ("mdta", identifier) }
        return (FourCC(stringLiteral: String(parts[0])), String(parts[1]))
    }

    /// Parses a `mebx` sample entry's payload (after the 8-byte box header).
    static func parseSampleEntry(_ bytes: [UInt8], payload: Range<Int>, describesVideo: Bool) throws
        -> MetadataTrackFormat
    {
        guard payload.count >= 8 else { throw MovieError.malformed("'mebx' sample entry is too short") }
        let boxes = try Box.children(of: bytes, in: (payload.lowerBound + 8)..<payload.upperBound)
        guard let keysBox = boxes.first("keys") else { throw MovieError.malformed("'mebx' sample entry has no 'keys'") }
        var keys: [MetadataKey] = []
        for keyBox in try Box.children(of: bytes, in: keysBox.payload) where keyBox.type.rawValue != 0 {
            var identifier = ""
            var dataType = MetadataDataType.raw
            var extras: [UInt8] = []
            for child in try Box.children(of: bytes, in: keyBox.payload) {
                var r = ByteReader(bytes, range: child.payload)
                switch child.type {
                case "keyd":
                    let namespace = try r.fourCC()
                    identifier = "\(namespace)/" + String(decoding: r.rest(), as: UTF8.self)
                case "dtyp":
                    let namespace = try r.u32()
                    if namespace == 0, r.remaining == 4 {
                        dataType = .wellKnown(try r.u32())
                    } else if namespace == 1 {
                        dataType = .named(String(decoding: r.rest(), as: UTF8.self))
                    } else {
                        dataType = .other(namespace: namespace, bytes: Array(r.rest()))
                    }
                default: extras.append(contentsOf: bytes[child.start..<child.end])
                }
            }
            keys.append(
                MetadataKey(
                    localID: keyBox.type.rawValue, identifier: identifier, dataType: dataType, extraBoxes: extras))
        }
        let trailing = boxes.filter { $0.type != "keys" }.flatMap { bytes[$0.start..<$0.end] }
        return MetadataTrackFormat(keys: keys, describesVideo: describesVideo, trailingBoxes: trailing)
    }
}
