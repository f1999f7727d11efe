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
}
