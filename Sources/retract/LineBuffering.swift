#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Darwin)
@preconcurrency import Darwin
#endif

/// Makes stdout flush at every line, so the account and the progress on
/// stderr come out in order when both go to one pipe or file.
func lineBufferStandardOutput() {
    setvbuf(stdout, nil, _IOLBF, 0)
}
