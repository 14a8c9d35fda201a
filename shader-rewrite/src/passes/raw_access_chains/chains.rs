//! The chains of a module and the shapes of the loads/stores through them.
use super::*;

/// One OpRawAccessChainNV.
#[derive(Debug, Clone)]
pub(super) struct Chain {
    pub(super) ty: u32,
    pub(super) base: u32,
    pub(super) stride: u32,
    pub(super) index: u32,
    pub(super) offset: u32,
    pub(super) robustness: Robustness,
    pub(super) storage: u32,
    pub(super) nonuniform: bool,
}

pub(super) fn describe(inst: &Inst) -> String {
    let name = match inst.op {
        op::RAW_ACCESS_CHAIN_NV => "OpRawAccessChainNV".to_string(),
        op::LOAD => "OpLoad".to_string(),
        op::STORE => "OpStore".to_string(),
        other => format!("opcode {other}"),
    };
    if inst.id != 0 { format!("%{} = {}", inst.id, name) } else { format!("{} %{}", name, inst.ops.first().copied().unwrap_or(0)) }
}

/// The access shape of an OpLoad/OpStore through a (non-physical) chain; None for other
/// instructions.
pub(super) fn access_shape(b: &Builder, chains: &BTreeMap<u32, Chain>, inst: &Inst) -> Result<Option<AccessShape>, RewriteError> {
    let (store, mem_start) = match inst.op {
        op::LOAD => (false, 1),
        op::STORE => (true, 2),
        _ => return Ok(None),
    };
    let Some(chain) = inst.ops.first().and_then(|p| chains.get(p)) else { return Ok(None) };
    if chain.storage == sc::PHYSICAL_STORAGE_BUFFER {
        return Ok(None);
    }
    let (_, pointee) = pointer_of(b, chain.ty, inst.ops[0])?;
    let value = b.scalar_vec(pointee).filter(|v| matches!(v.width, 8 | 16 | 32 | 64) && (1..=4).contains(&v.n)).ok_or_else(|| {
        RewriteError::unsupported(describe(inst), "pointee is not a scalar or 2-4 component vector of 8/16/32/64-bit int or float")
    })?;
    let (mask, aligned, rest) = split_memory_operands(inst.ops.get(mem_start..).unwrap_or(&[]));
    let comp = value.width / 8;
    let align = aligned.unwrap_or(comp); // required by the spec; tolerate its absence as component alignment
    if align == 0 || !align.is_power_of_two() {
        return Err(RewriteError::unsupported(describe(inst), format!("Aligned {align} is not a power of two")));
    }
    if align < comp {
        return Err(RewriteError::unsupported(
            describe(inst),
            format!("Aligned {align} is smaller than the component size {comp} (the spec requires at least the component size)"),
        ));
    }
    let mut mem_ops = vec![];
    if mask & !MEM_ALIGNED != 0 {
        mem_ops.push(mask & !MEM_ALIGNED);
        mem_ops.extend_from_slice(&rest);
    }
    Ok(Some(AccessShape {
        store,
        storage: chain.storage,
        value_ty: pointee,
        value,
        align: align.min(16),
        robustness: chain.robustness,
        mem_ops,
        nonuniform: chain.nonuniform,
    }))
}

/// Splits memory operands into (mask, Aligned literal, the remaining operand words).
pub(super) fn split_memory_operands(ops: &[u32]) -> (u32, Option<u32>, Vec<u32>) {
    let Some(&mask) = ops.first() else { return (0, None, vec![]) };
    if mask & MEM_ALIGNED != 0 {
        (mask, ops.get(1).copied(), ops.get(2..).unwrap_or(&[]).to_vec())
    } else {
        (mask, None, ops[1..].to_vec())
    }
}

/// (operand position, id) of the operands of `inst` that can hold a pointer. Only opcodes whose
/// operand layout is all ids (or known) are listed, so a literal is never mistaken for an id.
pub(super) fn pointer_operands(inst: &Inst) -> Vec<(usize, u32)> {
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
