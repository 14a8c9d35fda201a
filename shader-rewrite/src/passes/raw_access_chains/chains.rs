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
        wide: false,
    }))
}

/// Every OpRawAccessChainNV of the module, checked against the spec's rules.
pub(super) fn collect_chains(b: &Builder, functions: &[Function]) -> Result<BTreeMap<u32, Chain>, RewriteError> {
    let mut chains: BTreeMap<u32, Chain> = BTreeMap::new();
    for f in functions.iter() {
        for inst in f.blocks.iter().flat_map(|blk| blk.insts.iter()).filter(|i| i.op == op::RAW_ACCESS_CHAIN_NV) {
            if inst.ops.len() < 4 {
                return Err(RewriteError::malformed(0, format!("{} has {} operands, needs at least 4", describe(inst), inst.ops.len())));
            }
            let (base, stride_id, index, offset) = (inst.ops[0], inst.ops[1], inst.ops[2], inst.ops[3]);
            let mask = inst.ops.get(4).copied().unwrap_or(0);
            let (storage, _) = b.pointer(inst.ty).ok_or_else(|| RewriteError::unsupported(describe(inst), "result type is not a pointer"))?;
            let stride = b.const_value(stride_id).ok_or_else(|| {
                RewriteError::unsupported(describe(inst), format!("Stride %{stride_id} is not an integer OpConstant"))
            })? as u32; // treated as unsigned and used modulo 2^32
            let robustness = match mask & 3 {
                0 => Robustness::None,
                ROBUST_PER_COMPONENT => Robustness::PerComponent,
                ROBUST_PER_ELEMENT if stride == 0 => {
                    return Err(RewriteError::unsupported(describe(inst), "RobustnessPerElementNV with Stride 0 (the spec requires Stride ≠ 0)"))
                }
                ROBUST_PER_ELEMENT => Robustness::PerElement { stride },
                _ => return Err(RewriteError::unsupported(describe(inst), "both robustness operands set (the spec forbids it)")),
            };
            if storage == sc::PHYSICAL_STORAGE_BUFFER && robustness != Robustness::None {
                return Err(RewriteError::unsupported(describe(inst), "robustness on a PhysicalStorageBuffer pointer (the spec forbids it)"));
            }
            if ![sc::STORAGE_BUFFER, sc::UNIFORM, sc::PHYSICAL_STORAGE_BUFFER].contains(&storage) {
                return Err(RewriteError::unsupported(describe(inst), format!("storage class {storage} (must be StorageBuffer, Uniform or PhysicalStorageBuffer)")));
            }
            let nonuniform = b.has_decoration(inst.id, deco::NON_UNIFORM) || b.has_decoration(base, deco::NON_UNIFORM);
            chains.insert(inst.id, Chain { ty: inst.ty, base, stride, index, offset, robustness, storage, nonuniform });
        }
    }
    Ok(chains)
}

/// The shapes of all loads/stores through chains. Only OpLoad/OpStore may consume a chain (spec:
/// "The result must only be consumed by OpLoad and OpStore").
pub(super) fn collect_accesses(b: &Builder, functions: &[Function], chains: &BTreeMap<u32, Chain>) -> Result<Vec<AccessShape>, RewriteError> {
    let mut access_list: Vec<AccessShape> = vec![];
    for inst in functions.iter().flat_map(|f| f.blocks.iter()).flat_map(|blk| blk.insts.iter()) {
        for (pos, id) in pointer_operands(inst) {
            if chains.contains_key(&id) && !((inst.op == op::LOAD || inst.op == op::STORE) && pos == 0) {
                return Err(RewriteError::unsupported(
                    describe(inst),
                    format!("uses the result of OpRawAccessChainNV %{id}; the spec allows only OpLoad and OpStore through it"),
                ));
            }
        }
        if let Some(shape) = access_shape(b, chains, inst)? {
            access_list.push(shape);
        }
    }
    Ok(access_list)
}
