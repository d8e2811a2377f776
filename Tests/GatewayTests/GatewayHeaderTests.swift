@testable import Gateway
import HTTPTransport
import Testing

/// The header fields most requests have the gateway read are found in one walk over the request's fields
/// (`GatewayHeaders`), which compares each name with a literal: each must be its header's name, in any case.
@Suite("The gateway's header fields, read in one walk")
struct GatewayHeaderTests {
    @Test(arguments: GatewayHeader.allCases)
    func eachFieldIsFoundByItsNameInAnyCase(header: GatewayHeader) {
        for name in [header.name, header.name.lowercased(), header.name.uppercased()] {
            let request = HTTPRequest(method: "POST", path: "/", headers: [("Host", "h"), (name, "v"), ("Content-Length", "1")])
            let headers = GatewayHeaders(request)
            #expect(headers[header] == 1, "\(name)")
            for other in GatewayHeader.allCases where other != header {
                #expect(headers[other] == GatewayHeaders.none, "\(name) taken for \(other.name)")
            }
            let twice = GatewayHeaders(HTTPRequest(method: "POST", path: "/", headers: [(name, "v"), (header.name, "w")]))
            #expect(twice[header] == GatewayHeaders.more, "\(name)")
        }
    }

    @Test func aFieldOfTheSameLengthIsNotTaken() {
        // Content-Length has X-Int64-Format's length; X-User-Ix that of X-User-Id.
        let headers = GatewayHeaders(HTTPRequest(method: "POST", path: "/", headers: [("Content-Length", "1"), ("X-User-Ix", "a")]))
        for header in GatewayHeader.allCases { #expect(headers[header] == GatewayHeaders.none) }
    }
}
