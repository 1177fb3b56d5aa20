import Foundation

extension CallOperation {
    /// Where a carrier's keys are kept in ``persistentUserInfo``.
    static let carrierPrefix = "relay.carrier."

    /// What observers kept with the operation as it was enqueued (see ``CallObserver/carrier(for:)``): a trace
    /// context, say.
    ///
    /// It is stored in ``persistentUserInfo``, under keys that start with `relay.carrier.`, so it survives a restart.
    /// An operation named again (S1) may carry another carrier: it is still the same operation.
    public var carrier: [String: String] {
        var carrier: [String: String] = [:]
        for (key, value) in persistentUserInfo where key.hasPrefix(Self.carrierPrefix) {
            carrier[String(key.dropFirst(Self.carrierPrefix.count))] = value
        }
        return carrier
    }

    /// The operation with `carrier` added to what it carries.
    func carrying(_ carrier: [String: String]) -> CallOperation {
        guard !carrier.isEmpty else { return self }
        var carrying = self
        for (key, value) in carrier { carrying.persistentUserInfo[Self.carrierPrefix + key] = value }
        return carrying
    }

    /// The user info without the carrier, which two enqueues of one operation may differ in.
    var userInfoWithoutCarrier: [String: String] {
        persistentUserInfo.filter { !$0.key.hasPrefix(Self.carrierPrefix) }
    }
}
