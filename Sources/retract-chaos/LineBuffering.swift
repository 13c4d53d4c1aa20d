#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Darwin)
@preconcurrency import Darwin
#endif

/// A line at a time on standard output, even into a file or a pipe: a run lasts minutes.
func lineBufferStandardOutput() {
    setvbuf(stdout, nil, _IOLBF, 0)
}
