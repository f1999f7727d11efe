import Foundation
import SightlineCore

/// What a downloaded clip is called: camera, UTC time and who was in it,
/// `door-20261128T001712Z-Ada_Lovelace+Obama.mov`; only letters, digits, `.`, `_`, `-` and
/// `+`, so no browser or shell reads more into it.
enum ClipName {
    static func make(camera: String, start: Double, people: [String], extension: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let parts =
            [camera, formatter.string(from: Date(timeIntervalSince1970: start))] + Set(people).sorted().prefix(4)
        return parts.map(safe).joined(separator: "-") + "." + `extension`
    }

    private static func safe(_ text: String) -> String {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+")
        return String(text.prefix(40).map { allowed.contains($0) ? $0 : "_" })
    }
}
