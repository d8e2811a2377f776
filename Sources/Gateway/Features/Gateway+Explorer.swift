import HTTPTransport

/// The API explorer, `GET /docs`: a page, its script and its style, written as ordinary files in
/// `Sources/Gateway/Explorer/` and compiled into the binary by SwiftPM (`resources: [.embedInCode(…)]` in
/// Package.swift), so that a binary copied alone (a container image) serves it, and nothing is loaded from
/// anywhere else. The page reads `openapi.json` and sends calls with relative URLs: it works behind a proxy
/// that serves daogate under a prefix, and on any shard behind HAProxy. Why this page and not a packaged
/// explorer: docs/explorer.md.
extension Gateway {
    /// One of the explorer's files.
    enum ExplorerFile {
        case page, script, style

        var contentType: String {
            switch self {
            case .page: "text/html; charset=utf-8"
            case .script: "text/javascript; charset=utf-8"
            case .style: "text/css; charset=utf-8"
            }
        }

        var bytes: [UInt8] {
            switch self {
            case .page: PackageResources.explorer_html
            case .script: PackageResources.explorer_js
            case .style: PackageResources.explorer_css
            }
        }
    }

    /// What every explorer answer carries: revalidated on each load (a new daogate serves a new page), and a
    /// content security policy that lets the page load and call only its own server, so that a value shown on
    /// it cannot load or run anything from elsewhere.
    static let explorerHeaders: [(name: String, value: String)] = [
        ("Cache-Control", "no-cache"),
        ("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
            + "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
    ]

    /// `GET /docs`, `/docs/explorer.js`, `/docs/explorer.css`.
    func explorerFile(_ file: ExplorerFile) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", file.contentType)] + Self.explorerHeaders, body: file.bytes)
    }

    /// `GET /`: a 302 to the explorer. The target is relative (`docs`), so that under a proxy's prefix it
    /// stays under it; a 302, not a 301, since a server started with `--docs off` answers 404 there.
    func explorerRedirect() -> HTTPResponse {
        HTTPResponse(status: 302, headers: [("Location", "docs"), ("Cache-Control", "no-cache"),
                                            ("Content-Type", "text/plain; charset=utf-8")],
                     body: Array("The API explorer: docs\n".utf8))
    }
}
