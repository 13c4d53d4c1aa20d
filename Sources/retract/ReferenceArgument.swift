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
