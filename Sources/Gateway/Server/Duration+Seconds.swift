extension Duration {
    /// The duration in seconds, with its fraction: what the server's reports and the commands' summaries say of
    /// an elapsed time, and what a pause of `Date`'s or a timeout given in seconds takes.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
