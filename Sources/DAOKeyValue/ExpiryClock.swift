import Foundation

/// The time expiry compares with: seconds since 1970, as the reference's
/// `expire` timestamps (`[date timeIntervalSince1970]`). Tests give their own.
public struct ExpiryClock: Sendable {
    public let now: @Sendable () -> Double

    public init(now: @escaping @Sendable () -> Double) {
        self.now = now
    }

    /// The wall clock.
    public static let system = ExpiryClock { Date().timeIntervalSince1970 }
}
