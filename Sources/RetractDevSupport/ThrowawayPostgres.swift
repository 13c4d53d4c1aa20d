import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A PostgreSQL cluster of its own in a temp folder, on a free port on
/// 127.0.0.1, with trust auth and no durability: what `retract demo` uses
/// when no DATABASE_URL is given, and what tests use for a database they
/// stop and start again. ``stop()`` removes it.
///
/// PostgreSQL refuses to run as root; as root, its tools run as the
/// `postgres` system user.
package final class ThrowawayPostgres: @unchecked Sendable {
    package struct Problem: Error, CustomStringConvertible {
        package var description: String
    }

    package let directory: URL
    package let port: Int
    /// Extra server settings (`-c name=value`), kept for a restart.
    private let settings: [String]
    private let binDirectory: String
    private let cleanup: SignalCleanup.Registration
    // @unchecked: `stopped` is only touched under `lock`.
    private let lock = NSLock()
    private var stopped = false

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    package var url: String { "postgres://postgres@127.0.0.1:\(port)/postgres?sslmode=disable" }

    private init(directory: URL, port: Int, settings: [String], binDirectory: String, cleanup: SignalCleanup.Registration) {
        self.directory = directory
        self.port = port
        self.settings = settings
        self.binDirectory = binDirectory
        self.cleanup = cleanup
    }

    /// - Parameters:
    ///   - tls: a server certificate chain and its key (PEM): the server then takes TLS connections too.
    ///   - durable: keep PostgreSQL's durability (fsync, synchronous commit),
    ///     so that a crash loses no committed transaction, as in production;
    ///     off by default, for speed.
    package static func start(tls: (certificatePEM: String, keyPEM: String)? = nil, durable: Bool = false) throws -> ThrowawayPostgres {
        let bin = try binDirectory()
        let directory = try newFolder("retract-demo-postgres")
        var settings = durable ? [] : ["fsync=off", "synchronous_commit=off", "full_page_writes=off"]
        if let tls {
            // The server reads them as its own user, and refuses a key others can read.
            let certificate = directory.appendingPathComponent("server.crt").path
            let key = directory.appendingPathComponent("server.key").path
            for (path, text) in [(certificate, tls.certificatePEM), (key, tls.keyPEM)] {
                guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                    throw Problem(description: "cannot write \(path)")
                }
                if getuid() == 0 { try FileManager.default.setAttributes([.ownerAccountName: "postgres"], ofItemAtPath: path) }
            }
            settings += ["ssl=on", "ssl_cert_file=\(certificate)", "ssl_key_file=\(key)"]
        }
        return try launch(in: directory, bin: bin, settings: settings) { data in
            try run(bin + "/initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"], what: "initdb")
        }
    }

    /// A streaming standby of this cluster, started on a port of its own: a
    /// base backup (`pg_basebackup -R`, which writes `standby.signal` and the
    /// connection to this one), read-only until ``promote()``. Without
    /// `synchronous` replication the primary does not wait for it; with it,
    /// the primary is told to (`synchronous_standby_names`, reloaded) and a
    /// commit it acknowledged is on the standby too. `port` is where the
    /// standby reaches this one (a proxy that can cut the link), this one's
    /// own port by default.
    package func startStandby(synchronous: Bool = false, reachingItAt port: Int? = nil) throws -> ThrowawayPostgres {
        let directory = try Self.newFolder("retract-standby-postgres")
        let name = "standby_\(UUID().uuidString.prefix(8).lowercased())"
        let standby = try Self.launch(in: directory, bin: binDirectory, settings: settings) { [self] data in
            try Self.run(
                try Self.tool("pg_basebackup", near: binDirectory),
                [
                    "-d", "postgres://postgres@127.0.0.1:\(port ?? self.port)/postgres?application_name=\(name)", "-D", data, "-R",
                    "-X", "stream",
                    "--no-sync",
                ],
                what: "pg_basebackup")
        }
        if synchronous {
            try execute("ALTER SYSTEM SET synchronous_standby_names = '\(name)'")
            try execute("ALTER SYSTEM SET synchronous_commit = 'on'")
            try execute("SELECT pg_reload_conf()")
        }
        return standby
    }

    /// Kills the server as a crash of its machine would: SIGKILL to the
    /// postmaster, no shutdown, its connections left to find out. ``stop()``
    /// still removes its folder.
    package func kill() throws {
        let pidFile = directory.appendingPathComponent("data/postmaster.pid").path
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let pid = text.split(separator: "\n").first.flatMap({ pid_t($0.trimmingCharacters(in: .whitespaces)) })
        else { throw Problem(description: "cannot read the postmaster's pid from \(pidFile)") }
        #if canImport(Glibc)
        guard Glibc.kill(pid, SIGKILL) == 0 else { throw Problem(description: "kill -9 \(pid): \(String(cString: strerror(errno)))") }
        #else
        guard Darwin.kill(pid, SIGKILL) == 0 else { throw Problem(description: "kill -9 \(pid): \(String(cString: strerror(errno)))") }
        #endif
    }

    /// Ends a standby's recovery: it takes writes from then on.
    package func promote() throws {
        try Self.run(
            binDirectory + "/pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-w", "promote"], what: "pg_ctl promote")
    }

    /// Runs one SQL statement as `postgres` through `psql`.
    package func execute(_ sql: String) throws {
        try Self.run(try Self.tool("psql", near: binDirectory), ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql], what: "psql")
    }

    /// A new folder in the temp folder, the postgres user's when this process is root.
    static func newFolder(_ prefix: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            try FileManager.default.setAttributes([.ownerAccountName: "postgres"], ofItemAtPath: directory.path)
        }
        return directory
    }

    /// Makes the cluster's data in `directory` (`create`, given the data
    /// folder) and starts it on a free port, trying another if one was taken
    /// meanwhile. From the start, Ctrl-C stops whatever runs in the folder
    /// and removes it; a failure removes it too.
    private static func launch(
        in directory: URL, bin: String, settings: [String], create: (String) throws -> Void
    ) throws -> ThrowawayPostgres {
        let data = directory.appendingPathComponent("data").path
        let cleanup = SignalCleanup.shared.add { stopServer(bin: bin, data: data, directory: directory) }
        do {
            try create(data)
            var lastError: (any Error)?
            for _ in 0..<3 {
                let port = try freePort()
                do {
                    try startServer(bin: bin, data: data, directory: directory, port: port, settings: settings)
                    return ThrowawayPostgres(directory: directory, port: port, settings: settings, binDirectory: bin, cleanup: cleanup)
                } catch {
                    // Another process may have taken the port in between; a start that
                    // timed out may have left a server running.
                    lastError = error
                    try? run(bin + "/pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"], what: "pg_ctl stop")
                }
            }
            throw lastError ?? Problem(description: "PostgreSQL did not start")
        } catch {
            SignalCleanup.shared.remove(cleanup)
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    private static func startServer(bin: String, data: String, directory: URL, port: Int, settings: [String]) throws {
        let options = (["-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1"] + settings.map { "-c \($0)" }).joined(
            separator: " ")
        try run(
            bin + "/pg_ctl",
            ["-D", data, "-l", directory.appendingPathComponent("postgres.log").path, "-w", "-t", "60", "-o", options, "start"],
            what: "pg_ctl start")
    }

    /// Stops the server (a fast shutdown: connections are cut), keeping its
    /// data: for tests of a database that goes away while Retract runs.
    package func pause() throws {
        try Self.run(
            binDirectory + "/pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-m", "fast", "-w", "stop"], what: "pg_ctl stop"
        )
    }

    /// Starts a paused server again, on the same port with the same data.
    package func resume() throws {
        try Self.startServer(
            bin: binDirectory, data: directory.appendingPathComponent("data").path, directory: directory, port: port, settings: settings)
    }

    /// Stops the server at once, as a crash would (`pg_ctl restart -m
    /// immediate`: connections cut, no checkpoint), and starts it again.
    package func restartImmediately() throws {
        try Self.run(
            binDirectory + "/pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"],
            what: "pg_ctl stop")
        try resume()
    }

    /// Stops the server at once and removes its folder; later calls do nothing.
    package func stop() {
        let first = lock.withLock {
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        SignalCleanup.shared.remove(cleanup)
        Self.stopServer(bin: binDirectory, data: directory.appendingPathComponent("data").path, directory: directory)
    }

    private static func stopServer(bin: String, data: String, directory: URL) {
        if FileManager.default.fileExists(atPath: data + "/postmaster.pid") {
            try? run(bin + "/pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"], what: "pg_ctl stop")
        }
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: - Helpers

    /// Where PostgreSQL's tool `name` is: beside initdb and pg_ctl, else on
    /// PATH, else in Debian's layout (PATH may hold links to some tools only).
    static func tool(_ name: String, near bin: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted().reversed()
        let folders = [bin] + path.split(separator: ":").map(String.init) + versions.map { "/usr/lib/postgresql/\($0)/bin" }
        guard let folder = folders.first(where: { FileManager.default.isExecutableFile(atPath: $0 + "/" + name) }) else {
            throw Problem(description: "PostgreSQL's \(name) is neither beside \(bin)/initdb, on PATH, nor in /usr/lib/postgresql/*/bin")
        }
        return folder + "/" + name
    }

    /// The folder with initdb and pg_ctl: PATH first, then Debian's layout.
    private static func binDirectory() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":").map(String.init)
        where FileManager.default.isExecutableFile(atPath: folder + "/initdb")
            && FileManager.default.isExecutableFile(atPath: folder + "/pg_ctl")
        {
            return folder
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { Int($0) ?? 0 > Int($1) ?? 0 }) {
            let folder = "/usr/lib/postgresql/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: folder + "/initdb") { return folder }
        }
        throw Problem(
            description:
                "PostgreSQL's initdb and pg_ctl are neither on PATH nor in /usr/lib/postgresql/*/bin: install PostgreSQL (apt-get install postgresql), or set DATABASE_URL"
        )
    }

    /// Runs a PostgreSQL tool, as the postgres user when this process is root.
    ///
    /// Spawned directly rather than with Foundation's Process: Process learns
    /// that a child ended from a descriptor the child inherits, and the server
    /// `pg_ctl start` leaves running inherits it too, so Process would wait forever.
    static func run(_ tool: String, _ arguments: [String], what: String) throws {
        let command = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", tool] + arguments : [tool] + arguments
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("retract-\(UUID().uuidString.prefix(8)).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // An empty signal mask and default handlers: the calling thread (a
        // Dispatch or Swift concurrency worker) blocks most signals, and a
        // daemon that does not reset its mask (PgBouncer 1.18) would keep
        // SIGTERM blocked and outlive every stop().
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &everySignal)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = command.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, command[0], &actions, &attributes, argv, environ)
        guard spawned == 0 else { throw Problem(description: "\(what): cannot start \(command[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        // WIFEXITED and WEXITSTATUS, which Swift does not import.
        let exited = status & 0x7F == 0
        let code = (status >> 8) & 0xFF
        guard exited, code == 0 else {
            let output = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            throw Problem(description: "\(what) failed (\(exited ? "exit \(code)" : "signal \(status & 0x7F)")): \(output)")
        }
    }

    /// Whether something takes a TCP connection on 127.0.0.1:`port` now.
    static func accepts(port: Int) -> Bool {
        (try? onLoopbackSocket(port: port) { fd, address in connect(fd, address, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 })
            ?? false
    }

    /// A port nothing listens on right now.
    static func freePort() throws -> Int {
        try onLoopbackSocket(port: 0) { fd, address in
            guard bind(fd, address, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 else {
                throw Problem(description: "cannot bind a socket on 127.0.0.1 to find a free port")
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = getsockname(fd, address, &length)
            return Int(UInt16(bigEndian: address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }))
        }
    }

    /// Runs `body` with a new TCP socket and the address 127.0.0.1:`port`, then closes the socket.
    private static func onLoopbackSocket<Result>(
        port: Int, _ body: (Int32, UnsafeMutablePointer<sockaddr>) throws -> Result
    ) throws -> Result {
        #if canImport(Glibc)
        let stream = Int32(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        let fd = socket(AF_INET, stream, 0)
        guard fd >= 0 else { throw Problem(description: "cannot open a socket on 127.0.0.1") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return try withUnsafeMutablePointer(to: &address) {
            try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body(fd, $0) }
        }
    }
}
