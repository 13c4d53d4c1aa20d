import RetractCore
import RetractKit
import RetractStore

extension ReferenceID {
    /// A reference given on the command line, checked as every reference
    /// from outside is; `name` (`--reference`) names it in the error.
    init(argument text: String, name: String) throws(RetractError) {
        do {
            try self.init(validating: text, field: name)
        } catch {
            throw RetractError(error)
        }
    }
}

extension RetractError {
    /// This error with its field named as the command line names it
    /// (`sentAt` as `--sent-at`), when `flags` has that field.
    func naming(_ flags: [String: String]) -> RetractError {
        renamingField { flags[$0] ?? $0 }
    }
}
