import Foundation
import SightlineCore

extension ObjectKind {
    /// Barcodes and QR codes (zxing-cpp's): recorded as a JSON array of objects (ID, type,
    /// value, corners, bounds) in UTF-8 text, which every tool shows; Apple documents no key
    /// for them.
    package static let codes = ObjectKind(
        name: "codes", objectName: "code", detection: "barcodes", messageKind: .codes,
        trackIdentifier: MetadataIdentifier.detectedMachineReadableCodes, trackFormat: .detectedMachineReadableCodes,
        colour: .amber,
        record: { message in
            guard let codes = message.codes, let json = try? encoder.encode(codes.map(MachineReadableCodeRecord.init))
            else { return nil }
            let item = MetadataItem(
                identifier: MetadataIdentifier.detectedMachineReadableCodes, dataType: .utf8,
                value: .string(String(decoding: json, as: UTF8.self)))
            return RecordedObjects(items: codes.isEmpty ? [] : [item], usesExtraFields: false)
        },
        drawMessage: { message in message.codes?.map { drawn(MachineReadableCodeRecord($0)) } },
        drawItems: { items in
            items.flatMap { item -> [DrawnObject] in
                guard case .string(let json) = item.value else { return [] }
                let decoded = try? JSONDecoder().decode([MachineReadableCodeRecord].self, from: Data(json.utf8))
                return (decoded ?? []).map(drawn)
            }
        },
        label: { code in code.text ?? "" })

    /// One for every message with codes: made once, not per frame.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    private static func drawn(_ code: MachineReadableCodeRecord) -> DrawnObject {
        var object = DrawnObject(id: code.codeID, bounds: code.bounds)
        object.type = code.type.rawValue
        object.text = code.stringValue
        object.corners = code.corners.flatMap { [$0.x, $0.y] }
        return object
    }
}
