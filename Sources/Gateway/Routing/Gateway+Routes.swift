import HTTPTransport

/// The routes of the API, declared once: the router matches a request against this table, checks each path
/// parameter once (`RouteParameters`), answers 405 with `Allow` from the methods declared here, and calls the
/// handler; the OpenAPI document's paths are built from the same entries (`OpenAPIDescription.document`), so a
/// route cannot be served undescribed nor described and not served (`RouteTableTests` holds them equal). The
/// one exception is declared as such: the explorer's pages (`Route(explorer:)`) are for people, not API.
///
/// How a request is answered: its path is split on the raw `/` and each segment decoded by itself, so an
/// encoded `/` (`%2F`) stays inside its segment and an encoded NUL cannot end the path early (a segment that
/// is not percent-encoded UTF-8 free of control characters is a 400 `invalid_path`); the first template it
/// fits is its route (none: 404); each parameter is read by its kind (a business, cache name or key that is
/// not one is a 400 `invalid_name`, a space or kind that is none a 404); in jwt mode a route that is not
/// `public` checks the token; a method the route does not take is a 405 with `Allow`; then the handler
/// runs with the parameters typed (`call.parameters.space` is a `StorageSpace`, `.key` a checked key).
///
/// Adding a route is one entry here:
///
///     Route("/things/{space}/{key}", space: .pathSpace, describedBy: { $0.thingPaths($1) })
///         .get(errors: .names, .caller, [.storage(.keyNotFound)], .file) { try $0.readThing($1) }   // GET and HEAD
///         .put(errors: .names, .caller, .body, .bodyLimit, .file) { try $0.writeThing($1) },
///
/// - the errors each method can give: codes of `ErrorCode` (a new one is a case there, with its status) and the
///   groups of `RouteErrors`; the document lists their statuses (`responses(success, for: "GET")`);
/// - the handler, `func readThing(_ call: RouteCall) throws(Problem) -> HTTPResponse`, in the feature's
///   `Gateway+Feature.swift`; it reads `call.request`, `call.encoding` and `call.parameters`;
/// - the describer, `func thingPaths(_ template: RouteTemplate) -> [DescribedPath]`, in an
///   `OpenAPIDescription` extension: `one(template, item)` for a plain path, `perSpace` / `perKindAndSpace`
///   where the document writes `{space}` / `{kind}` out; its path item has exactly the route's methods;
/// - the space it touches (`RouteSpace`, required): a shard admits its requests by it, and HAProxy's routing
///   lists are derived from it (`Gateway.shardRouting`); nothing else is written for shards;
/// - a new kind of path parameter: a case of `PathParameter`, read and checked in `RouteParameters.read`.
///
/// The tests find a new route by themselves: PathByteTests sends every byte in each of its parameters,
/// AuthIsolationTests probes it with every method in jwt mode, RouteTableTests compares it with the document,
/// ShardTests sends it to a shard that does not own the caller and checks HAProxy's lists against the table.
/// ErrorCodeTests sends it hostile requests and fails on an answer whose code its `errors:` do not declare.
extension Gateway {
    public static let routes: [Route] = [
        Route(callTemplate, space: .module, describedBy: { $0.daoPaths($1) })
            .post(errors: .call) { try $0.call($1, module: $1.parameters.module, method: $1.parameters.method) },
        Route("/transaction", space: .firstCall, describedBy: { $0.transactionPaths($1) })
            .post(errors: .call, [.engine(.invalidReference)]) { try $0.transaction($1) },

        Route("/modules", public: true, space: .none, describedBy: { $0.listModulesPaths($1) })
            .get(errors: []) { gateway, _ in gateway.json(gateway.modules()) },
        Route("/modules/{module}", space: .module, describedBy: { $0.describeModulePaths($1) })
            .get(errors: .module, .caller, .table, .file) { try $0.describeModule($1) },
        Route("/modules/{module}/last-insert-rowid", space: .module, describedBy: { $0.lastInsertRowIDPaths($1) })
            .get(errors: .module, .caller, [.engine(.invalidTable)], .file) { try $0.lastInsertRowID($1) },
        Route("/modules/{module}/table", space: .module, describedBy: { $0.deleteTablePaths($1) })
            .delete(errors: .admin, .module, .caller, .table, .file) { try $0.deleteTable($1) },
        Route("/modules/{module}/tables/delete", space: .module, describedBy: { $0.deleteTablesPaths($1) })
            .post(errors: .admin, .module, .caller, .body, .bodyLimit, .file,
                          [.engine(.invalidRegex)]) { try $0.deleteTables($1) },
        Route("/modules/{module}/vacuum", space: .module, describedBy: { $0.vacuumPaths($1) })
            .post(errors: .admin, .module, .caller, .file,
                          [.request(.invalidJSON), .request(.invalidBody)]) { try $0.vacuum($1) },
        Route("/modules/{module}/globals", space: .module, describedBy: { $0.globalsPaths($1) })
            .get(head: false, errors: .admin, .module, .caller) { try $0.globals($1) }
            .put(errors: .admin, .module, .caller, .body, .bodyLimit) { try $0.setGlobals($1) },

        Route("/kv/{space}/{business}", space: .pathSpace, describedBy: { $0.kvBusinessPaths($1) })
            .get(errors: .names, .caller, [.storage(.invalidValue)], .file) { try $0.kvList($1) }
            .delete(errors: .names, .caller, .file) { try $0.kvDeleteBusiness($1) },
        Route("/kv/{space}/{business}/{key}", space: .pathSpace, describedBy: { $0.kvEntryPaths($1) })
            .get(errors: .names, .caller, .file,
                         [.storage(.invalidValue), .storage(.keyNotFound), .storage(.typeMismatch)]) { try $0.kvGet($1) }
            .put(errors: .names, .caller, .body, .bodyLimit, .file,
                         [.storage(.invalidValue), .storage(.limitExceeded), .storage(.encryptionUnavailable),
                          .storage(.typeMismatch), .engine(.tooBig), .engine(.storageFull)]) { try $0.kvPut($1) }
            .delete(errors: .names, .caller, .file) { try $0.kvDelete($1) },

        Route("/lru/{kind}/{space}", space: .pathSpace, describedBy: { $0.cacheListPaths($1) })
            .get(errors: .caller, .file) { try $0.cacheList($1) },
        Route("/lru/{kind}/{space}/{cache}", space: .pathSpace, describedBy: { $0.cachePaths($1) })
            .get(errors: .names, .caller, [.storage(.unknownCache)], .file) { try $0.cacheInfo($1) }
            .put(errors: .names, .caller, .body, .bodyLimit, .file,
                         [.storage(.invalidValue), .storage(.limitExceeded), .storage(.encryptionUnavailable),
                          .storage(.cacheConflict)]) { try $0.createCache($1) }
            .delete(errors: .names, .caller, .file) { try $0.deleteCache($1) },
        Route("/lru/{kind}/{space}/{cache}/entries", space: .pathSpace, describedBy: { $0.cacheEntriesPaths($1) })
            .post(errors: .names, .caller, .body, .bodyLimit, .file,
                          [.storage(.unknownCache), .storage(.invalidValue), .storage(.memoryFull)]) { try $0.addEntries($1) }
            .delete(errors: .names, .caller, [.storage(.unknownCache)], .file) { try $0.removeAllEntries($1) },
        Route("/lru/{kind}/{space}/{cache}/entries/{key}", space: .pathSpace, describedBy: { $0.cacheEntryPaths($1) })
            .get(errors: .names, .caller, [.storage(.unknownCache), .storage(.keyNotFound)], .file) { try $0.cacheEntry($1) }
            .put(errors: .names, .caller, .body, .bodyLimit, .file,
                         [.storage(.unknownCache), .storage(.invalidValue), .storage(.memoryFull)]) { try $0.setCacheEntry($1) }
            .delete(errors: .names, .caller, [.storage(.unknownCache)], .file) { try $0.removeCacheEntry($1) },
        Route("/lru/{kind}/{space}/{cache}/remove", space: .pathSpace, describedBy: { $0.cacheRemovePaths($1) })
            .post(errors: .names, .caller, .body, .bodyLimit, .file,
                          [.storage(.unknownCache), .storage(.invalidValue), .engine(.invalidRegex)]) { try $0.removeEntries($1) },
        Route("/lru/memory/{space}/{cache}/exists/{key}", space: .pathSpace, describedBy: { $0.cacheExistsPaths($1) })
            .get(errors: .names, .caller, [.storage(.unknownCache), .engine(.storageFailed)]) { try $0.cacheEntryExists($1) },
        Route("/lru/memory/{space}/{cache}/peek", space: .pathSpace, describedBy: { $0.cachePeekPaths($1) })
            .get(errors: .names, .caller,
                         [.storage(.unknownCache), .storage(.invalidValue), .engine(.storageFailed)]) { try $0.peek($1) },

        Route("/storage/purge", space: .caller, describedBy: { $0.purgePaths($1) })
            .post(errors: .admin, .caller, [.request(.invalidJSON), .request(.invalidBody)], .file) { try $0.purgeStorage($1) },
        Route("/storage/reset", space: .caller, describedBy: { $0.resetPaths($1) })
            .post(errors: .admin, .caller, .body, .file) { try $0.resetStorage($1) },
        Route("/storage/usage", space: .shard, describedBy: { $0.usagePaths($1) })
            .get(errors: .admin, .caller) { try $0.usage($1) },
        Route("/storages", space: .shard, describedBy: { $0.storagesPaths($1) })
            .get(errors: .admin) { try $0.storages($1) },

        Route("/healthz", public: true, space: .none, describedBy: { $0.healthPaths($1) })
            .get(errors: []) { gateway, _ in gateway.health() },
        Route("/openapi.json", public: true, space: .none, describedBy: { $0.openAPIPaths($1) })
            .get(errors: []) { gateway, _ in gateway.openAPIResponse() },
        Route("/events", space: .none, describedBy: { $0.eventsPaths($1) })
            .get(errors: .admin, .caller) { try $0.eventSummary($1) },
        Route("/admin/reload", space: .none, describedBy: { $0.reloadPaths($1) })
            .post(errors: .admin,
                          [.request(.invalidBody), .admin(.modulesRefused), .admin(.reloadUnavailable)]) { gateway, call in
                try gateway.authorizeAdmin(call)
                return try gateway.reloadRoute(call.request)
            },
        Route("/admin/rekey", space: .shard, describedBy: { $0.rekeyPaths($1) })
            .get(head: false, errors: .admin) { gateway, call in
                try gateway.authorizeAdmin(call)
                return gateway.rekeyStatus()
            }
            .post(errors: .admin,
                          [.request(.invalidBody), .admin(.rekeyUnavailable), .admin(.rekeyRunning),
                           .admin(.keysRefused), .engine(.storageFailed)]) { gateway, call in
                try gateway.authorizeAdmin(call)
                return try gateway.rekeyRoute(call.request)
            },
        Route("/changes", space: .callerOrQuery, describedBy: { $0.changesPaths($1) })
            .get(head: false, errors: .caller, .module,
                                      [.engine(.invalidTable), .changeFeed(.invalidQuery),
                                       .changeFeed(.tooManyStreams), .token(.missing), .auth(.userMismatch),
                                       .request(.methodNotAllowed), .sharding(.misdirectedRequest),
                                       .sharding(.bucketMoving)]) { try $0.changesRoute($1) },
        Route("/metrics", public: true, space: .none, describedBy: { $0.metricsPaths($1) })
            .get(errors: .admin, [.request(.notFound)]) { try $0.metrics($1) },

        // The API explorer, a page for people (Gateway+Explorer.swift): not API, so not in the document.
        Route(explorer: "/")
            .get(errors: []) { gateway, _ in gateway.explorerRedirect() },
        Route(explorer: "/docs")
            .get(errors: []) { gateway, _ in gateway.explorerFile(.page) },
        Route(explorer: "/docs/explorer.js")
            .get(errors: []) { gateway, _ in gateway.explorerFile(.script) },
        Route(explorer: "/docs/explorer.css")
            .get(errors: []) { gateway, _ in gateway.explorerFile(.style) },

        // A shard's admin operations (`serve --shard`; elsewhere 404 not_a_shard), each the admin's. The calls of a
        // bucket move, which may take seconds (a freeze waits for writes, an import for the source's exports),
        // run on threads kept for them: the worker thread goes on with its other connections.
        Route("/shard", space: .shard, describedBy: { $0.shardPaths($1) })
            .get(errors: .shard) { try $0.shardStatus($1) },
        Route("/shard/reload", space: .shard, describedBy: { $0.shardPaths($1) })
            .post(errors: .shard, [.engine(.storageFailed)]) { try $0.shardReload($1) },
        Route("/shard/freeze", space: .shard, describedBy: { $0.shardPaths($1) })
            .offWorkerThread()
            .post(errors: .shard, .body, [.engine(.storageFailed), .engine(.busy)]) { try $0.shardFreeze($1) },
        Route("/shard/unfreeze", space: .shard, describedBy: { $0.shardPaths($1) })
            .post(errors: .shard, .body) { try $0.shardUnfreeze($1) },
        Route("/shard/export", space: .shard, describedBy: { $0.shardPaths($1) })
            .offWorkerThread()
            .post(errors: .shard, .body,
                          [.sharding(.bucketOwned), .request(.notFound), .engine(.storageFailed)]) { try $0.shardExport($1) },
        Route("/shard/import", space: .shard, describedBy: { $0.shardPaths($1) })
            .offWorkerThread()
            .post(errors: .shard, .body,
                          [.sharding(.bucketOwned), .sharding(.unknownShard), .sharding(.importRefused),
                           .sharding(.moveFailed), .engine(.storageFailed), .engine(.busy)]) { try $0.shardImport($1) },
        Route("/shard/archive", space: .shard, describedBy: { $0.shardPaths($1) })
            .offWorkerThread()
            .post(errors: .shard, .body,
                          [.sharding(.bucketOwned), .engine(.busy)]) { try $0.shardArchive($1) },
    ]

    /// Every path template the API answers, in the table's order.
    public static let routeTemplates: [RouteTemplate] = routes.map(\.template)

    static let router = Router(routes)
    /// The template of a DAO method's call, and its route: the paths of `ModuleSet.callPaths` are written from it.
    static let callTemplate: RouteTemplate = "/dao/{module}/{method}"
    static let callRoute = routes.first { $0.template.description == callTemplate.description }!
}
