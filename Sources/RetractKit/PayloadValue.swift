import Foundation

/// One value inside custom data, seen as the JSON it came from.
///
/// Values arrive either as Foundation objects (a push's `userInfo`, or the
/// result of `JSONSerialization`) or through a `Decoder`; both are read into
/// this shape so that one set of rules interprets them. Only one level of an
/// array or an object is looked into: custom data never needs more, and not
/// descending keeps hostile nesting from costing stack.
enum PayloadValue: Equatable {
    case null
    case bool(Bool)
    /// A JSON number that is an integer, in its decimal form.
    case integer(String)
    /// A JSON number that is not an integer, or not one that fits in 64 bits.
    case fraction(Double)
    case string(String)
    case array([PayloadValue])
    /// An object, its values read without looking into them (an edit,
    /// `pushNotificationEdit`, is the one object custom data holds).
    case object([String: PayloadValue])
    /// Anything else, named for error messages ("an object", "Data").
    case other(String)

    /// What the value is, for error messages.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer: "an integer"
        case .fraction: "a number with a fraction"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        case .other(let kind): kind
        }
    }
}

// MARK: - From Foundation objects

extension PayloadValue {
    init(_ value: Any, lookInside: Bool = true) {
        switch value {
        case let string as String:
            self = .string(string)
        case let number as NSNumber:
            self = PayloadValue(number: number)
        case is NSNull:
            self = .null
        case let array as [Any]:
            self = lookInside ? .array(array.map { PayloadValue($0, lookInside: false) }) : .other("an array")
        case let object as [AnyHashable: Any]:
            guard lookInside else {
                self = .other("an object")
                return
            }
            var fields: [String: PayloadValue] = [:]
            for (key, value) in object {
                if let key = key.base as? String { fields[key] = PayloadValue(value, lookInside: false) }
            }
            self = .object(fields)
        case is Data:
            self = .other("Data")
        default:
            self = .other("a value of type \(type(of: value))")
        }
    }

    private init(number: NSNumber) {
        if number.isBoolean {
            self = .bool(number.boolValue)
            return
        }
        // Linux's JSONSerialization hands some integers over as decimals.
        if let decimal = number as? NSDecimalNumber {
            // Its `doubleValue` rounds differently from a JSON parser; its text does not.
            let text = decimal.stringValue
            self = Int64(text) != nil || UInt64(text) != nil ? .integer(text) : PayloadValue(double: Double(text) ?? decimal.doubleValue)
            return
        }
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "f"), UInt8(ascii: "d"):
            self = PayloadValue(double: number.doubleValue)
        case UInt8(ascii: "C"), UInt8(ascii: "S"), UInt8(ascii: "I"), UInt8(ascii: "L"), UInt8(ascii: "Q"):
            self = .integer(String(number.uint64Value))
        default:
            self = .integer(String(number.int64Value))
        }
    }

    /// An integral double that fits in 64 bits is an integer (`1e3` is 1000,
    /// and so is the `1e+18` a decoder also reads as an exact `Int64`).
    init(double: Double) {
        if let integer = Int64(exactly: double) {
            self = .integer(String(integer))
        } else {
            self = .fraction(double)
        }
    }
}

extension NSNumber {
    /// `JSONSerialization` and `userInfo` hand booleans over as `NSNumber`, and
    /// `NSNumber(1) as? Bool` succeeds, so the kind must be asked for directly.
    fileprivate var isBoolean: Bool {
        #if canImport(Darwin)
        CFGetTypeID(self) == CFBooleanGetTypeID()
        #else
        objCType.pointee == CChar(UInt8(ascii: "c"))
        #endif
    }
}

// MARK: - From a Decoder

extension PayloadValue: Decodable {
    init(from decoder: any Decoder) throws {
        self = try PayloadValue(decoder: decoder, lookInside: true)
    }

    private init(decoder: any Decoder, lookInside: Bool) throws {
        if let container = try? decoder.singleValueContainer() {
            if container.decodeNil() {
                self = .null
                return
            }
            if let bool = try? container.decode(Bool.self) {
                self = .bool(bool)
                return
            }
            if let integer = try? container.decode(Int64.self) {
                self = .integer(String(integer))
                return
            }
            if let integer = try? container.decode(UInt64.self) {
                self = .integer(String(integer))
                return
            }
            if let double = try? container.decode(Double.self) {
                self = PayloadValue(double: double)
                return
            }
            if let string = try? container.decode(String.self) {
                self = .string(string)
                return
            }
        }
        if var elements = try? decoder.unkeyedContainer() {
            guard lookInside else {
                self = .other("an array")
                return
            }
            var values: [PayloadValue] = []
            while !elements.isAtEnd {
                values.append(try elements.decode(ArrayElement.self).value)
            }
            self = .array(values)
            return
        }
        if let object = try? decoder.container(keyedBy: FieldKey.self) {
            guard lookInside else {
                self = .other("an object")
                return
            }
            var fields: [String: PayloadValue] = [:]
            for key in object.allKeys { fields[key.stringValue] = try object.decode(ArrayElement.self, forKey: key).value }
            self = .object(fields)
            return
        }
        self = .other("an object")
    }

    private struct FieldKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }

        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// An array element, or an object's field: classified without looking into it.
    private struct ArrayElement: Decodable {
        var value: PayloadValue

        init(from decoder: any Decoder) throws {
            value = try PayloadValue(decoder: decoder, lookInside: false)
        }
    }
}
