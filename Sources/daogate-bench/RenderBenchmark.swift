import DAODialect
import DAOValue

/// Renders per second: Demo's getItem (rendered at load) and a dynamic method
/// with three ifs, a where and a 10-element foreach.
struct RenderBenchmark {
    let modules: String
    let benchModules: String

    func run() throws {
        let demo = try ModuleLoader.load(file: modules + "/Demo.xml")
        let bench = try ModuleLoader.load(file: benchModules + "/Bench.xml")
        let getItem = demo.method(named: "getItem")!
        let search = bench.method(named: "search")!
        let getItemArguments: Value = [42]
        let searchArguments = try Value(parsingJSON: """
            {"state": "ACTIVE", "title": "%Swift%", "author": {"name": "Ann"}, "ids": [1,2,3,4,5,6,7,8,9,10]}
            """)
        let check = try search.render(frame: search.frame(arguments: searchArguments), table: bench.tableName)
        print("search renders: \(check[0].statements[0].sql)")

        let getItemRate = try measure(iterations: 1_000_000) {
            consume(try getItem.render(frame: getItem.frame(arguments: getItemArguments), table: demo.tableName))
        }
        let searchRate = try measure(iterations: 200_000) {
            consume(try search.render(frame: search.frame(arguments: searchArguments), table: bench.tableName))
        }
        print("render Demo.getItem (precomputed at load): \(Int(getItemRate)) renders/s")
        print("render Bench.search (3 ifs, where, 10-element foreach): \(Int(searchRate)) renders/s")
    }
}
