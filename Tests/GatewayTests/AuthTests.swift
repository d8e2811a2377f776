import DAODialect
import DAOEngine
import DAOValue
import Foundation
import Gateway
import JWT
import Synchronization
import Testing

/// `--auth jwt`: every refusal with its code, each algorithm, the binding of
/// the caller to the token's user, admin claims and `access="admin"` modules,
/// the cache of verified tokens and key reloads. In-process.
@Suite struct AuthTests {
    static let keys = TestKeys.shared
    static let adminOnlyModule = """
        <module name="Prices" initializer="createTable" tableName="prices" version="1.0" access="admin">
          <update id="createTable">create table if not exists prices (item text primary key, cents integer)</update>
          <insert id="set" arguments="$item:string, $cents:int">insert or replace into prices values (#{item}, #{cents})</insert>
        </module>
        """
    static let adminOnlyMethod = """
        <module name="Notices" initializer="createTable" tableName="notices" version="1.0">
          <update id="createTable">create table if not exists notices (body text)</update>
          <insert id="post" arguments="$body:string" access="admin">insert into notices values (#{body})</insert>
          <select id="all" result="[string]">select body from notices</select>
        </module>
        """

    /// A gateway in jwt mode over every test key: the secret, and a JWKS of the three public keys.
    static func fixture(_ settings: (inout JWTSettings) -> Void = { _ in }) throws -> (GatewayFixture, JWTVerifier) {
        let jwks = #"{"keys": [\#(keys.jwk(.rs256, kid: "rsa")), \#(keys.jwk(.es256, kid: "ec")), \#(keys.jwk(.edDSA, kid: "ed"))]}"#
        var configuration = JWTSettings(secretFile: keys.secretFile, keysFile: try keys.file("jwks.json", jwks),
                                        adminClaim: ("role", "admin"))
        settings(&configuration)
        let verifier = try JWTVerifier(settings: configuration)
        let fixture = try GatewayFixture(extraModules: [adminOnlyModule, adminOnlyMethod], authentication: .jwt(verifier))
        return (fixture, verifier)
    }

    static func claims(_ user: String = "ann", expiresIn: Int64 = 600, _ extra: OrderedObject = [:]) -> OrderedObject {
        var claims: OrderedObject = ["sub": .string(user), "exp": .integer(TestKeys.now + expiresIn)]
        for (name, value) in extra { claims[name] = value }
        return claims
    }

    static let kids: [JWTAlgorithm: String] = [.rs256: "rsa", .es256: "ec", .edDSA: "ed"]

    static func token(_ algorithm: JWTAlgorithm, _ claims: OrderedObject = claims()) -> String {
        keys.token(algorithm, claims, header: kids[algorithm].map { ["kid": .string($0)] } ?? [:])
    }

    static func call(_ fixture: GatewayFixture, _ token: String?, user: String? = nil,
                     path: String = "/kv/user/biz/k", method: String = "GET", body: String? = nil) -> GatewayFixture.Reply {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if let user { headers.append((Gateway.userHeader, user)) }
        return fixture.send(method, path, body, headers: headers)
    }

    @Test(arguments: JWTAlgorithm.allCases)
    func eachAlgorithmVerifiesAndBindsTheCallerToItsUser(_ algorithm: JWTAlgorithm) throws {
        let (fixture, _) = try Self.fixture()
        let token = Self.token(algorithm, Self.claims("ann-\(algorithm.rawValue)"))
        #expect(Self.call(fixture, token, path: "/kv/user/biz/k", method: "PUT", body: #"{"value": "mine"}"#).status == 200)
        #expect(Self.call(fixture, token).json[member: "value"] == "mine")
        // Another algorithm's token for the same user reaches the same storage; another user's does not.
        #expect(Self.call(fixture, Self.token(.hs256, Self.claims("ann-\(algorithm.rawValue)"))).json[member: "value"] == "mine")
        #expect(Self.call(fixture, Self.token(.hs256, Self.claims("bob"))).code == "key_not_found")
    }

    /// Each refusal: a 401 (or 403), its own code, and `WWW-Authenticate` naming the error.
    @Test func everyRefusalHasItsCode() throws {
        let (fixture, _) = try Self.fixture { $0.audience = "daogate"; $0.issuer = "https://issuer.example" }
        let keys = Self.keys
        let good: OrderedObject = Self.claims("ann", ["aud": "daogate", "iss": "https://issuer.example"])
        func with(_ changes: OrderedObject, without: String? = nil) -> OrderedObject {
            var claims = good
            for (name, value) in changes { claims[name] = value }
            if let without { claims[without] = nil }
            return claims
        }
        let now = TestKeys.now
        let signed = keys.token(.hs256, good)
        let tampered = signed.split(separator: ".")[0] + "." + TestKeys.base64URL(Value.object(with(["sub": "bob"])).jsonBytes())
            + "." + signed.split(separator: ".")[2]
        let unsigned = TestKeys.base64URL(Array(#"{"alg":"none"}"#.utf8)) + "." + TestKeys.base64URL(Value.object(good).jsonBytes()) + "."
        // HS256 "signed" with the RSA public key as the secret: the classic algorithm confusion.
        let confused = keys.token(.hs256, good, header: ["kid": "rsa"], secret: Array(keys.publicPEM[.rs256]!.utf8))
        let cases: [(String?, Int, String)] = [
            (signed, 200, ""),
            (nil, 401, "token_missing"),
            ("not a token", 401, "token_malformed"),
            ("a.b", 401, "token_malformed"),
            (keys.token(.hs256, with([:], without: "exp")), 401, "token_malformed"),
            (keys.token(.hs256, with(["exp": "tomorrow"])), 401, "token_malformed"),
            (unsigned, 401, "token_algorithm"),
            (keys.token(.hs256, good, alg: "none"), 401, "token_algorithm"),
            (confused, 401, "token_algorithm"),
            (keys.token(.rs256, good, header: ["kid": "ec"]), 401, "token_algorithm"),
            (keys.token(.rs256, good, header: ["kid": "retired"]), 401, "token_unknown_key"),
            (String(tampered), 401, "token_bad_signature"),
            (keys.token(.hs256, good, secret: Array(repeating: 7, count: 32)), 401, "token_bad_signature"),
            (keys.token(.hs256, with(["exp": .integer(now - 1)])), 401, "token_expired"),
            (keys.token(.hs256, with(["nbf": .integer(now + 120)])), 401, "token_not_yet_valid"),
            (keys.token(.hs256, with(["nbf": .integer(now + 10)])), 200, ""),
            (keys.token(.hs256, with(["iat": .integer(now + 120)])), 401, "token_not_yet_valid"),
            (keys.token(.hs256, with(["aud": "another"])), 401, "token_wrong_audience"),
            (keys.token(.hs256, with(["aud": ["another", "daogate"]])), 200, ""),
            (keys.token(.hs256, with([:], without: "aud")), 401, "token_wrong_audience"),
            (keys.token(.hs256, with(["iss": "https://evil.example"])), 401, "token_wrong_issuer"),
            (keys.token(.hs256, with([:], without: "iss")), 401, "token_wrong_issuer"),
            (keys.token(.hs256, with([:], without: "sub")), 401, "token_no_user"),
            (keys.token(.hs256, with(["sub": "has space"])), 401, "token_no_user"),
        ]
        for (index, (token, status, code)) in cases.enumerated() {
            let reply = Self.call(fixture, token, path: "/kv/user/biz/k", method: "PUT", body: #"{"value": 1}"#)
            #expect(reply.status == status, "case \(index)")
            guard status != 200 else { continue }
            #expect(reply.code == code, "case \(index): \(reply.text)")
            #expect(reply.header("WWW-Authenticate") == #"Bearer realm="daogate", error="invalid_token""#, "case \(index)")
            #expect(Problem.statusOfCode[code] == status)
            #expect(token.map { !reply.text.contains($0) } ?? true, "the token is never echoed")
        }
    }

    @Test func aSpoofedUserHeaderIsRefusedAndAnEqualOneAccepted() throws {
        let (fixture, _) = try Self.fixture()
        let token = Self.token(.es256)
        let spoofed = Self.call(fixture, token, user: "bob")
        #expect(spoofed.status == 403)
        #expect(spoofed.code == "user_mismatch")
        #expect(spoofed.header("WWW-Authenticate") == #"Bearer realm="daogate", error="insufficient_scope""#)
        #expect(Self.call(fixture, token, user: "ann").code == "key_not_found")
    }

    @Test func adminOperationsTakeTheAdminClaimOrTheStaticToken() throws {
        let (fixture, _) = try Self.fixture()
        let user = Self.token(.edDSA)
        let admin = Self.token(.edDSA, Self.claims("root", ["role": ["reader", "admin"]]))
        let refused = Self.call(fixture, user, path: "/storages")
        #expect(refused.status == 403)
        #expect(refused.code == "admin_claim_required")
        #expect(refused.header("WWW-Authenticate") == #"Bearer realm="daogate", error="insufficient_scope""#)
        #expect(Self.call(fixture, admin, path: "/storages").status == 200)
        #expect(Self.call(fixture, GatewayFixture.adminToken, path: "/storages").status == 200)
        // A shared database's table is the admin's to delete; the user's own storage reset is theirs.
        #expect(Self.call(fixture, user, path: "/modules/Books/vacuum", method: "POST").code == "admin_claim_required")
        #expect(Self.call(fixture, admin, path: "/modules/Books/vacuum", method: "POST").status == 200)
        #expect(Self.call(fixture, user, path: "/storage/reset", method: "POST").status == 200)
    }

    @Test func modulesAndMethodsDeclaredAdminOnlyRefuseOtherTokens() throws {
        let (fixture, _) = try Self.fixture()
        let user = Self.token(.rs256)
        let admin = Self.token(.rs256, Self.claims("root", ["role": "admin"]))
        let set = #"{"item": "tea", "cents": 300}"#
        #expect(Self.call(fixture, user, path: "/dao/Prices/set", method: "POST", body: set).code == "admin_only")
        #expect(Self.call(fixture, admin, path: "/dao/Prices/set", method: "POST", body: set).status == 200)
        let inTransaction = #"{"calls": [{"module": "Notices", "method": "all"}, {"module": "Notices", "method": "post", "arguments": ["x"]}]}"#
        #expect(Self.call(fixture, user, path: "/transaction", method: "POST", body: inTransaction).code == "admin_only")
        #expect(Self.call(fixture, user, path: "/dao/Notices/post", method: "POST", body: #"["closed"]"#).code == "admin_only")
        #expect(Self.call(fixture, admin, path: "/dao/Notices/post", method: "POST", body: #"["closed"]"#).status == 200)
        #expect(Self.call(fixture, user, path: "/dao/Notices/all", method: "POST").json[member: "result"] == ["closed"])
        #expect(Self.call(fixture, user, path: "/modules/Prices/last-insert-rowid").code == "admin_only")
        #expect(Self.call(fixture, user, path: "/modules/Prices").status == 200)
    }

    @Test func adminOnlyModulesTakeTheStaticTokenInTrustedHeaderMode() throws {
        let fixture = try GatewayFixture(extraModules: [Self.adminOnlyModule])
        #expect(fixture.send("POST", "/dao/Prices/set", #"["tea", 1]"#).code == "admin_required")
        #expect(fixture.send("POST", "/dao/Prices/set", #"["tea", 1]"#,
                             headers: [("Authorization", "Bearer \(GatewayFixture.adminToken)")]).status == 200)
    }

    @Test func anAccessValueOtherThanAdminOrAnyIsALoadError() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daogate-access-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Self.adminOnlyModule.replacingOccurrences(of: #"access="admin""#, with: #"access="admins""#)
            .write(to: folder.appendingPathComponent("P.xml"), atomically: true, encoding: .utf8)
        let (_, errors) = ModuleLoader.loadDirectory(folder.path)
        #expect(errors.map(\.description).contains { $0.contains(#"access="admins" must be admin or any"#) })
    }

    @Test func healthAndTheDescriptionNeedNoToken() throws {
        let (fixture, _) = try Self.fixture()
        #expect(fixture.send("GET", "/healthz").status == 200)
        #expect(fixture.send("GET", "/openapi.json").status == 200)
        #expect(fixture.send("GET", "/modules").status == 200)
        #expect(fixture.send("GET", "/modules/Books").code == "token_missing")
        #expect(fixture.send("POST", "/dao/Books/titlesFrom", "[2000]").code == "token_missing")
    }

    /// The served description of jwt mode: the bearer scheme where a token is needed, the admin's where it must be an admin's.
    @Test func theDescriptionDeclaresTheBearerSchemeAndTheAdminRequirement() throws {
        let (fixture, _) = try Self.fixture()
        let document = fixture.send("GET", "/openapi.json").json
        func security(_ path: String, _ method: String) -> Value? {
            document[member: "paths"]?[member: path]?[member: method]?[member: "security"]
        }
        #expect(document[member: "components"]?[member: "securitySchemes"]?[member: "bearer"]?[member: "bearerFormat"] == "JWT")
        #expect(security("/dao/Books/titlesFrom", "post") == [["bearer": []]])
        #expect(security("/dao/Notices/all", "post") == [["bearer": []]])
        #expect(security("/dao/Notices/post", "post") == [["admin": []]])
        #expect(security("/dao/Prices/set", "post") == [["admin": []]])
        #expect(security("/storages", "get") == [["admin": []]])
        #expect(security("/storage/reset", "post") == [["admin": []], ["bearer": []]])
        #expect(security("/healthz", "get") == [])
        #expect(document[member: "components"]?[member: "parameters"]?[member: "RequiredUser"]?[member: "required"] != true)
        // Every operation states its requirement: none is left to a document-wide default.
        for (path, item) in document[member: "paths"]?.objectValue ?? [:] {
            for (method, operation) in item.objectValue ?? [:] where operation[member: "responses"] != nil {
                #expect(operation[member: "security"] != nil, "\(method) \(path)")
            }
        }
        // The default mode's description is the committed one, without the bearer scheme.
        let plain = try GatewayFixture(extraModules: [Self.adminOnlyMethod]).send("GET", "/openapi.json").json
        #expect(plain[member: "components"]?[member: "securitySchemes"]?[member: "bearer"] == nil)
        #expect(plain[member: "paths"]?[member: "/dao/Notices/post"]?[member: "post"]?[member: "security"] == [["admin": []]])
    }
}
