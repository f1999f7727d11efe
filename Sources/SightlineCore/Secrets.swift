/// Compares two secrets (tokens) without stopping at the first difference, so the time a
/// comparison takes tells an attacker nothing about how much of a guess was right.
package func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    let (x, y) = (Array(a.utf8), Array(b.utf8))
    var difference = UInt8(x.count == y.count ? 0 : 1)
    for index in 0..<max(x.count, y.count) {
        difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0)
    }
    return difference == 0
}

/// A source URL as it may be shown: its password replaced by `***`
/// (`rtsp://admin:***@camera/live`), so that no log line, status, health answer, page or
/// MQTT payload carries a camera's password. The user name stays: it says which account
/// failed. Anything that is not a URL with a password comes back as it was.
package func redactingPassword(_ url: String) -> String {
    guard let scheme = url.range(of: "://") else { return url }
    // The authority ends at the first '/', '?' or '#' after the scheme; its user info is
    // what comes before its last '@' (a password may itself hold an '@').
    let rest = url[scheme.upperBound...]
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
    let authority = rest[..<authorityEnd]
    guard let at = authority.lastIndex(of: "@") else { return url }
    let userInfo = authority[..<at]
    guard let colon = userInfo.firstIndex(of: ":") else { return url }
    return String(url[..<colon]) + ":***" + String(url[at...])
}

/// `url` with `password` set as its user's password, percent-encoded (FFmpeg decodes it):
/// `rtsp://admin@camera/live` and `s3cr@t` give `rtsp://admin:s3cr%40t@camera/live`. Nil
/// when `url` names no user to give it to.
package func settingPassword(_ password: String, in url: String) -> String? {
    guard let scheme = url.range(of: "://") else { return nil }
    let rest = url[scheme.upperBound...]
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
    guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return nil }
    let user = rest[..<at].prefix { $0 != ":" }
    guard !user.isEmpty else { return nil }
    let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
    let hex = Array("0123456789ABCDEF")
    let encoded = password.utf8.map { byte in
        unreserved.contains(byte) ? String(UnicodeScalar(byte)) : "%\(hex[Int(byte >> 4)])\(hex[Int(byte & 15)])"
    }.joined()
    return String(url[..<scheme.upperBound]) + user + ":" + encoded + String(rest[at...])
}

/// `text` with each `${NAME}` replaced by the environment's value of NAME (as Frigate's
/// `{FRIGATE_…}`), so that a config file names a camera's password without holding it.
/// Returns the names that are not set instead, when any is not, so that the caller can say
/// which without ever printing a value.
package func substitutingEnvironment(_ text: String, _ environment: [String: String]) -> Result<String, UnsetVariables>
{
    var result = ""
    var unset: [String] = []
    var rest = Substring(text)
    while let start = rest.range(of: "${") {
        result += rest[..<start.lowerBound]
        guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
            rest = rest[start.lowerBound...]
            break
        }
        let name = String(rest[start.upperBound..<end])
        if let value = environment[name] { result += value } else if !unset.contains(name) { unset.append(name) }
        rest = rest[rest.index(after: end)...]
    }
    result += rest
    return unset.isEmpty ? .success(result) : .failure(UnsetVariables(names: unset))
}

/// The environment variables a `${NAME}` names that are not set.
package struct UnsetVariables: Error, Equatable {
    package var names: [String]

    package init(names: [String]) { self.names = names }
}
