import DAODialect

/// What the uses of a value say about its shape, merged: the lattice under
/// argument inference, from `unknown` (no use says anything) up to
/// `.known(.any)` (uses disagree, or one allows anything).
indirect enum InferredShape: Equatable {
    case unknown
    /// A scalar shape, or `.any`.
    case known(JSONShape)
    /// An object with the members its uses name, in first-seen order.
    case object([Member])
    case array(InferredShape)

    struct Member: Equatable {
        var name: String
        var shape: InferredShape
    }

    /// What both say: integers widen to 64 bits and to numbers; a
    /// disagreement is `.any`.
    func joined(with other: InferredShape) -> InferredShape {
        switch (self, other) {
        case (.unknown, _): return other
        case (_, .unknown): return self
        case (.known(let left), .known(let right)):
            switch (left, right) {
            case _ where left == right: return self
            case (.integer(let a), .integer(let b)): return .known(.integer(bits: max(a, b)))
            case (.integer, .number), (.number, .integer): return .known(.number)
            default: return .known(.any)
            }
        case (.object(var members), .object(let others)):
            for other in others {
                if let index = members.firstIndex(where: { $0.name == other.name }) {
                    members[index].shape = members[index].shape.joined(with: other.shape)
                } else {
                    members.append(other)
                }
            }
            return .object(members)
        case (.array(let element), .array(let other)):
            return .array(element.joined(with: other))
        default:
            return .known(.any)
        }
    }

    /// How deep a described shape may nest: a value reached through more
    /// steps (nested `foreach`es over chained members) is described as any
    /// JSON value from there, so no schema is deeper than what a reader, an
    /// encoder or a client generator recurses through safely.
    static let maximumDepth = 32

    /// `shape` for the value at the end of `steps` from this one.
    ///
    /// A `.count` step says nothing (it counts an array's elements or an
    /// object's members, or reads a member named `count`): such uses are left out.
    func joined(_ shape: InferredShape, at steps: [BindingSource.Step]) -> InferredShape {
        if steps.contains(.member("count")) { return self }
        let shape = steps.count > Self.maximumDepth ? .known(.any) : shape
        let nested = steps.prefix(Self.maximumDepth).reversed().reduce(shape) { inner, step in
            switch step {
            case .member(let name): .object([Member(name: name, shape: inner)])
            case .element: .array(inner)
            }
        }
        return joined(with: nested)
    }

    /// The shape, `.any` where nothing is known.
    var resolved: JSONShape {
        switch self {
        case .unknown: .any
        case .known(let shape): shape
        case .object(let members): .object(properties: members.map { JSONShape.Property(name: $0.name, shape: $0.shape.resolved) },
                                           className: nil)
        case .array(let element): .array(element.resolved)
        }
    }

    /// The shape of an argument declared of `type`: the type wins, and the
    /// properties of its objects are those inferred.
    func resolved(declared type: ArgumentType?) -> JSONShape {
        guard let type else { return resolved }
        switch type {
        case .scalar(.int): return .integer(bits: 32)
        case .scalar(.longLong): return .integer(bits: 64)
        case .scalar(.bool): return .boolean
        case .scalar(.double): return .number
        case .scalar(.string): return .string
        case .scalar(.binary): return .binary
        case .any: return .any
        case .object(let className):
            guard case .object(let members) = self else { return .object(properties: [], className: className) }
            return .object(properties: members.map { JSONShape.Property(name: $0.name, shape: $0.shape.resolved) }, className: className)
        case .array(let element):
            guard case .array(let inferred) = self else { return .array(InferredShape.unknown.resolved(declared: element)) }
            return .array(inferred.resolved(declared: element))
        }
    }
}
