//! Helpers the passes share.
use crate::module::{op, Inst};

/// Memory operand bit Aligned (SPIR-V spec 3.26).
pub const MEM_ALIGNED: u32 = 0x2;

/// Splits memory operands into (mask, Aligned literal, the remaining operand words).
pub fn split_memory_operands(ops: &[u32]) -> (u32, Option<u32>, Vec<u32>) {
    let Some(&mask) = ops.first() else { return (0, None, vec![]) };
    if mask & MEM_ALIGNED != 0 {
        (mask, ops.get(1).copied(), ops.get(2..).unwrap_or(&[]).to_vec())
    } else {
        (mask, None, ops[1..].to_vec())
    }
}

/// (operand position, id) of the operands of `inst` that can hold a pointer. Only opcodes whose
/// operand layout is all ids (or known) are listed, so a literal is never mistaken for an id.
pub fn pointer_operands(inst: &Inst) -> Vec<(usize, u32)> {
    let all = |from: usize| inst.ops.iter().enumerate().skip(from).map(|(p, &id)| (p, id)).collect::<Vec<_>>();
    match inst.op {
        op::LOAD | op::COPY_OBJECT | op::ARRAY_LENGTH | op::CONVERT_PTR_TO_U | op::BITCAST => all(0).into_iter().take(1).collect(),
        op::STORE => all(0).into_iter().take(2).collect(),
        op::SELECT => all(1).into_iter().take(2).collect(),
        op::PHI => all(0).into_iter().step_by(2).collect(),
        op::FUNCTION_CALL | op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | op::RAW_ACCESS_CHAIN_NV => all(0).into_iter().take(1).chain(if inst.op == op::FUNCTION_CALL { all(1) } else { vec![] }).collect(),
        // OpCopyMemory / OpCopyMemorySized: target and source.
        63 | 64 => all(0).into_iter().take(2).collect(),
        // Atomics (OpAtomicLoad..OpAtomicXor, flag ops, float min/max/add): the pointer comes first.
        227..=242 | 318 | 319 | 5614 | 5615 | 6035 => all(0).into_iter().take(1).collect(),
        // OpPtrEqual, OpPtrNotEqual, OpPtrDiff.
        401..=403 => all(0).into_iter().take(2).collect(),
        _ => vec![],
    }
}

