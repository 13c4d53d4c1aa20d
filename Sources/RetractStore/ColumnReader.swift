import PostgresNIO

/// A row read in the order its column list names the columns, a group of
/// them at a time: each reader sits beside its list, a line of the list for
/// each group it reads, and no offset is counted by hand.
struct ColumnReader {
    private let cells: PostgresRandomAccessRow
    private var index: Int

    /// - Parameter index: the first column to read (a column a query puts
    ///   before the list, such as a hash to compare, is read first).
    init(_ row: PostgresRow, from index: Int = 0) {
        cells = row.makeRandomAccess()
        self.index = index
    }

    /// The next columns, as many as the tuple has.
    mutating func next<each Column: PostgresDecodable>(_: (repeat each Column).Type) throws -> (repeat each Column) {
        (repeat try one((each Column).self))
    }

    private mutating func one<Value: PostgresDecodable>(_: Value.Type) throws -> Value {
        defer { index += 1 }
        return try cells[index].decode(Value.self)
    }
}
