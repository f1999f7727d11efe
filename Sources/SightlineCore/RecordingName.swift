import Foundation

/// How a recorder names its files: `<source>-<yyyyMMdd'T'HHmmss'Z'>[-N].mov`.
package enum RecordingName {
    /// The source a file name says the recording is of; nil for a name a recorder does not
    /// give.
    package static func sourceID(of name: String) -> String? {
        guard name.hasSuffix(".mov") else { return nil }
        var stem = Substring(name.dropLast(4))
        // An optional "-N" counter after the time.
        if let dash = stem.lastIndex(of: "-"), stem[stem.index(after: dash)...].allSatisfy(\.isNumber),
            stem.index(after: dash) != stem.endIndex, stem[..<dash].hasSuffix("Z")
        {
            stem = stem[..<dash]
        }
        guard stem.count > 17, let dash = stem.index(stem.endIndex, offsetBy: -17, limitedBy: stem.startIndex),
            stem[dash] == "-"
        else { return nil }
        let time = stem[stem.index(after: dash)...]
        let shape = Array(time)
        guard shape.count == 16, shape[8] == "T", shape[15] == "Z",
            shape[0..<8].allSatisfy(\.isNumber), shape[9..<15].allSatisfy(\.isNumber)
        else { return nil }
        let source = String(stem[..<dash])
        return source.isEmpty ? nil : source
    }

    /// The camera a recording is of: its source, or the file name without its extension for
    /// a file a recorder did not name.
    package static func sourceIDOrStem(of name: String) -> String {
        if let source = sourceID(of: name) { return source }
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// The UTC start in a file name, to the second: `<source>-20261121T125301Z.mov` as a
    /// recorder names its files, or any name with such a time in it.
    package static func startTime(of name: String) -> Double? {
        let stem = (name as NSString).deletingPathExtension
        guard let range = stem.range(of: #"\d{8}T\d{6}Z"#, options: [.regularExpression, .backwards]) else {
            return nil
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.date(from: String(stem[range]))?.timeIntervalSince1970
    }
}
