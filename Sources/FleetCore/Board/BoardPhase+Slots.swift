extension BoardPhase {
    /// Whether a board in this phase holds (or is taking) a connection slot: from the
    /// connect that got its slot until its link is down.
    var holdsSlot: Bool { [.connecting, .resolving, .ready, .disconnecting].contains(self) }

    /// Whether a board in this phase has no usable link yet could be given one: it needs a
    /// slot before a call reaches it.
    var needsSlot: Bool { [.discovered, .standby, .connecting, .backingOff, .disconnecting].contains(self) }
}
