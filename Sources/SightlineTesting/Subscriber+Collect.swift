import SightlineBus

extension Subscriber {
    /// Receives until `done` holds for what arrived (or `timeout` passes), then keeps
    /// listening for `settle` so that anything extra shows up in the result too.
    ///
    /// Tests use this instead of "receive until a short silence": on a loaded CI machine a
    /// short silence can come before the last message, and the test then fails for nothing.
    package func collect(
        timeout: Duration = .seconds(20), settle: Duration = .milliseconds(200),
        until done: ([ReceivedMessage]) -> Bool
    ) throws -> [ReceivedMessage] {
        var received: [ReceivedMessage] = []
        let deadline = ContinuousClock.now + timeout
        while !done(received), ContinuousClock.now < deadline {
            if let message = try receive(timeout: min(deadline - ContinuousClock.now, .seconds(1))) {
                received.append(message)
            }
        }
        while let message = try receive(timeout: settle) { received.append(message) }
        return received
    }

    /// `collect` until `count` messages arrived.
    package func collect(count: Int, timeout: Duration = .seconds(20)) throws -> [ReceivedMessage] {
        try collect(timeout: timeout) { $0.count >= count }
    }
}
