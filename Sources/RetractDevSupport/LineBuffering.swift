#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Darwin)
@preconcurrency import Darwin
#endif

/// Makes stdout flush at every line, even into a file or a pipe: the
/// account and the progress on stderr come out in order when both go to one,
/// and a run that lasts minutes is seen as it goes.
package func lineBufferStandardOutput() {
    setvbuf(stdout, nil, _IOLBF, 0)
}
