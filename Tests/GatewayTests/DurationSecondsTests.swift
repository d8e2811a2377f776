import Gateway
import Testing

/// `Duration.seconds`, the one conversion of an elapsed time into the seconds reports and summaries give.
@Suite struct DurationSecondsTests {
    @Test func wholeAndFractionalSecondsAddUp() {
        #expect(Duration.seconds(3).seconds == 3)
        #expect(Duration.milliseconds(1500).seconds == 1.5)
        #expect(Duration.nanoseconds(1).seconds == 1e-9)
        #expect(Duration.zero.seconds == 0)
    }

    @Test func aNegativeDurationIsNegativeSeconds() {
        // Its components are both negative: -1 s and -0.5 s in attoseconds.
        #expect(Duration.milliseconds(-1500).seconds == -1.5)
    }
}
