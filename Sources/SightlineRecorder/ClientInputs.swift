import SightlineCore

/// Client metadata groups as what each track gets. As with `AVCaptureMetadataInput`, an
/// input's group replaces its previous one: each of its identifiers goes to a track of its
/// own, and an identifier the previous group had and this one lacks ends here (an empty
/// group on its track).
struct ClientInputs {
    /// The identifiers of each input's last group.
    private var identifiers: [String: Set<String>] = [:]

    /// The groups `group` (its items validated) makes, in order: its items', then the endings.
    mutating func groups(of group: ClientMetadataGroup, items: [MetadataItem], at time: MediaTime) -> [(
        identifier: String, group: TimedMetadataGroup
    )] {
        let now = Set(items.map(\.identifier))
        let ended = identifiers[group.input, default: []].subtracting(now).sorted()
        identifiers[group.input] = now
        return items.map { ($0.identifier, TimedMetadataGroup(time: time, duration: group.duration, items: [$0])) }
            + ended.map { ($0, TimedMetadataGroup(time: time, items: [])) }
    }
}
