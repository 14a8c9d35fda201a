//! Shadow pointers: for every pointer that reaches a chain's Base, the same pointer into each
//! alias view of the same descriptor.
use super::*;

/// Shadow pointer ids by (original pointer, view).
pub(super) struct Shadows(pub(super) ListMap<(u32, AliasKind), u32>);

impl Shadows {
    pub(super) fn get(&self, id: u32, k: AliasKind) -> Result<u32, RewriteError> {
        self.0.get(&(id, k)).copied().ok_or_else(|| {
            RewriteError::malformed(0, format!("pointer %{id} flows into a raw access chain base but is not a buffer pointer of the chain's storage class"))
        })
    }
    pub(super) fn all(&self, id: u32, views: &AliasViews) -> Result<smallvec::SmallVec<[u32; 5]>, RewriteError> {
        views.kinds.iter().map(|&k| self.get(id, k)).collect()
    }
}

pub(super) fn views_of(backend: &Backend, storage: u32, id: u32) -> Result<&AliasViews, RewriteError> {
    backend.views.get(&storage).ok_or_else(|| RewriteError::malformed(0, format!("pointer %{id} has storage class {storage}, unlike the raw access chains it reaches")))
}

pub(super) fn pointer_of(b: &Builder, ty: u32, id: u32) -> Result<(u32, u32), RewriteError> {
    b.pointer(ty).ok_or_else(|| RewriteError::malformed(0, format!("%{id} should be a pointer but its type %{ty} is not")))
}

/// The pointee of a raw chain's root variable must be a Block (StorageBuffer) or BufferBlock
/// (Uniform) struct, or a descriptor array of them (SPV_NV_raw_access_chains, Base).
pub(super) fn check_block(b: &Builder, pointee: u32, storage: u32, root: u32) -> Result<(), RewriteError> {
    let mut t = pointee;
    if let Some(g) = b.global(t).filter(|g| g.op == op::TYPE_ARRAY || g.op == op::TYPE_RUNTIME_ARRAY) {
        t = g.ops[0];
    }
    let want = if storage == sc::UNIFORM { deco::BUFFER_BLOCK } else { deco::BLOCK };
    let is_struct = b.global(t).is_some_and(|g| g.op == op::TYPE_STRUCT);
    if !is_struct || !b.has_decoration(t, want) {
        return Err(RewriteError::unsupported(
            format!("%{root} = OpVariable"),
            format!("raw access chain base variable must point to a {} struct or an array of them", if storage == sc::UNIFORM { "BufferBlock" } else { "Block" }),
        ));
    }
    Ok(())
}

/// Type of the shadow of a pointer of type `ty` for view `k`: the same pointer shape with the
/// block replaced by the alias struct (arrays of blocks become arrays of alias structs).
pub(super) fn shadow_ty(
    b: &mut Builder,
    backend: &Backend,
    cache: &mut ListMap<(u32, AliasKind), u32>,
    ty: u32,
    k: AliasKind,
    id: u32,
) -> Result<u32, RewriteError> {
    if let Some(&t) = cache.get(&(ty, k)) {
        return Ok(t);
    }
    let (storage, pointee) = b.pointer(ty).ok_or_else(|| RewriteError::unsupported(format!("%{id}"), "not a pointer"))?;
    let views = views_of(backend, storage, id)?;
    let slot = views.kinds.iter().position(|x| *x == k).expect("shadow views come from this storage class");
    let alias = views.struct_ty[slot];
    let g = b.global(pointee).cloned().ok_or_else(|| RewriteError::unsupported(format!("%{id}"), "pointee type not found"))?;
    let new_pointee = match g.op {
        op::TYPE_STRUCT => alias,
        op::TYPE_ARRAY => {
            let nid = b.id();
            b.add_global(Inst::new(op::TYPE_ARRAY, 0, nid, ops![alias, g.ops[1]]))
        }
        op::TYPE_RUNTIME_ARRAY => {
            let nid = b.id();
            b.add_global(Inst::new(op::TYPE_RUNTIME_ARRAY, 0, nid, ops![alias]))
        }
        _ => return Err(RewriteError::unsupported(format!("%{id}"), "raw access chain base does not point to a block or an array of blocks")),
    };
    let t = b.t_ptr(storage, new_pointee);
    cache.insert((ty, k), t);
    Ok(t)
}

/// The block struct of root variable `root` when it can serve as the word view itself:
/// `struct { uint data[]; }` (one member at Offset 0, a runtime array of unsigned 32-bit ints
/// with ArrayStride 4: what dxil-spirv declares for raw and structured buffers), the variable
/// (or the descriptor array it is) not Restrict (its accesses alias the other views').
pub(super) fn reusable_word_block(b: &Builder, root: u32) -> Option<u32> {
    let (_, pointee) = b.pointer(b.global(root)?.ty)?;
    let t = b.global(pointee)?;
    let block = if matches!(t.op, op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY) { *t.ops.first()? } else { pointee };
    let s = b.global(block).filter(|s| s.op == op::TYPE_STRUCT && s.ops.len() == 1)?;
    let rta = b.global(s.ops[0]).filter(|a| a.op == op::TYPE_RUNTIME_ARRAY)?;
    let elem = b.global(rta.ops[0])?;
    if elem.op != op::TYPE_INT || elem.ops[..] != [32, 0] || b.has_decoration(root, deco::RESTRICT) {
        return None;
    }
    let mut offset0 = false;
    let mut stride4 = false;
    for a in &b.m.annotations {
        match (a.op, a.ops.as_slice()) {
            (op::MEMBER_DECORATE, [t, 0, deco::OFFSET, 0]) if *t == block => offset0 = true,
            (op::DECORATE, [t, deco::ARRAY_STRIDE, 4]) if *t == s.ops[0] => stride4 = true,
            _ => {}
        }
    }
    (offset0 && stride4).then_some(block)
}

/// Removes the pointers the rewritten bodies define and nothing reads: a pointer gets a shadow
/// into every view of its storage class, and an access through it uses only some (the views of
/// its pieces and checks), so the rest are dead; the shadowed pointer itself is dead where only
/// raw chains read it; and so are the pointers only those read (a phi's inputs, a chain's
/// base). Returns the removed ids (their decorations go with them). Parameters stay: they are
/// part of the function's type. `made` are more candidates: the byte addresses the lowering
/// computed (pure values), dead where every view index is made from the chain's Index instead
/// (`Ctx::element_index`). Per-id tables are dense (`bound`: the module's).
pub(super) fn drop_unread(functions: &mut [Function], shadow: &Shadows, made: &[u32], bound: u32) -> Vec<u32> {
    const NOT_SHADOW: u32 = u32::MAX;
    // Candidate id -> how many operand words name it (a literal that equals it only keeps it).
    let mut uses = vec![NOT_SHADOW; bound as usize];
    let mut any = false;
    for x in shadow.0 .0.iter().flat_map(|&((id, _), sid)| [id, sid]).chain(made.iter().copied()) {
        if let Some(u) = uses.get_mut(x as usize) {
            *u = 0;
            any = true;
        }
    }
    if !any {
        return vec![];
    }
    // Where each shadow defined in the bodies is: (function, block, instruction).
    let mut defs: Vec<(u32, (u32, u32, u32))> = vec![];
    for (fi, f) in functions.iter().enumerate() {
        for (bi, blk) in f.blocks.iter().enumerate() {
            for (ii, inst) in blk.insts.iter().enumerate() {
                for &w in &inst.ops {
                    if let Some(u) = uses.get_mut(w as usize).filter(|u| **u != NOT_SHADOW) {
                        *u += 1;
                    }
                }
                if uses.get(inst.id as usize).is_some_and(|&u| u != NOT_SHADOW) {
                    defs.push((inst.id, (fi as u32, bi as u32, ii as u32)));
                }
            }
        }
    }
    defs.sort_unstable_by_key(|&(id, _)| id);
    let def_of = |id: u32| defs.binary_search_by_key(&id, |&(d, _)| d).ok().map(|i| defs[i].1);
    let mut dead: Vec<u32> = defs.iter().map(|&(id, _)| id).filter(|&id| uses[id as usize] == 0).collect();
    let mut removed: Vec<u32> = Vec::with_capacity(dead.len());
    while let Some(id) = dead.pop() {
        removed.push(id);
        let (fi, bi, ii) = def_of(id).expect("dead shadows are defined in the bodies");
        for &w in &functions[fi as usize].blocks[bi as usize].insts[ii as usize].ops {
            if let Some(u) = uses.get_mut(w as usize).filter(|u| **u != NOT_SHADOW && **u > 0) {
                *u -= 1;
                if *u == 0 && def_of(w).is_some() {
                    dead.push(w);
                }
            }
        }
    }
    if !removed.is_empty() {
        removed.sort_unstable();
        for b in functions.iter_mut().flat_map(|f| f.blocks.iter_mut()) {
            b.insts.retain(|i| removed.binary_search(&i.id).is_err());
        }
    }
    removed
}
