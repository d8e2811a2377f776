import DAOValue
@testable import Gateway
import HTTPTransport
import Testing

/// A call by its plain path (`/dao/Demo/getItem`) is routed by one lookup in the module set's table of paths
/// (`ModuleSet.callPaths`), any other spelling by the router: both must answer every request alike.
@Suite struct CallPathTests {
    let fixture: GatewayFixture

    init() throws { fixture = try GatewayFixture() }

    @Test func theTableHoldsEveryMethodOfTheSetWithItsOwnModuleAndMethod() throws {
        let set = fixture.gateway.moduleSet
        let modules = set.engine.modules.values
        #expect(set.callPaths.count == modules.reduce(0) { $0 + $1.methods.count })
        for module in modules {
            for method in module.methods {
                let parameters = try #require(set.callPaths["/dao/\(module.name)/\(method.name)"])
                #expect(parameters.module == module.name)
                #expect(parameters.method == method.name)
                #expect(parameters.resolved?.module === module)
                #expect(parameters.resolved?.method === method)
            }
        }
    }

    @Test func everySpellingOfAPathAnswersAlike() {
        #expect(fixture.post("/dao/Demo/insertItem", #"["plain"]"#).status == 200)
        let plain = fixture.post("/dao/Demo/getItem", "[1]")
        #expect(plain.text == #"{"result":"plain"}"#)
        // The router decodes these to the same module and method.
        for path in ["/dao/%44emo/getItem", "/dao/Demo/get%49tem", "/%64ao/Demo/getItem"] {
            let encoded = fixture.post(path, "[1]")
            #expect(encoded.status == 200, "\(path)")
            #expect(encoded.text == plain.text, "\(path)")
        }
        // Not a method of the set: the router's answers, as before.
        #expect(fixture.post("/dao/demo/getItem", "[1]").code == "unknown_module")
        #expect(fixture.post("/dao/Demo/getitem", "[1]").code == "unknown_method")
        #expect(fixture.post("/dao/Demo/getItem/", "[1]").status == 404)
        #expect(fixture.post("/dao/Demo/getItem/x", "[1]").status == 404)
        #expect(fixture.post("/dao/Demo//getItem", "[1]").status == 404)
    }

    @Test func anotherMethodOnAPlainPathIsRefusedWithAllow() {
        for path in ["/dao/Demo/getItem", "/dao/%44emo/getItem"] {
            for method in ["GET", "PUT", "DELETE", "post"] {
                let reply = fixture.send(method, path, "[1]")
                #expect(reply.status == 405, "\(method) \(path)")
                #expect(reply.header("Allow") == "POST", "\(method) \(path)")
            }
        }
    }

    @Test func aBadArgumentOnAPlainPathIsTheSameProblem() {
        let plain = fixture.post("/dao/Demo/getItem", #"["not a number"]"#)
        let encoded = fixture.post("/dao/%44emo/getItem", #"["not a number"]"#)
        #expect(plain.status == 400)
        #expect(plain.code == encoded.code)
        #expect(plain.text == encoded.text)
    }

    @Test func onlyNamesThatNeedNoEncodingAreLiteralSegments() {
        #expect(ModuleSet.isLiteralSegment("Demo"))
        #expect(ModuleSet.isLiteralSegment("get_item2"))
        for name in ["", "a b", "a/b", "a%41", "é", "a\u{7F}", "tab\t"] {
            #expect(!ModuleSet.isLiteralSegment(name), "\(name)")
        }
    }
}
