import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Debian's PgBouncer in front of a ``ThrowawayPostgres``, on a free port on
/// 127.0.0.1, with trust auth: for tests of Retract behind a pooler.
/// ``stop()`` ends it and removes its folder.
///
/// PgBouncer refuses to run as root; as root, it runs as the `postgres` user.
package final class ThrowawayPgBouncer: @unchecked Sendable {
    /// A database PgBouncer serves: its `name`, and what follows the `=` in
    /// its `[databases]` line besides the server's host, port and `dbname`
    /// (`connect_query='SET statement_timeout = 10000'`, say).
    package struct Database: Sendable {
        package var name: String
        package var settings: String

        package init(_ name: String, _ settings: String = "") {
            self.name = name
            self.settings = settings
        }
    }

    package let port: Int

    /// Whether PgBouncer takes connections on ``port`` now: false once stopped.
    package var isListening: Bool { ThrowawayPostgres.accepts(port: port) }
    private let directory: URL
    // @unchecked: `stopped` is only touched under `lock`.
    private let lock = NSLock()
    private var stopped = false

    /// `postgres://postgres@127.0.0.1:<port>/<database>`.
    package func url(_ database: String) -> String { "postgres://postgres@127.0.0.1:\(port)/\(database)?sslmode=disable" }

    private init(port: Int, directory: URL) {
        self.port = port
        self.directory = directory
    }

    /// Starts PgBouncer in `poolMode` (`session`, `transaction` or
    /// `statement`), serving each of `databases` from `postgres`'s database
    /// `postgres`, and taking (and dropping) the startup parameters
    /// `ignoring` besides `extra_float_digits`.
    package static func start(
        for postgres: ThrowawayPostgres, poolMode: String, databases: [Database], ignoring: [String] = []
    ) throws -> ThrowawayPgBouncer {
        let binary = try ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }.orThrow("PgBouncer is not installed (apt-get install pgbouncer)")
        let directory = try ThrowawayPostgres.newFolder("retract-pgbouncer")
        let port = try ThrowawayPostgres.freePort()
        let lines = databases.map { "\($0.name) = host=127.0.0.1 port=\(postgres.port) dbname=postgres \($0.settings)" }
        let ini = """
            [databases]
            \(lines.joined(separator: "\n"))

            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(port)
            unix_socket_dir =
            auth_type = trust
            auth_file = \(directory.path)/userlist.txt
            pool_mode = \(poolMode)
            max_client_conn = 500
            default_pool_size = 60
            ignore_startup_parameters = \((["extra_float_digits"] + ignoring).joined(separator: ","))
            logfile = \(directory.path)/pgbouncer.log
            pidfile = \(directory.path)/pgbouncer.pid

            """
        for (name, text) in [("pgbouncer.ini", ini), ("userlist.txt", "\"postgres\" \"\"\n")] {
            let path = directory.appendingPathComponent(name).path
            guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
                throw ThrowawayPostgres.Problem(description: "cannot write \(path)")
            }
            if getuid() == 0 { try FileManager.default.setAttributes([.ownerAccountName: "postgres"], ofItemAtPath: path) }
        }
        let bouncer = ThrowawayPgBouncer(port: port, directory: directory)
        do {
            try ThrowawayPostgres.run(binary, ["-d", directory.appendingPathComponent("pgbouncer.ini").path], what: "pgbouncer")
            try bouncer.waitUntilListening()
        } catch {
            bouncer.stop()
            throw error
        }
        return bouncer
    }

    /// Its log, for a failing test's message.
    package var log: String {
        (try? String(contentsOfFile: directory.appendingPathComponent("pgbouncer.log").path, encoding: .utf8)) ?? ""
    }

    private func waitUntilListening() throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if ThrowawayPostgres.accepts(port: port) { return }
            usleep(50_000)
        }
        throw ThrowawayPostgres.Problem(description: "PgBouncer did not listen on \(port) within 10 s: \(log.suffix(1000))")
    }

    /// Ends PgBouncer (SIGTERM) and removes its folder; later calls do nothing.
    package func stop() {
        let first = lock.withLock {
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        let pidFile = directory.appendingPathComponent("pgbouncer.pid").path
        if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
        {
            kill(pid, SIGTERM)
            // Gone before its folder is: it writes its log and pid file there.
            for _ in 0..<100 where kill(pid, 0) == 0 { usleep(20_000) }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

extension Optional {
    fileprivate func orThrow(_ description: String) throws -> Wrapped {
        guard let self else { throw ThrowawayPostgres.Problem(description: description) }
        return self
    }
}
