//! One OpRawAccessChainNV checked against the spec's rules, and the shape of a load or store
//! through it.
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

impl Chain {
    /// The chain `inst` (an OpRawAccessChainNV), checked against the spec's rules.
    pub(super) fn of(b: &Builder, inst: &Inst) -> Result<Chain, RewriteError> {
        if inst.ops.len() < 4 {
            return Err(RewriteError::malformed(0, format!("{} has {} operands, needs at least 4", describe(inst), inst.ops.len())));
        }
        let (base, stride_id, index, offset) = (inst.ops[0], inst.ops[1], inst.ops[2], inst.ops[3]);
        let mask = inst.ops.get(4).copied().unwrap_or(0);
        let (storage, _) = b.pointer(inst.ty).ok_or_else(|| RewriteError::unsupported(describe(inst), "result type is not a pointer"))?;
        let stride = b
            .const_value(stride_id)
            .ok_or_else(|| RewriteError::unsupported(describe(inst), format!("Stride %{stride_id} is not an integer OpConstant")))? as u32; // treated as unsigned and used modulo 2^32
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
        Ok(Chain { ty: inst.ty, base, stride, index, offset, robustness, storage, nonuniform })
    }

    pub(super) fn physical(&self) -> bool {
        self.storage == sc::PHYSICAL_STORAGE_BUFFER
    }

    /// The shape of the OpLoad/OpStore `inst` through this (non-physical) chain.
    pub(super) fn access_shape(&self, b: &Builder, inst: &Inst) -> Result<AccessShape, RewriteError> {
        let (store, mem_start) = if inst.op == op::STORE { (true, 2) } else { (false, 1) };
        let (_, pointee) = pointer_of(b, self.ty, inst.ops[0])?;
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
        Ok(AccessShape {
            store,
            storage: self.storage,
            value_ty: pointee,
            value,
            align: align.min(16),
            robustness: self.robustness,
            mem_ops,
            nonuniform: self.nonuniform,
            wide: false,
        })
    }
}
