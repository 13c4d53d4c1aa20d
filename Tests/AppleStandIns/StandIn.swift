// Shared by the stand-in modules: compiled into each.

/// A stand-in's body: these modules are for compiling, never for running.
func standIn(_ function: StaticString = #function) -> Never {
    fatalError("\(function): a stand-in of Apple's SDK, for compiling only")
}
