// swift-tools-version: 6.1
import PackageDescription

// Release builds leave out the run-time checks of exclusive access (a class's or a global's `var` read while it is
// being modified): they cost a thread-local lookup and a search on every access, some 2,000 instructions of a PK
// select's request. Debug builds, which every test runs, keep them and trap on a violation; the compile-time checks
// stay in both.
let release: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

// The layers beneath the gateway are built with full cross-module optimization in release: their generic code
// (DatabasePool's bodies, LeasedLRU, the statement cache) is specialized where the engine calls it, instead of
// running unspecialized through runtime metadata on every request.
let crossModule: [SwiftSetting] = [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))] + release

let package = Package(
    name: "daogate",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "daogate", targets: ["daogate"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // Without its default ExternalLoading trait, which daogate does not need.
        .package(url: "https://github.com/mattpolzin/OpenAPIKit", from: "6.4.0", traits: []),
    ],
    targets: [
        // C libraries: a module map and a shim each, nothing more.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // RE2 is C++: its C face is a header and one small C++ file instead of a
        // module map, so that no Swift module needs C++ interoperability.
        .target(name: "CRE2", linkerSettings: [.linkedLibrary("re2")]),

        // The classes of ASCII bytes (letters, digits, controls, identifiers), one definition for every
        // layer that checks bytes: beneath the DAO targets and the HTTP transport alike, knowing neither.
        .target(name: "ASCIIBytes", swiftSettings: crossModule),
        // What travels: the value type and its JSON form.
        .target(
            name: "DAOValue",
            dependencies: ["ASCIIBytes", .product(name: "OrderedCollections", package: "swift-collections")],
            swiftSettings: crossModule
        ),
        // The dialect: module files → module model → rendered statements.
        .target(
            name: "DAODialect",
            dependencies: ["ASCIIBytes", "DAOValue", "CLibXML2", "CSQLite"],
            swiftSettings: crossModule
        ),
        // The SQLite layer: connections, statements and their cache, the
        // pool of a file's connections, SQLite errors. Knows nothing of DAO.
        .target(
            name: "SQLiteDatabase",
            dependencies: ["ASCIIBytes", "DAOValue", "CSQLite"],
            swiftSettings: crossModule
        ),
        // The engine: execution, results, table lifecycle, encryption,
        // storage spaces, the registry of open files.
        .target(
            name: "DAOEngine",
            dependencies: ["ASCIIBytes", "SQLiteDatabase", "DAODialect", "DAOValue", "CSQLite", "COpenSSL", "CRE2"],
            swiftSettings: crossModule
        ),
        // The reference's other storage layers in the same files: the
        // key-value store, the LRU memory and disk caches.
        .target(
            name: "DAOKeyValue",
            dependencies: ["ASCIIBytes", "SQLiteDatabase", "DAOEngine", "DAOValue", "CSQLite"],
            swiftSettings: release
        ),
        // The HTTP transport: libmicrohttpd, requests and responses. Knows nothing of DAO.
        .target(
            name: "HTTPTransport",
            dependencies: ["ASCIIBytes", "CMicroHTTPD", .product(name: "Logging", package: "swift-log")],
            swiftSettings: crossModule
        ),
        // JWT verification: tokens, keys (HMAC secrets, PEM, JWKS) verified with libcrypto. Knows nothing of HTTP.
        .target(
            name: "JWT",
            dependencies: ["ASCIIBytes", "DAOEngine", "DAOValue", "COpenSSL"],
            swiftSettings: release
        ),
        // Sharding: the shard map and placement (user → bucket → shard), a shard's ownership and freezes,
        // HAProxy's configuration and runtime API, the client shards and moves talk with. Knows nothing of HTTP
        // routes: the gateway admits requests by it, the CLI drives moves with it.
        .target(
            name: "Sharding",
            dependencies: ["DAOEngine", "DAOValue"],
            swiftSettings: release
        ),
        // The gateway: routes, JSON mapping, errors, OpenAPI, authentication.
        .target(
            name: "Gateway",
            dependencies: [
                "HTTPTransport", "DAOEngine", "DAODialect", "DAOKeyValue", "DAOValue", "JWT", "Sharding",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenAPIKit", package: "OpenAPIKit"),
            ],
            exclude: ["Explorer/README.md"],
            // The API explorer's files, compiled into the binary as byte arrays (`PackageResources`): no
            // resource bundle to ship beside it, so a binary copied alone into an image serves the page.
            resources: [
                .embedInCode("Explorer/explorer.html"),
                .embedInCode("Explorer/explorer.js"),
                .embedInCode("Explorer/explorer.css"),
            ],
            swiftSettings: release
        ),
        // The thin executable.
        .executableTarget(
            name: "daogate",
            dependencies: [
                "DAODialect",
                "DAOEngine",
                "DAOKeyValue",
                "DAOValue",
                "Gateway",
                "HTTPTransport",
                "JWT",
                "Sharding",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: release
        ),

        // Micro-benchmarks, run by bench/run on a release build.
        .executableTarget(
            name: "daogate-bench",
            dependencies: ["DAODialect", "DAOEngine", "DAOValue", "CSQLite", "Gateway", "HTTPTransport", "JWT"],
            swiftSettings: release
        ),

        .testTarget(name: "DAOValueTests", dependencies: ["ASCIIBytes", "DAOValue"]),
        .testTarget(name: "DAODialectTests", dependencies: ["DAODialect", "DAOValue", "CSQLite"]),
        .testTarget(name: "SQLiteDatabaseTests", dependencies: ["SQLiteDatabase", "DAOEngine", "DAOValue", "CSQLite"]),
        .testTarget(name: "DAOEngineTests", dependencies: ["DAOEngine", "DAODialect", "DAOValue", "CSQLite"]),
        .testTarget(name: "DAOKeyValueTests", dependencies: ["DAOKeyValue", "DAOEngine", "DAODialect", "DAOValue", "CSQLite"]),
        .testTarget(name: "HTTPTransportTests", dependencies: ["HTTPTransport"]),
        // Its TestTokens.swift (keys made by openssl, tokens signed by libcrypto) is GatewayTests' too, by a link.
        .testTarget(name: "JWTTests", dependencies: ["JWT", "DAOValue", "COpenSSL"]),
        .testTarget(name: "GatewayTests", dependencies: ["Gateway", "HTTPTransport", "DAOEngine", "DAODialect", "DAOKeyValue", "DAOValue", "COpenSSL", "JWT", "Sharding"]),
        // Against a real `daogate serve` on a loopback port, with curl.
        .testTarget(name: "LiveTests", dependencies: ["DAOValue"]),
    ],
    swiftLanguageModes: [.v6]
)
