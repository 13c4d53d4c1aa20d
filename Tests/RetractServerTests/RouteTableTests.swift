import Testing

@testable import RetractServer

@Suite("route table")
struct RouteTableTests {
    @Test func aWrongMethodOnAKnownPathIsToldApartFromAnUnknownPath() {
        let table = RouteTable()
        table.add(.get, "/v1/retractions/:id")
        table.add(.post, "/v1/retractions")
        #expect(table.routes.map(\.description) == ["GET /v1/retractions/{id}", "POST /v1/retractions"])
        #expect(table.methods(matching: "/v1/retractions/3f1c") == ["GET"])
        #expect(table.methods(matching: "/v1/retractions") == ["POST"])
        #expect(table.methods(matching: "/v1/retractions/3f1c/more").isEmpty)
        #expect(table.methods(matching: "/v1/retractions/").isEmpty)
    }
}
