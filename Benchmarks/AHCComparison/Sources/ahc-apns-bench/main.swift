import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL

// Usage: ahc-apns-bench PORT CA.pem TOKEN.jwt PUSHES IN-FLIGHT [PATH BODY-FILE]
// With PATH and BODY-FILE, every request is a POST of that JSON body to that
// path (FCM's messages:send, for scripts/bench fcm --with-ahc) instead of an
// APNs push to /3/device/<token>.
let arguments = CommandLine.arguments
guard arguments.count == 6 || arguments.count == 8, let port = Int(arguments[1]), let pushes = Int(arguments[4]),
    let inFlight = Int(arguments[5])
else {
    FileHandle.standardError.write(Data("usage: ahc-apns-bench PORT CA.pem TOKEN.jwt PUSHES IN-FLIGHT [PATH BODY-FILE]\n".utf8))
    exit(64)
}
let fixedPath = arguments.count == 8 ? arguments[6] : nil
let roots = try NIOSSLCertificate.fromPEMFile(arguments[2])
let bearer = "bearer " + (try String(contentsOfFile: arguments[3], encoding: .utf8))
var tls = TLSConfiguration.makeClientConfiguration()
tls.additionalTrustRoots = [.certificates(roots)]
var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
configuration.httpVersion = .automatic
let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
let body =
    fixedPath == nil
    ? ByteBuffer(
        string: #"{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"bench-reference","isReferredNotificationMustRemoved":true}}"#
    ) : ByteBuffer(bytes: try Data(contentsOf: URL(fileURLWithPath: arguments[7])))

func push(_ index: Int) async throws {
    var request: HTTPClientRequest
    if let fixedPath {
        request = HTTPClientRequest(url: "https://127.0.0.1:\(port)\(fixedPath)")
        request.headers.add(name: "authorization", value: bearer)
        request.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
    } else {
        let hex = String(index, radix: 16)
        request = HTTPClientRequest(url: "https://127.0.0.1:\(port)/3/device/" + String(repeating: "0", count: 64 - hex.count) + hex)
        request.headers.add(name: "authorization", value: bearer)
        request.headers.add(name: "apns-topic", value: "com.example.bench")
        request.headers.add(name: "apns-push-type", value: "background")
        request.headers.add(name: "apns-priority", value: "5")
    }
    request.method = .POST
    request.body = .bytes(body)
    let response = try await client.execute(request, timeout: .seconds(30))
    guard response.status == .ok else { throw HTTPClientError.invalidURL }
    _ = try await response.body.collect(upTo: 4096)
}

try await push(0)
let start = ContinuousClock.now
let failures = try await withThrowingTaskGroup(of: Int.self) { group in
    for worker in 0..<inFlight {
        group.addTask {
            var failures = 0
            var index = worker
            while index < pushes {
                do { try await push(index) } catch { failures += 1 }
                index += inFlight
            }
            return failures
        }
    }
    var failures = 0
    for try await workerFailures in group { failures += workerFailures }
    return failures
}
let elapsed = ContinuousClock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
try await client.shutdown()
print(#"{"pushes": \#(pushes), "failures": \#(failures), "seconds": \#(seconds), "pushesPerSecond": \#(Double(pushes) / seconds)}"#)
