import SightlineTesting
import Testing

@testable import SightlineCapture

/// The waits between tries to open a stream again, as values.
@Suite struct ReconnectBackoffTests {
    /// Without jitter: 0.5 s doubling to 10 s; a refused connection (a camera booting)
    /// goes back to the first wait; refused credentials climb to a minute.
    @Test func waitsDoubleToTheirLongest() {
        var backoff = ReconnectBackoff()
        var waits: [Duration] = []
        for _ in 0..<8 {
            waits.append(backoff.nextDelay(random: 0))
            backoff.failed(because: "no answer within 5.0 seconds")
        }
        #expect(waits == [0.5, 1, 2, 4, 8, 10, 10, 10].map { .milliseconds(Int64($0 * 1000)) })

        backoff.failed(because: "Connection refused")
        #expect(backoff.nextDelay(random: 0) == .milliseconds(500))

        var refused = ReconnectBackoff()
        var credentials: [Duration] = []
        for _ in 0..<9 {
            refused.failed(because: "Server returned 401 Unauthorized (authorization failed)")
            credentials.append(refused.nextDelay(random: 0))
        }
        #expect(credentials == [1, 2, 4, 8, 16, 32, 60, 60, 60].map { .seconds($0) })
    }

    /// Over seeds and reasons: every wait is within a fifth of its base either way, never
    /// more than the longest allowed for its reason, never below the first less a fifth.
    @Test func jitterStaysWithinAFifth() {
        let reasons = ["end of stream", "Connection refused", "403 Forbidden", "Connection reset by peer"]
        for seed in 0..<300 as Range<UInt64> {
            var random = SplitMix(seed: seed)
            var backoff = ReconnectBackoff()
            var plain = ReconnectBackoff()
            for _ in 0..<20 {
                let draw = random.next(in: -1...1)
                let wait = backoff.nextDelay(random: draw)
                let base = plain.nextDelay(random: 0)
                #expect(wait >= base * 0.8 && wait <= base * 1.2, "seed \(seed)")
                #expect(wait >= .milliseconds(400) && wait <= .seconds(72), "seed \(seed)")
                let reason = reasons[random.next(below: reasons.count)]
                backoff.failed(because: reason)
                plain.failed(because: reason)
            }
        }
    }
}
