import Dispatch
import Foundation
import NIOConcurrencyHelpers

/// Clean-up that must happen even when the user presses Ctrl-C: a
/// throwaway PostgreSQL, a folder holding a key. On SIGINT or SIGTERM the
/// registered actions run, newest first, and the process exits 128 + signal.
// @unchecked: the dispatch sources are not Sendable; every access to them is under `state`'s lock.
package final class SignalCleanup: @unchecked Sendable {
    package static let shared = SignalCleanup()

    package struct Registration: Hashable, Sendable {
        fileprivate let id: Int
    }

    private struct State {
        var actions: [Int: @Sendable () -> Void] = [:]
        var nextID = 0
        var sources: [any DispatchSourceSignal] = []
    }

    private let state = NIOLockedValueBox(State())

    /// Starts handling SIGINT and SIGTERM; calling it again does nothing.
    package func install() {
        state.withLockedValue { state in
            guard state.sources.isEmpty else { return }
            for signalNumber in [SIGINT, SIGTERM] {
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
                source.setEventHandler { [self] in
                    runAll()
                    exit(128 + signalNumber)
                }
                source.resume()
                state.sources.append(source)
            }
        }
    }

    package func add(_ action: @escaping @Sendable () -> Void) -> Registration {
        state.withLockedValue { state in
            state.nextID += 1
            state.actions[state.nextID] = action
            return Registration(id: state.nextID)
        }
    }

    package func remove(_ registration: Registration) {
        _ = state.withLockedValue { $0.actions.removeValue(forKey: registration.id) }
    }

    private func runAll() {
        let actions = state.withLockedValue { state in
            defer { state.actions = [:] }
            return state.actions.sorted { $0.key > $1.key }.map(\.value)
        }
        for action in actions { action() }
    }
}
