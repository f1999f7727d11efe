import Foundation
import SightlineCore
import SightlineTesting
import Testing

/// A camera's password, over URLs drawn from seeds: set from a file, it reaches FFmpeg
/// encoded; shown anywhere, it is `***`.
@Suite struct SourceSecretsTests {
    /// Bytes a password or a user name may hold, the URL's own delimiters included.
    static let alphabet = Array("abcXYZ019-._~!$&'()*+,;=:@/?#[]% \u{e9}\u{1F600}")

    static func text(_ random: inout SplitMix, count: ClosedRange<Int>) -> String {
        let length = count.lowerBound + random.next(below: count.count)
        return String((0..<length).map { _ in alphabet[random.next(below: alphabet.count)] })
    }

    /// Over 2,000 seeds: a password set into a URL is percent-encoded (no delimiter of its
    /// own left to cut the URL), decodes back to itself, and the URL as shown holds the
    /// user and host and path, `:***@`, and never the password.
    @Test func aPasswordSetIsEncodedAndNeverShown() throws {
        for seed in 0..<2000 as Range<UInt64> {
            var random = SplitMix(seed: seed)
            let user = "u" + Self.text(&random, count: 0...8).filter { $0.isLetter || $0.isNumber }
            let password = Self.text(&random, count: 1...40)
            let host = ["camera", "10.0.0.7:554", "[fe80::1]:8554"][random.next(below: 3)]
            let path = ["", "/", "/live/main", "/Streaming/Channels/101?transport=tcp", "#x"][random.next(below: 5)]
            let scheme = ["rtsp", "rtsps", "http", "srt"][random.next(below: 4)]
            let url = try #require(settingPassword(password, in: "\(scheme)://\(user)@\(host)\(path)"), "seed \(seed)")
            let prefix = "\(scheme)://\(user):"
            #expect(url.hasPrefix(prefix) && url.hasSuffix("@\(host)\(path)"), "seed \(seed): \(url)")
            let encoded = String(url.dropFirst(prefix.count).dropLast("@\(host)\(path)".count))
            #expect(!encoded.contains { "@/?#:".contains($0) }, "seed \(seed): \(encoded)")
            #expect(encoded.removingPercentEncoding == password, "seed \(seed)")
            let shown = redactingPassword(url)
            #expect(shown == "\(scheme)://\(user):***@\(host)\(path)", "seed \(seed)")
            // The error a source gives, logged and published, shows it so too.
            let error = SightlineError.sourceUnavailable(source: url, reason: "refused by \(url)")
            #expect(
                !"\(error)".contains("\(user):\(encoded)@") && "\(error)".contains("\(user):***@"), "seed \(seed)")
        }
    }

    /// A raw password (as typed into a config) is cut at the URL's last '@' before the
    /// path, as FFmpeg cuts it; URLs without one come back as they were.
    @Test func onlyAPasswordIsRedacted() {
        let cases = [
            ("rtsp://admin:pa@ss@cam/live", "rtsp://admin:***@cam/live"),
            ("rtsp://admin:@cam/live", "rtsp://admin:***@cam/live"),
            ("rtsp://admin@cam/live", "rtsp://admin@cam/live"),
            ("rtsp://cam/live?user=a:b@c", "rtsp://cam/live?user=a:b@c"),
            ("/videos/a:b@c.mp4", "/videos/a:b@c.mp4"),
            ("/dev/video0", "/dev/video0"),
            ("", ""),
        ]
        for (url, shown) in cases { #expect(redactingPassword(url) == shown, "\(url)") }
        #expect(settingPassword("x", in: "rtsp://cam/live") == nil)  // no user to give it to
        #expect(settingPassword("x", in: "rtsp://:old@cam/live") == nil)
        #expect(settingPassword("new", in: "rtsp://admin:old@cam/live") == "rtsp://admin:new@cam/live")
    }

    /// Each `${NAME}` is replaced; the names not set are all given, once each and in order,
    /// and never a value; text without `${` is left as it is.
    @Test func environmentVariablesAreSubstitutedOrNamed() throws {
        let environment = ["CAM_PASSWORD": "s3cr@t", "EMPTY": "", "HOST": "10.0.0.7"]
        #expect(
            try substitutingEnvironment("rtsp://admin:${CAM_PASSWORD}@${HOST}/live", environment).get()
                == "rtsp://admin:s3cr@t@10.0.0.7/live")
        #expect(try substitutingEnvironment("a${EMPTY}b", environment).get() == "ab")
        #expect(try substitutingEnvironment("$HOST {HOST} ${HOST", environment).get() == "$HOST {HOST} ${HOST")
        #expect(
            substitutingEnvironment("${A}${HOST}${B}${A}", environment)
                == .failure(UnsetVariables(names: ["A", "B"])))
        // Over seeds: text without variables comes back unchanged.
        for seed in 0..<500 as Range<UInt64> {
            var random = SplitMix(seed: seed)
            let text = Self.text(&random, count: 0...60).replacingOccurrences(of: "${", with: "")
            #expect(try substitutingEnvironment(text, environment).get() == text, "seed \(seed)")
        }
    }
}
