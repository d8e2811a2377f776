/// How large and how deep a module file may be.
///
/// `daogate check` exists to judge files before they are trusted, so a file
/// that is too large, too deep or expands too far is refused with its
/// `file:line` instead of exhausting the stack or the CPU. Loading, rendering
/// and describing recurse once per level of nesting; these bounds keep every
/// recursion shallow. (libxml2 refuses elements nested deeper than 256 on its
/// own; conditions have ``Expression/maximumDepth``.)
public enum ModuleLimits {
    /// The largest module file, in bytes.
    public static let fileSize = 1 << 20
    /// How deep SQL may nest: dynamic elements (`if`, `choose`, `foreach`,
    /// `where`, `set`, `trim`) and `${}` inclusions of fragments and consts,
    /// counted together.
    public static let nesting = 64
    /// How much SQL text a module may come to once every `${}` inclusion is
    /// expanded, in bytes: a fragment that includes the next one twice, 40
    /// levels deep, would otherwise expand to 2⁴⁰ copies.
    public static let expandedSQL = 2 << 20
    /// How many properties a chained access reads (`a.b.c` reads 2), in
    /// references and conditions alike.
    public static let chainLength = 16
    /// How deep array types nest in `arguments` (`x:[[int]]` is 2).
    public static let typeNesting = 8
    /// How many `${}` inclusions of fragments and consts a module's bodies
    /// may expand, all together.
    public static let inclusions = 10_000
}

/// What a module's bodies may still expand to; the module's parser hands
/// what is left from one body's parser to the next.
struct ExpansionBudget {
    var bytes = ModuleLimits.expandedSQL
    var inclusions = ModuleLimits.inclusions

    var isSpent: Bool { bytes < 0 || inclusions < 0 }
}
