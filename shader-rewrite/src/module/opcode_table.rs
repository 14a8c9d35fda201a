//! What the parser and the passes need to know about every opcode, from rspirv's SPIR-V grammar
//! (`rspirv::grammar::INSTRUCTION_TABLE`), as a table built at compile time: no lazy setup
//! and no search at run time (rspirv's own lookup is a linear search over ~860 entries, and the
//! tables this replaces were 65 536-entry vectors built on the first module of a process).
//!
//! `opcode_entries.in` is generated from the grammar by the unit test below
//! (`REGENERATE_OPCODE_TABLE=1 cargo test -p shader-rewrite --lib opcode_table`), which also
//! fails when the committed file no longer matches the rspirv in use.

/// Bits of an entry: the opcode is in the grammar, it has a result type, a result id.
pub(crate) const KNOWN: u16 = 1;
pub(crate) const TYPE: u16 = 2;
pub(crate) const RESULT: u16 = 4;
/// Bits 3..8: operand words after the result type and id that every instance has (a
/// `LiteralInteger`-`IdRef` pair counts two).
const MIN_SHIFT: u16 = 3;
/// Bits 8..13: leading operands that are certainly ids (`ALL_IDS`: every operand is one).
const LEAD_SHIFT: u16 = 8;
const ALL_IDS: u16 = 31;

/// (opcode, entry) for every opcode of the grammar, sorted by opcode.
const ENTRIES: &[(u16, u16)] = &include!("opcode_entries.in");

/// One past the largest opcode of the grammar.
const LIMIT: usize = ENTRIES[ENTRIES.len() - 1].0 as usize + 1;

/// Entries by opcode (0 for opcodes the grammar does not know), expanded by the compiler.
static INFO: [u16; LIMIT] = {
    let mut t = [0u16; LIMIT];
    let mut i = 0;
    while i < ENTRIES.len() {
        t[ENTRIES[i].0 as usize] = ENTRIES[i].1;
        i += 1;
    }
    t
};

/// The entry of `op` (0: unknown).
#[inline]
pub(crate) fn info(op: u32) -> u16 {
    INFO.get(op as usize).copied().unwrap_or(0)
}

#[inline]
pub(crate) fn min_operands(info: u16) -> usize {
    ((info >> MIN_SHIFT) & 31) as usize
}

/// Leading operands that are ids (`usize::MAX`: all of them).
#[inline]
pub(crate) fn leading_ids(info: u16) -> usize {
    match (info >> LEAD_SHIFT) & 31 {
        ALL_IDS => usize::MAX,
        n => n as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rspirv::grammar::{OperandKind, OperandQuantifier, INSTRUCTION_TABLE};

    /// The text of opcode_entries.in, from the grammar.
    fn generate() -> String {
        let mut entries: Vec<(u32, u16, &str)> = INSTRUCTION_TABLE
            .iter()
            .map(|inst| {
                let mut bits = KNOWN;
                let (mut min, mut lead, mut leading) = (0u16, 0u16, true);
                for o in inst.operands.iter() {
                    match o.kind {
                        OperandKind::IdResultType => bits |= TYPE,
                        OperandKind::IdResult => bits |= RESULT,
                        kind if o.quantifier == OperandQuantifier::One => {
                            let pair = matches!(kind, OperandKind::PairLiteralIntegerIdRef | OperandKind::PairIdRefLiteralInteger | OperandKind::PairIdRefIdRef);
                            min += if pair { 2 } else { 1 };
                        }
                        _ => {}
                    }
                    if leading {
                        match (o.kind, o.quantifier) {
                            (OperandKind::IdResultType | OperandKind::IdResult, _) => {}
                            (OperandKind::IdRef | OperandKind::IdScope | OperandKind::IdMemorySemantics, OperandQuantifier::One) => lead += 1,
                            (OperandKind::IdRef, OperandQuantifier::ZeroOrMore) => {
                                lead = ALL_IDS;
                                leading = false;
                            }
                            _ => leading = false,
                        }
                    }
                }
                assert!(min < 32 && lead <= ALL_IDS, "Op{} does not fit the table's bit fields", inst.opname);
                (inst.opcode as u32, bits | (min << MIN_SHIFT) | (lead << LEAD_SHIFT), inst.opname)
            })
            .collect();
        entries.sort();
        let mut out = String::from("// Generated from rspirv's grammar by module::opcode_table's unit test: do not edit.\n// (opcode, entry): see opcode_table.rs for the bits.\n[\n");
        for (op, entry, name) in entries {
            assert!(op <= u16::MAX as u32);
            out += &format!("    ({op}, {entry:#06x}), // Op{name}\n");
        }
        out + "]\n"
    }

    #[test]
    fn opcode_table_matches_the_grammar() {
        let text = generate();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/module/opcode_entries.in");
        if std::env::var_os("REGENERATE_OPCODE_TABLE").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        assert!(
            text == include_str!("opcode_entries.in"),
            "{} is stale: regenerate it with REGENERATE_OPCODE_TABLE=1 cargo test -p shader-rewrite --lib opcode_table",
            path.display()
        );
    }

    #[test]
    fn entries_decode() {
        // OpLoad: result type, result id, the pointer (memory operands optional).
        let load = info(61);
        assert_eq!((load & TYPE != 0, load & RESULT != 0, min_operands(load), leading_ids(load)), (true, true, 1, 1));
        // OpStore: no results, pointer and object.
        let store = info(62);
        assert_eq!((store & TYPE, store & RESULT, min_operands(store), leading_ids(store)), (0, 0, 2, 2));
        // OpFunctionCall: the callee, then any number of ids.
        assert_eq!(leading_ids(info(57)), usize::MAX);
        // OpRawAccessChainNV: base, stride, index, offset; the robustness mask is optional.
        assert_eq!((min_operands(info(5398)), leading_ids(info(5398))), (4, 4));
        assert_eq!(info(9), 0); // not an opcode
        assert_eq!(info(70_000), 0);
    }
}
