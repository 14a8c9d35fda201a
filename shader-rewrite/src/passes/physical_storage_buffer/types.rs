//! PhysicalStorageBuffer pointer types become the address type (a uvec2, `address.rs`):
//! 8 bytes, as the pointers were, so explicit layouts (Offset, ArrayStride) of structs and arrays holding
//! pointers stay as they are. Types refer to each other by id, so only the references to the
//! pointer types change; struct, array, pointer and function types keep their ids.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::builder::{deco, sc, Builder};
use crate::error::RewriteError;
use crate::module::{op, Inst, Module};

use crate::passes::util::{forget_ids, merge_function_types, merge_pointer_types};

const SPEC_CONSTANT_OP: u32 = 52;

/// A PhysicalStorageBuffer pointer type of the input.
#[derive(Debug, Clone, Copy)]
pub(super) struct PhysPtr {
    pub pointee: u32,
    /// Its ArrayStride decoration: the Element step of OpPtrAccessChain.
    pub stride: Option<u32>,
}

/// What the retyping found: the pointer types (gone from the module) and the global values
/// (OpConstantNull, OpUndef) that were pointers.
pub(super) struct Retyped {
    pub ptrs: HashMap<u32, PhysPtr>,
    /// Global value → its pointer type.
    pub global_values: HashMap<u32, u32>,
}

/// Replaces every PhysicalStorageBuffer pointer type by `addr` in the module's types and global
/// values (function bodies are retyped by [`retype_functions`] once lowered), drops the pointer
/// and forward-pointer declarations, merges function types that became equal (SPIR-V spec 2.8:
/// non-aggregate, non-pointer types must be unique) and moves `addr`'s declaration (and u32's)
/// to the front of the types, before any struct that now refers to it.
pub(super) fn retype_globals(m: &mut Module, addr: u32, u32t: u32) -> Result<Retyped, RewriteError> {
    let mut ptrs: HashMap<u32, PhysPtr> = HashMap::default();
    for g in &m.globals {
        if g.op == op::TYPE_POINTER && g.ops[0] == sc::PHYSICAL_STORAGE_BUFFER {
            ptrs.insert(g.id, PhysPtr { pointee: g.ops[1], stride: None });
        }
    }
    for a in &m.annotations {
        if let (op::DECORATE, [t, deco::ARRAY_STRIDE, s, ..]) = (a.op, a.ops.as_slice()) {
            if let Some(p) = ptrs.get_mut(t) {
                p.stride = Some(*s);
            }
        }
    }
    // A pointer to a pointer points to an address now.
    let pointers: HashSet<u32> = ptrs.keys().copied().collect();
    for p in ptrs.values_mut().filter(|p| pointers.contains(&p.pointee)) {
        p.pointee = addr;
    }
    let sub = |id: &mut u32| {
        if pointers.contains(id) {
            *id = addr;
        }
    };
    let mut global_values = HashMap::default();
    let forward = |g: &Inst| g.op == op::TYPE_FORWARD_POINTER && g.ops.get(1) == Some(&sc::PHYSICAL_STORAGE_BUFFER);
    m.globals.retain(|g| !(ptrs.contains_key(&g.id) || forward(g)));
    for g in m.globals.iter_mut() {
        match g.op {
            op::TYPE_STRUCT | op::TYPE_FUNCTION => g.ops.iter_mut().for_each(sub),
            op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => sub(&mut g.ops[0]),
            op::TYPE_POINTER => sub(&mut g.ops[1]),
            SPEC_CONSTANT_OP if ptrs.contains_key(&g.ty) => {
                return Err(RewriteError::unsupported(format!("%{} = OpSpecConstantOp", g.id), "a specialization-constant pointer"));
            }
            _ if ptrs.contains_key(&g.ty) => {
                global_values.insert(g.id, g.ty);
                g.ty = addr;
            }
            _ => {}
        }
    }
    merge_pointer_types(m);
    merge_function_types(m);
    hoist(m, &[u32t, addr]);
    forget_ids(m, &pointers);
    Ok(Retyped { ptrs, global_values })
}

/// Moves the declarations of `ids` (types without operand ids, or vectors of the ones before
/// them) to the front of the globals, in that order.
fn hoist(m: &mut Module, ids: &[u32]) {
    let mut moved: Vec<Inst> = ids.iter().filter_map(|id| m.globals.iter().position(|g| g.id == *id).map(|n| m.globals.remove(n))).collect();
    moved.append(&mut m.globals);
    m.globals = moved;
}

/// The address type, a uvec2 (`address.rs`). Declared (at the end of the globals) if new.
pub(super) fn address_type(m: &mut Module) -> (u32, u32) {
    let mut b = Builder::new(m);
    let u32t = b.t_u32();
    let addr = b.t_vec(u32t, 2);
    (addr, u32t)
}

/// Result types of lowered function bodies: what was a pointer is an address.
pub(super) fn retype_functions(m: &mut Module, ptrs: &HashMap<u32, PhysPtr>, addr: u32) {
    let sub = |ty: &mut u32| {
        if ptrs.contains_key(ty) {
            *ty = addr;
        }
    };
    for f in m.functions.iter_mut() {
        sub(&mut f.def.ty);
        f.params.iter_mut().for_each(|p| sub(&mut p.ty));
        f.blocks.iter_mut().flat_map(|b| b.insts.iter_mut()).for_each(|i| sub(&mut i.ty));
    }
}
