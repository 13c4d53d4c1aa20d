# shellcheck shell=bash
# The debug build the tests run on, with the dependencies' hottest modules
# optimized. Source this file, then call optimize_hot_dependencies before the
# first `swift build`.
#
# Why: every test that pushes goes through swift-nio's HTTP/2 stack, both in
# the `retract` processes and in the simulators. Built -Onone, its generic
# code runs unspecialised (NIOHTTP2's stream map scans a CircularBuffer whose
# index arithmetic is a generic call per step): sending 5,000 pushes took
# 14 s of a debug `retract send`, 6 s with these modules optimized. In CI,
# with two more modules than below, the tests took 383 s instead of 676 and
# the fault suite 102 s instead of 204, for 181 s more of build; with the
# modules below, 129 s more (562 to 691 s). Our own modules stay -Onone, with their
# assertions and debugging as they were; the dependencies run as they do in
# a release build.
#
# How: SwiftPM's driver starts swift-frontend from
# SWIFT_DRIVER_SWIFT_FRONTEND_EXEC when it is set; the frontend named there
# (scripts/lib/optimizing-frontend) adds -O to the jobs of the modules listed
# in RETRACT_OPTIMIZED_MODULES and runs the toolchain's own. Linux only: on a
# Mac the toolchain is found through xcrun, and the tests are run as they are.
#
# SwiftPM does not see this in its build plan: modules built before it was
# set stay as they were built. `rm -rf .build` once to have them optimized.

# The modules, by SwiftPM module name: swift-nio's core, POSIX event loops,
# data structures, HTTP/2, HPACK and TLS; PostgresNIO and its pool. Each
# costs the build time, measured here rebuilding one module alone, -Onone
# then -O: NIOCore +22 s, NIOPosix +23, NIOHTTP2 +17, NIOHPACK +7, NIOSSL
# +5, PostgresNIO +38, its pool +12. Left as built: NIOHTTP1 (+19) and
# HummingbirdCore (+13), whose HTTP/1 the tests use far less.
retract_optimized_modules="NIOCore _NIODataStructures NIOPosix NIOHTTP2 NIOHPACK NIOSSL NIOTLS PostgresNIO _ConnectionPoolModule"

optimize_hot_dependencies() {
    [ "$(uname -s)" = Linux ] || return 0
    local swift_path toolchain_bin here folder
    swift_path=$(command -v swift) || return 0
    toolchain_bin=$(dirname "$(readlink -f "$swift_path")")
    [ -x "$toolchain_bin/swift-frontend" ] || return 0
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    # The driver looks for the dependency scanner's library beside the
    # frontend it runs (../lib): a folder of our own with the toolchain's lib.
    folder=$PWD/.build/optimizing-frontend
    mkdir -p "$folder/bin"
    ln -sfn "$toolchain_bin/../lib" "$folder/lib"
    cp "$here/optimizing-frontend/swift-frontend" "$folder/bin/swift-frontend"
    export RETRACT_SWIFT_FRONTEND=$toolchain_bin/swift-frontend
    export RETRACT_OPTIMIZED_MODULES=${RETRACT_OPTIMIZED_MODULES-$retract_optimized_modules}
    export SWIFT_DRIVER_SWIFT_FRONTEND_EXEC=$folder/bin/swift-frontend
}
