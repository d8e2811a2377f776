import DAODialect
import DAOValue
import Foundation

/// daogate's micro-benchmarks (release builds; `bench/run` drives them).
///
///     daogate-bench render MODULES_DIR BENCH_MODULES_DIR
///     daogate-bench engine MODULES_DIR BENCH_MODULES_DIR
///     daogate-bench gateway MODULES_DIR
///     daogate-bench auth MODULES_DIR
///     daogate-bench first-call BENCH_MODULES_DIR
@main
enum Bench {
    static func main() throws {
        let arguments = CommandLine.arguments.dropFirst()
        switch arguments.first {
        case "render":
            let folders = Array(arguments.dropFirst())
            guard folders.count == 2 else { usage() }
            try RenderBenchmark(modules: folders[0], benchModules: folders[1]).run()
        case "gateway":
            guard arguments.count == 2 else { usage() }
            try GatewayBenchmark(modules: arguments[arguments.startIndex + 1]).run()
        case "auth":
            guard arguments.count == 2 else { usage() }
            try AuthBenchmark(modules: arguments[arguments.startIndex + 1]).run()
        case "first-call":
            guard arguments.count == 2 else { usage() }
            try FirstCallBenchmark(benchModules: arguments[arguments.startIndex + 1]).run()
        case "engine":
            let folders = Array(arguments.dropFirst())
            guard folders.count == 2 else { usage() }
            try EngineBenchmark(modules: folders[0], benchModules: folders[1]).run()
        default:
            usage()
        }
    }

    static func usage() -> Never {
        FileHandle.standardError.write(Data("usage: daogate-bench render|engine MODULES_DIR BENCH_MODULES_DIR | gateway|auth MODULES_DIR | first-call BENCH_MODULES_DIR\n".utf8))
        exit(2)
    }
}

/// Runs `body` `iterations` times in each of `rounds` rounds; returns the
/// median rate in operations per second.
func measure(rounds: Int = 7, iterations: Int, _ body: () throws -> Void) rethrows -> Double {
    var rates: [Double] = []
    for _ in 0..<rounds {
        let start = ContinuousClock.now
        for _ in 0..<iterations { try body() }
        rates.append(Double(iterations) / (ContinuousClock.now - start).seconds)
    }
    return median(rates)
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

/// Keeps the optimizer from dropping a result.
@inline(never) func consume<T>(_ value: T) { withExtendedLifetime(value) {} }
