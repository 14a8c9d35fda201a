//! Lowers `OpRawAccessChainNV` (SPV_NV_raw_access_chains) to core SPIR-V.
//!
//! - PhysicalStorageBuffer bases: the chain becomes address arithmetic (uvec2 bitcast + add with
//!   carry, so no Int64 is needed); loads/stores through it are untouched and keep `Aligned`.
//! - StorageBuffer / Uniform (BufferBlock) bases: every pointer that reaches a chain's Base gets
//!   "shadow" pointers to alias views of the same descriptor (see `byte_address`), following it
//!   through descriptor-array access chains, OpCopyObject, OpSelect, OpPhi and function
//!   parameters. A root whose block already is `struct { uint data[]; }` (what dxil-spirv
//!   declares) serves as the word view itself. The chain becomes its byte address; each
//!   OpLoad/OpStore through it becomes the backend's access through the shadows.
//!
//! Byte addresses are `Offset + Stride × Index` in wrapping 32-bit arithmetic: what NVIDIA does
//! and what vkd3d-proton's addressing-wrap tests expect (design.md §2).
//!
//! Cost: one walk over the bodies ([`walk`]) finds everything; only the blocks holding a chain,
//! an access, a shadowed definition or a call that passes shadows are rebuilt, the others stay
//! as they are.
use crate::builder::{cap, deco, model, sc, Builder, Emitter};
use crate::byte_address::{AccessShape, AliasKind, AliasViews, Backend, Robustness, SharedBase};
use crate::error::RewriteError;
use crate::ops;
use crate::module::{op, Function, Inst, Module};
use crate::stats::Stats;
use crate::target::Options;

mod chains;
mod cleanup;
pub(crate) mod control_flow;
mod physical;
mod shadows;
mod walk;

use super::util::{forget_ids, pointer_operand_positions, split_memory_operands, ListMap, MEM_ALIGNED};
use chains::{describe, Chain};
use control_flow::{legalize_split, split_loop_header, waterfall_length};
use physical::physical_address;
use shadows::{check_block, pointer_of, reusable_word_block, shadow_ty, views_of, Shadows};
use walk::{Loc, Walk, PARAM};

const CAP_RAW_ACCESS_CHAINS: u32 = 5414;
const CAP_UNIFORM_16: u32 = 4434;
const CAP_UNIFORM_8: u32 = 4449;
/// Raw Access Chain Operands (SPV_NV_raw_access_chains "Raw Access Chain Operands").
const ROBUST_PER_COMPONENT: u32 = 0x1;
const ROBUST_PER_ELEMENT: u32 = 0x2;

pub fn run(m: &mut Module, options: &Options, stats: &mut Stats) -> Result<(), RewriteError> {
    let mut functions = std::mem::take(&mut m.functions);
    let views = stats.alias_variables;
    let result = lower(m, &mut functions, options, stats);
    m.functions = functions;
    // The backend's shared edge functions, after the module's own.
    m.functions.extend(result?);
    // A buffer read only through new views is dead now (a reused word view keeps it alive).
    if stats.alias_variables > views {
        cleanup::sweep_if_unused(m);
    }
    Ok(())
}

/// Is `ptr_ty` a pointer to a struct (one block, not a descriptor array of them)?
fn points_to_struct(b: &Builder, ptr_ty: u32) -> bool {
    b.pointer(ptr_ty).is_some_and(|(_, p)| b.global(p).is_some_and(|t| t.op == op::TYPE_STRUCT))
}

/// A counted chain's base: root variable, descriptor-array indices, their types.
type BaseOrigin = (u32, Vec<u32>, Vec<u32>);

/// The views of a counted chain's base as [`SharedBase`] (from `bases`: root variable,
/// descriptor-array indices and their types), for the backend's shared edge functions.
fn shared_base(backend: &Backend, shadow: &Shadows, base: &Option<BaseOrigin>, storage: u32) -> Result<Option<SharedBase>, RewriteError> {
    let Some((root, indices, tys)) = base else { return Ok(None) };
    Ok(Some(SharedBase { vars: shadow.all(*root, views_of(backend, storage, *root)?)?.to_vec(), indices: indices.clone(), index_tys: tys.clone() }))
}

/// Accesses whose checks the driver's robustBufferAccess2 makes exactly
/// ([`Options::component_bounds_by_driver`]) become unchecked ones: one scalar access per
/// component, no length, no comparison, no branch. They are per-component accesses made of one
/// scalar access per component ([`AccessShape::components_checked_by_driver`]), and
/// per-element accesses of one scalar that is the whole element, at Offset 0
/// ([`AccessShape::element_is_its_scalar`]: the element lies in the range exactly when the
/// scalar does; a nonzero Offset could wrap the address past 2^32 apart from the element's).
/// Only where the chain's Base points at one block (a Base that is a whole descriptor array
/// names no range, and keeps the lowering's refusal) and cannot be null (`may_be_null`, by chain).
fn leave_component_checks_to_driver(b: &Builder, walk: &mut Walk, may_be_null: &[bool], options: &Options, stats: &mut Stats) {
    let one_block: Vec<bool> = walk
        .chains
        .iter()
        .map(|c| points_to_struct(b, walk.type_of(b, c.base)))
        .collect();
    let offset_zero: Vec<bool> = walk.chains.iter().map(|c| b.const_value(c.offset) == Some(0)).collect();
    // Index of each shape's unchecked twin, made on first use.
    let mut twin: Vec<Option<u32>> = vec![None; walk.shapes.len()];
    for a in walk.accesses.iter_mut() {
        let shape = &walk.shapes[a.shape as usize];
        let c = a.chain as usize;
        let by_driver = shape.components_checked_by_driver(&options.target) || (offset_zero[c] && shape.element_is_its_scalar(&options.target));
        if !one_block[c] || may_be_null[c] || !by_driver {
            continue;
        }
        let unchecked = AccessShape { robustness: Robustness::ComponentsByDriver, ..shape.clone() };
        a.shape = *twin[a.shape as usize].get_or_insert_with(|| match walk.shapes.iter().position(|s| *s == unchecked) {
            Some(i) => i as u32,
            None => {
                walk.shapes.push(unchecked);
                walk.shapes.len() as u32 - 1
            }
        });
        stats.raw_chain_bounds_by_driver += 1;
    }
}

/// The pointers that reach a chain's Base, traced back to the variables (or null pointers)
/// they come from.
struct Trace {
    /// In discovery order (deterministic).
    shadowed: Vec<u32>,
    /// Dense flag per id.
    is_shadowed: Vec<bool>,
    roots: Vec<u32>,
    nulls: Vec<u32>,
}

impl Trace {
    fn has(&self, id: u32) -> bool {
        self.is_shadowed.get(id as usize).copied().unwrap_or(false)
    }
}

fn lower(m: &mut Module, functions: &mut [Function], options: &Options, stats: &mut Stats) -> Result<Vec<Function>, RewriteError> {
    let vulkan_mm = m.memory_model.first().map(|i| i.ops.get(1) == Some(&model::MEMORY_MODEL_VULKAN)).unwrap_or(false);
    let mut b = Builder::new(m);

    // 1. The chains and the loads/stores through them.
    let mut walk = Walk::new(&b, functions)?;

    // 2. Which pointer ids need shadows: chain bases, followed back to their variables.
    let trace = trace_bases(&b, functions, &walk)?;
    // Accesses whose Base points straight at a descriptor (a variable or a descriptor-array
    // element) count view elements for their checks (Backend::emit_counted); those through
    // selected, phi'd, copied or passed pointers take a byte length that follows the pointer, and
    // so do NonUniform descriptor-array elements on drivers with the array-length quirk (their
    // length comes from a waterfall loop).
    // (A Base pointing at a whole descriptor array selects no buffer to count: such robust
    // chains take the byte-length path, which refuses them precisely.)
    let quirk = options.target.nonuniform_array_length_broken;
    let direct = |b: &Builder, id: u32| {
        b.global(id).is_some_and(|g| g.op == op::VARIABLE && points_to_struct(b, g.ty))
            || walk.def(id).is_some_and(|l| {
                let inst = l.inst(functions);
                l.b != PARAM
                    && matches!(inst.op, op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN)
                    && points_to_struct(b, inst.ty)
                    && !(quirk && inst.ops.len() == 2 && (b.has_decoration(id, deco::NON_UNIFORM) || b.has_decoration(inst.ops[1], deco::NON_UNIFORM)))
            })
    };
    let counted: Vec<bool> = walk.chains.iter().map(|c| !c.physical() && direct(&b, c.base)).collect();
    if options.component_bounds_by_driver() {
        // A Base that may be a null pointer (one reaches some chain through a select or phi)
        // keeps the lowering's checks: its range is empty, and an access through a null
        // pointer is undefined whatever the robustness. A Base straight at a descriptor never is.
        let may_be_null: Vec<bool> = counted.iter().map(|&direct| !direct && !trace.nulls.is_empty()).collect();
        leave_component_checks_to_driver(&b, &mut walk, &may_be_null, options, stats);
    }
    // Where a counted chain's view pointers come from (root variable, descriptor-array indices
    // and their types): the backend rebuilds them in the function it shares the chain's
    // per-component edge paths through (Backend::emit_counted).
    let bases: Vec<Option<BaseOrigin>> = walk
        .chains
        .iter()
        .zip(&counted)
        .map(|(c, &is)| {
            if !is {
                return None;
            }
            let (root, indices) = if b.global(c.base).is_some() {
                (c.base, vec![])
            } else {
                let inst = walk.def(c.base)?.inst(functions);
                (*inst.ops.first()?, inst.ops[1..].to_vec())
            };
            let tys: Vec<u32> = indices.iter().map(|&i| walk.type_of(&b, i)).collect();
            (b.global(root).is_some_and(|g| g.op == op::VARIABLE) && !tys.contains(&0)).then_some((root, indices, tys))
        })
        .collect();

    // 3. Alias views per storage class, from what every access needs. A storage class whose
    //    roots all are the same `struct { uint data[]; }` block uses them as its word view.
    let mut backend = Backend::new(options.target, options.oob_poison, vulkan_mm);
    let mut kinds_by_sc: Vec<(u32, Vec<AliasKind>)> = vec![];
    let mut add_kind = |storage: u32, k: AliasKind| match kinds_by_sc.iter_mut().find(|(s, _)| *s == storage) {
        Some((_, v)) => {
            if !v.contains(&k) {
                v.push(k)
            }
        }
        None => kinds_by_sc.push((storage, vec![k])),
    };
    for chain in walk.chains.iter().filter(|c| !c.physical()) {
        add_kind(chain.storage, AliasKind::U32);
    }
    for a in &walk.accesses {
        let shape = &walk.shapes[a.shape as usize];
        let mut mask = shape.view_mask(&options.target);
        // The edge path of a vector of 64-bit components leaves each component's check to the
        // driver through the uint64_t view (Backend::edge_checked_by_driver).
        if options.component_bounds_by_driver() && shape.value.width == 64 && shape.components_are_scalar(&options.target) {
            mask |= 1 << AliasKind::U64 as usize;
        }
        if !counted[a.chain as usize] && shape.needs_byte_length() && AliasKind::U8.available(&options.target, shape.storage) {
            mask |= 1 << AliasKind::U8 as usize; // the exact byte length for a byte-length check
        }
        for k in AliasKind::EVERY.into_iter().filter(|&k| mask & (1 << k as usize) != 0) {
            add_kind(shape.storage, k);
        }
    }
    kinds_by_sc.sort();
    let mut reused: Vec<u32> = vec![]; // storage classes whose word view is the roots' own block
    for (storage, kinds) in kinds_by_sc.iter_mut() {
        kinds.sort();
        let storage = *storage;
        let blocks: Vec<Option<u32>> = trace
            .roots
            .iter()
            .filter(|&&r| b.global(r).and_then(|g| b.pointer(g.ty)).is_some_and(|(s, _)| s == storage))
            .map(|&r| reusable_word_block(&b, r))
            .collect();
        let existing: Vec<(AliasKind, u32)> = match blocks.first() {
            Some(&Some(block)) if blocks.iter().all(|x| *x == Some(block)) => {
                reused.push(storage);
                vec![(AliasKind::U32, block)]
            }
            _ => vec![],
        };
        let views = AliasViews::new_with(&mut b, storage, kinds.clone(), &existing);
        backend.views.insert(storage, views);
        for k in kinds.iter() {
            match (k, storage == sc::UNIFORM) {
                (AliasKind::U8, false) => add_cap(&mut b, cap::STORAGE_BUFFER_8, "SPV_KHR_8bit_storage"),
                (AliasKind::U8, true) => add_cap(&mut b, CAP_UNIFORM_8, "SPV_KHR_8bit_storage"),
                (AliasKind::U16, false) => add_cap(&mut b, cap::STORAGE_BUFFER_16, "SPV_KHR_16bit_storage"),
                (AliasKind::U16, true) => add_cap(&mut b, CAP_UNIFORM_16, "SPV_KHR_16bit_storage"),
                (AliasKind::U64 | AliasKind::U64x2, _) => b.m.add_capability(cap::INT64),
                _ => {}
            }
        }
        // Checks rounded to whole words: 8/16-bit ones without the 8/16-bit view that counts
        // them (element counts) or the 8-bit view that gives the byte length.
        let rounded = walk.accesses.iter().any(|a| {
            let shape = &walk.shapes[a.shape as usize];
            shape.storage == storage
                && if counted[a.chain as usize] { !shape.counted_exact(&options.target) } else { shape.needs_byte_length() && !kinds.contains(&AliasKind::U8) }
        });
        stats.word_granular_bounds |= rounded;
    }
    // Views that get shadow pointers (the reused word view is the pointer itself).
    let shadow_kinds = |backend: &Backend, storage: u32, id: u32| -> Result<Vec<AliasKind>, RewriteError> {
        let kinds = &views_of(backend, storage, id)?.kinds;
        Ok(kinds.iter().copied().filter(|&k| !(k == AliasKind::U32 && reused.contains(&storage))).collect())
    };

    // 4. Shadow ids for every shadowed pointer.
    let mut shadow = Shadows(ListMap::default());
    let mut shadow_ty_cache: ListMap<(u32, AliasKind), u32> = ListMap::default();
    for &id in &trace.shadowed {
        let ty = walk.type_of(&b, id);
        let (storage, _) = b.pointer(ty).ok_or_else(|| RewriteError::unsupported(format!("%{id}"), "raw access chain base is not a pointer"))?;
        let views = backend.views.get(&storage).ok_or_else(|| RewriteError::unsupported(format!("%{id}"), "base pointer storage class differs from the chain's"))?;
        if reused.contains(&storage) {
            shadow.0.insert((id, AliasKind::U32), id);
            shadow_ty_cache.insert((ty, AliasKind::U32), ty);
        }
        for k in views.kinds.clone() {
            if !shadow.0.contains_key(&(id, k)) {
                let sid = b.id();
                shadow.0 .0.push(((id, k), sid));
            }
            shadow_ty(&mut b, &backend, &mut shadow_ty_cache, ty, k, id)?;
        }
    }
    // Byte lengths of the bound ranges, for robust accesses. OpArrayLength cannot take a
    // variable pointer (spirv-val), so a length is taken where the pointer is still a variable
    // or descriptor-array chain and then follows the pointer through OpSelect/OpPhi/OpCopyObject
    // and function parameters as a u32 "length shadow".
    let need_len = walk.accesses.iter().any(|a| walk.shapes[a.shape as usize].checked() && !counted[a.chain as usize]);
    let mut len_shadow: ListMap<u32, u32> = ListMap::default();
    if need_len {
        for &id in trace.shadowed.iter().filter(|id| !trace.roots.contains(id) && !trace.nulls.contains(id)) {
            len_shadow.insert(id, b.id());
        }
    }

    // 5. Alias variables for the roots.
    let interface_lists_all = b.m.version() >= (1, 4);
    let chain_decos: Vec<u32> = if vulkan_mm {
        vec![]
    } else {
        let mut d: Vec<u32> = b
            .m
            .annotations
            .iter()
            .filter(|a| a.op == op::DECORATE && a.ops.len() >= 2 && walk.chain_index(a.ops[0]).is_some())
            .map(|a| a.ops[1])
            .filter(|d| *d == deco::COHERENT || *d == deco::VOLATILE)
            .collect();
        d.sort();
        d.dedup();
        d
    };
    for &root in &trace.roots {
        let var = b.global(root).cloned().expect("roots are globals");
        let (storage, pointee) = pointer_of(&b, var.ty, root)?;
        check_block(&b, pointee, storage, root)?;
        let decos = b.m.decorations_of(root);
        if reused.contains(&storage) {
            // The root is its own word view: it takes the chains' memory qualifiers too.
            for &d in &chain_decos {
                if !decos.iter().any(|(x, _)| *x == d) {
                    b.decorate(root, d, &[]);
                }
            }
        }
        for k in shadow_kinds(&backend, storage, root)? {
            let sid = shadow.get(root, k)?;
            let sty = shadow_ty(&mut b, &backend, &mut shadow_ty_cache, var.ty, k, root)?;
            b.add_global(Inst::new(op::VARIABLE, sty, sid, ops![storage]));
            for (d, lits) in &decos {
                // Same descriptor; memory qualifiers that only strengthen are kept. Restrict
                // cannot hold for an alias (SPIR-V spec 2.18.2), Aliased is added below.
                if matches!(*d, deco::DESCRIPTOR_SET | deco::BINDING | deco::COHERENT | deco::VOLATILE | deco::NON_WRITABLE | deco::NON_READABLE) {
                    b.decorate(sid, *d, lits);
                }
            }
            for &d in &chain_decos {
                if !decos.iter().any(|(x, _)| *x == d) {
                    b.decorate(sid, d, &[]);
                }
            }
            b.decorate(sid, deco::ALIASED, &[]);
            stats.alias_variables += 1;
            // SPIR-V ≥ 1.4: the interface lists every global variable an entry point uses.
            if interface_lists_all {
                for ep in b.m.entry_points.iter_mut() {
                    if ep.ops.contains(&root) && !ep.ops.contains(&sid) {
                        ep.ops.push(sid);
                    }
                }
            }
        }
    }
    for &null in &trace.nulls {
        let ty = walk.type_of(&b, null);
        let (storage, _) = pointer_of(&b, ty, null)?;
        for k in shadow_kinds(&backend, storage, null)? {
            let sty = shadow_ty(&mut b, &backend, &mut shadow_ty_cache, ty, k, null)?;
            let sid = shadow.get(null, k)?;
            b.add_global(Inst::new(op::CONSTANT_NULL, sty, sid, ops![]));
        }
    }

    // 6. Function parameters that carry shadows get one extra parameter per view.
    let mut extra_params: Vec<(usize, usize, Vec<Inst>)> = vec![];
    for &id in &trace.shadowed {
        let Some(loc) = walk.def(id).filter(|l| l.b == PARAM) else { continue };
        let ty = walk.type_of(&b, id);
        let (storage, _) = pointer_of(&b, ty, id)?;
        let mut ps = vec![];
        for k in shadow_kinds(&backend, storage, id)? {
            let sty = shadow_ty(&mut b, &backend, &mut shadow_ty_cache, ty, k, id)?;
            ps.push(Inst::new(op::FUNCTION_PARAMETER, sty, shadow.get(id, k)?, ops![]));
        }
        if let Some(&l) = len_shadow.get(&id) {
            let u32t = b.t_u32();
            ps.push(Inst::new(op::FUNCTION_PARAMETER, u32t, l, ops![]));
        }
        extra_params.push((loc.f as usize, loc.i as usize, ps));
    }
    extra_params.sort_by_key(|(f, p, _)| (*f, *p));
    let mut shadowed_params: ListMap<u32, Vec<usize>> = ListMap::default();
    for (fi, p, ps) in &extra_params {
        let callee = functions[*fi].def.id;
        match shadowed_params.get_mut(&callee) {
            Some(v) => v.push(*p),
            None => shadowed_params.0.push((callee, vec![*p])),
        }
        functions[*fi].params.extend(ps.iter().cloned());
    }
    for fi in extra_params.iter().map(|(f, _, _)| *f).collect::<std::collections::BTreeSet<_>>() {
        let f = &mut functions[fi];
        let param_tys: Vec<u32> = f.params.iter().map(|p| p.ty).collect();
        let fn_ty = b.t_fn(f.def.ty, &param_tys);
        f.def.ops[1] = fn_ty;
    }

    // 7. Blocks to rebuild, besides those with chains and accesses: shadowed definitions and
    //    calls that pass shadows.
    for &id in &trace.shadowed {
        if let Some(loc) = walk.def(id) {
            walk.mark(loc);
        }
    }
    for i in 0..walk.calls.len() {
        let call = walk.calls[i];
        if call.inst(functions).ops.first().is_some_and(|f| shadowed_params.contains_key(f)) {
            walk.mark(call);
        }
    }

    // Lengths of NonUniform descriptor-array elements on drivers with the array-length quirk.
    let waterfall = |b: &Builder, id: u32, ops: &[u32]| -> bool {
        quirk && ops.len() == 2 && (b.has_decoration(id, deco::NON_UNIFORM) || b.has_decoration(ops[1], deco::NON_UNIFORM))
    };

    // Edge paths the counted accesses could share (see Backend::count_edge).
    for a in &walk.accesses {
        let shape = &walk.shapes[a.shape as usize];
        if !backend.shares_edge(shape) {
            continue;
        }
        if let Some(base) = shared_base(&backend, &shadow, &bases[a.chain as usize], shape.storage)? {
            backend.count_edge(shape, &base);
        }
    }

    // 8. Rewrite bodies. Bounds checks split blocks: the first part keeps the label, the last
    //    part (with the original terminator) gets a new one, and OpPhi parents are renamed.
    let u32t = b.t_u32();
    let zero = b.c_u32(0);
    // The byte address and element offset of each (non-physical) chain, by chain index.
    let mut addr_of: Vec<(u32, u32)> = vec![(0, 0); walk.chains.len()];
    let mut gone: Vec<u32> = vec![];
    // The byte addresses made here (products and sums), for the sweep of unread values.
    let mut made_addrs: Vec<u32> = vec![];
    let mut next_access = 0usize;
    // Chains with a checked access (its checks branch).
    let mut checked = vec![false; walk.chains.len()];
    for a in &walk.accesses {
        checked[a.chain as usize] |= walk.shapes[a.shape as usize].checked();
    }
    let mut carry_ty = None;
    let first_new_id = b.m.header[3];
    // One emitter for every block rewritten (its tables keep their allocations).
    let mut e = Emitter::new(0);
    for (fi, f) in functions.iter_mut().enumerate() {
        if !(0..f.blocks.len()).any(|bi| walk.is_marked(fi, bi)) {
            continue;
        }
        // Lengths of root variables (single blocks) are taken once per function, at the top of
        // its entry block (after its OpVariables, which must come first: SPIR-V spec 2.4),
        // the first time an access needs one.
        let mut root_len: Vec<(u32, u32)> = trace.nulls.iter().map(|&n| (n, zero)).collect();
        let mut entry_lens: Vec<Inst> = vec![];
        backend.begin_function([]);
        let mut relabel: ListMap<u32, u32> = ListMap::default();
        let old_blocks = std::mem::take(&mut f.blocks);
        let mut new_blocks = Vec::with_capacity(old_blocks.len() + 8);
        for (bi, blk) in old_blocks.into_iter().enumerate() {
            if !walk.is_marked(fi, bi) {
                new_blocks.push(blk);
                continue;
            }
            // Room for the block and what its accesses expand into.
            e.start(blk.label, blk.insts.len() * 4);
            let mut insts = blk.insts;
            let branches = insts.iter().any(|i| len_shadow.contains_key(&i.id) && waterfall(&b, i.id, &i.ops))
                || insts.iter().any(|i| {
                    matches!(i.op, op::LOAD | op::STORE) && i.ops.first().and_then(|&p| walk.chain_index(p)).is_some_and(|c| checked[c])
                });
            if branches {
                if let Some(lm) = insts.iter().position(|i| i.op == op::LOOP_MERGE) {
                    insts = split_loop_header(&mut e, &mut b, insts, lm)?;
                }
            }
            for inst in insts {
                let chain = if inst.op == op::RAW_ACCESS_CHAIN_NV { walk.chain_index(inst.id) } else { None };
                let through = match inst.op {
                    op::LOAD | op::STORE => inst.ops.first().and_then(|&p| walk.chain_index(p)).filter(|&c| !walk.chains[c].physical()),
                    _ => None,
                };
                if let Some(c) = chain {
                    let chain = &walk.chains[c];
                    // Offset + Stride × Index, wrapping; constant zeros and ones folded.
                    let offset_zero = b.const_value(chain.offset) == Some(0);
                    // With no offset the product is the address: it takes the chain's id.
                    let named = if offset_zero && !chain.physical() { inst.id } else { 0 };
                    let scaled = match (chain.stride, b.const_value(chain.index)) {
                        (0, _) | (_, Some(0)) => zero,
                        (1, _) => chain.index,
                        (s, _) => {
                            let stride = b.c_u32(s);
                            e.pure_as(&mut b, op::I_MUL, u32t, &[stride, chain.index], named)
                        }
                    };
                    if chain.physical() {
                        let addr = if offset_zero { scaled } else if scaled == zero { chain.offset } else { e.pure(&mut b, op::I_ADD, u32t, &[chain.offset, scaled]) };
                        physical_address(&mut e, &mut b, chain, addr, inst.id, &mut carry_ty);
                        stats.raw_chains_physical += 1;
                    } else {
                        // The chain's id names its byte address where that is a new value.
                        let addr = if offset_zero {
                            scaled
                        } else if scaled == zero {
                            chain.offset
                        } else {
                            e.pure_as(&mut b, op::I_ADD, u32t, &[chain.offset, scaled], inst.id)
                        };
                        if addr != inst.id {
                            gone.push(inst.id);
                        }
                        // What the views' element indices are made from (Ctx::element_index).
                        if let (s @ 1.., Some(Ok(o)), false) = (chain.stride, b.const_value(chain.offset).map(u32::try_from), scaled == zero) {
                            backend.note_address(addr, chain.index, s, o);
                            backend.note_address(scaled, chain.index, s, 0);
                        }
                        made_addrs.extend([addr, scaled].into_iter().filter(|&v| v != chain.index && v != chain.offset && v != zero));
                        addr_of[c] = (addr, scaled);
                    }
                    match chain.robustness {
                        Robustness::PerComponent | Robustness::ComponentsByDriver => stats.raw_chains_per_component += 1,
                        Robustness::PerElement { .. } => stats.raw_chains_per_element += 1,
                        Robustness::None => {}
                    }
                    stats.raw_chains += 1;
                } else if let Some(c) = through {
                    let access = walk.accesses[next_access];
                    next_access += 1;
                    debug_assert_eq!(access.chain as usize, c);
                    let shape = &walk.shapes[access.shape as usize];
                    let chain = &walk.chains[c];
                    let (addr, elem) = addr_of[c];
                    if addr == 0 {
                        return Err(RewriteError::malformed(0, format!("{} comes before its OpRawAccessChainNV", describe(&inst))));
                    }
                    let view_ptrs = shadow.all(chain.base, views_of(&backend, shape.storage, chain.base)?)?;
                    if counted[c] {
                        let shared = if backend.shares_edge(shape) { shared_base(&backend, &shadow, &bases[c], shape.storage)? } else { None };
                        if inst.op == op::STORE {
                            backend.emit_counted(&mut e, &mut b, shape, &view_ptrs, addr, Some(elem), Some(inst.ops[1]), None, shared.as_ref());
                            stats.stores += 1;
                        } else {
                            backend.emit_counted(&mut e, &mut b, shape, &view_ptrs, addr, Some(elem), None, Some(inst.id), shared.as_ref());
                            stats.loads += 1;
                        }
                        continue;
                    }
                    let len = if shape.checked() {
                        Some(length(&mut b, &backend, &shadow, &trace, &mut root_len, &mut entry_lens, &len_shadow, chain.base, shape.storage)?)
                    } else {
                        None
                    };
                    if let Some(&l) = len.as_ref().filter(|l| entry_lens.iter().any(|i| i.id == **l)) {
                        backend.add_entry_len(l);
                    }
                    if inst.op == op::STORE {
                        backend.emit(&mut e, &mut b, shape, &view_ptrs, addr, len, Some(elem), Some(inst.ops[1]));
                        stats.stores += 1;
                    } else {
                        backend.emit_as(&mut e, &mut b, shape, &view_ptrs, addr, len, Some(elem), None, Some(inst.id));
                        stats.loads += 1;
                    }
                } else if inst.op == op::FUNCTION_CALL && inst.ops.first().is_some_and(|f| shadowed_params.contains_key(f)) {
                    let mut inst = inst;
                    let mut extra: Vec<u32> = vec![];
                    for &p in shadowed_params.get(&inst.ops[0]).expect("checked above") {
                        let arg = *inst.ops.get(1 + p).ok_or_else(|| RewriteError::malformed(0, format!("call of %{} has too few arguments", inst.ops[0])))?;
                        let (storage, _) = pointer_of(&b, walk.type_of(&b, arg), arg)?;
                        for k in shadow_kinds(&backend, storage, arg)? {
                            extra.push(shadow.get(arg, k)?);
                        }
                        if need_len {
                            extra.push(length(&mut b, &backend, &shadow, &trace, &mut root_len, &mut entry_lens, &len_shadow, arg, storage)?);
                        }
                    }
                    inst.ops.extend(extra);
                    e.push(inst);
                } else if inst.id != 0 && trace.has(inst.id) {
                    let (id, opcode, ops) = (inst.id, inst.op, inst.ops.clone());
                    e.push(inst);
                    let ty = walk.type_of(&b, id);
                    let (storage, _) = pointer_of(&b, ty, id)?;
                    let nonuniform = b.has_decoration(id, deco::NON_UNIFORM);
                    for k in shadow_kinds(&backend, storage, id)? {
                        let sty = shadow_ty(&mut b, &backend, &mut shadow_ty_cache, ty, k, id)?;
                        let sid = shadow.get(id, k)?;
                        let sops: Vec<u32> = match opcode {
                            op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN => {
                                let mut v = vec![shadow.get(ops[0], k)?];
                                v.extend_from_slice(&ops[1..]);
                                v
                            }
                            op::COPY_OBJECT => vec![shadow.get(ops[0], k)?],
                            op::SELECT => vec![ops[0], shadow.get(ops[1], k)?, shadow.get(ops[2], k)?],
                            op::PHI => ops.chunks(2).map(|pair| Ok([shadow.get(pair[0], k)?, pair[1]])).collect::<Result<Vec<_>, RewriteError>>()?.concat(),
                            _ => unreachable!("shadow sources were checked by the trace"),
                        };
                        if nonuniform {
                            b.decorate(sid, deco::NON_UNIFORM, &[]);
                        }
                        e.push(Inst::new(opcode, sty, sid, sops));
                    }
                    if let Some(&l) = len_shadow.get(&id) {
                        let lops: Vec<u32> = match opcode {
                            op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN => {
                                let k = backend.length_view(storage);
                                let len = if waterfall(&b, id, &ops) {
                                    let array = shadow.get(ops[0], k)?;
                                    let elem_ty = shadow_ty(&mut b, &backend, &mut shadow_ty_cache, ty, k, id)?;
                                    waterfall_length(&mut e, &mut b, &backend, k, array, elem_ty, ops[1])
                                } else {
                                    let ptr = shadow.get(id, k)?;
                                    backend.length_of_view(&mut e, &mut b, k, ptr)
                                };
                                if e.rename_last(len, l) {
                                    continue;
                                }
                                vec![len]
                            }
                            op::COPY_OBJECT => vec![length(&mut b, &backend, &shadow, &trace, &mut root_len, &mut entry_lens, &len_shadow, ops[0], storage)?],
                            op::SELECT => {
                                let (x, y) = (ops[1], ops[2]);
                                let lx = length(&mut b, &backend, &shadow, &trace, &mut root_len, &mut entry_lens, &len_shadow, x, storage)?;
                                let ly = length(&mut b, &backend, &shadow, &trace, &mut root_len, &mut entry_lens, &len_shadow, y, storage)?;
                                vec![ops[0], lx, ly]
                            }
                            op::PHI => {
                                let mut v = vec![];
                                for pair in ops.chunks(2) {
                                    v.push(length(&mut b, &backend, &shadow, &trace, &mut root_len, &mut entry_lens, &len_shadow, pair[0], storage)?);
                                    v.push(pair[1]);
                                }
                                v
                            }
                            _ => unreachable!("shadow sources were checked by the trace"),
                        };
                        let lop = if opcode == op::ACCESS_CHAIN || opcode == op::IN_BOUNDS_ACCESS_CHAIN { op::COPY_OBJECT } else { opcode };
                        e.push(Inst::new(lop, u32t, l, lops));
                    }
                } else {
                    e.push(inst);
                }
            }
            let mut pieces = e.take_blocks(0, 0);
            if pieces.len() > 1 {
                legalize_split(&mut b, &mut pieces, |b: &Builder, id: u32| walk.type_of(b, id));
                // Successors' OpPhis now come from the last piece.
                relabel.insert(blk.label, pieces[pieces.len() - 1].label);
            }
            new_blocks.extend(pieces);
        }
        // Only the function's own OpPhis (in blocks that kept an original label): the backend's
        // OpPhis may name an original label as the parent that really branches to them.
        if !relabel.is_empty() {
            for blk in new_blocks.iter_mut().filter(|blk| blk.label < first_new_id) {
                for inst in blk.insts.iter_mut().take_while(|i| i.op == op::PHI) {
                    for parent in inst.ops.iter_mut().skip(1).step_by(2) {
                        if let Some(&l) = relabel.get(parent) {
                            *parent = l;
                        }
                    }
                }
            }
        }
        // Root lengths, then the bounds limits computed on them, at the top of the entry block
        // (its first part keeps its label and leading instructions).
        entry_lens.extend(backend.take_entry_insts());
        if !entry_lens.is_empty() {
            let entry = &mut new_blocks[0].insts;
            let at = entry.iter().take_while(|i| i.op == op::VARIABLE || i.op == op::LINE || i.op == op::NO_LINE).count();
            entry.splice(at..at, entry_lens);
        }
        f.blocks = new_blocks;
    }

    // 9. Clean up: shadows nothing reads, the capability, the extension, and names/decorations
    //    of removed pointers
    //    (a chain's id now names a u32 byte address, or nothing: memory decorations no longer
    //    apply).
    gone.extend(shadows::drop_unread(functions, &shadow, &made_addrs, b.m.header[3]));
    b.m.remove_capability(CAP_RAW_ACCESS_CHAINS);
    b.m.remove_extension("SPV_NV_raw_access_chains");
    b.m.annotations.retain(|a| {
        let Some(c) = (a.op == op::DECORATE).then(|| a.ops.first().and_then(|&id| walk.chain_index(id))).flatten() else { return true };
        walk.chains[c].physical() && a.ops[1] == deco::NON_UNIFORM
    });
    if !gone.is_empty() {
        forget_ids(b.m, &gone.into_iter().collect());
    }
    stats.atomic_subword_stores += backend.atomic_subword_stores;
    Ok(backend.take_functions())
}

/// The byte length of the range behind shadowed pointer `id`: a root's, taken at the top of
/// the function's entry block on first use; a null pointer's, 0; otherwise its length shadow.
#[allow(clippy::too_many_arguments)]
fn length(
    b: &mut Builder,
    backend: &Backend,
    shadow: &Shadows,
    trace: &Trace,
    root_len: &mut Vec<(u32, u32)>,
    entry_lens: &mut Vec<Inst>,
    len_shadow: &ListMap<u32, u32>,
    id: u32,
    storage: u32,
) -> Result<u32, RewriteError> {
    if let Some(&(_, l)) = root_len.iter().find(|(r, _)| *r == id) {
        return Ok(l);
    }
    if let Some(&l) = len_shadow.get(&id) {
        return Ok(l);
    }
    let is_struct_root = trace.roots.contains(&id) && b.global(id).is_some_and(|g| points_to_struct(b, g.ty));
    if !is_struct_root {
        return Err(RewriteError::unsupported(format!("%{id}"), "robust raw access chain on a whole descriptor array (Base must select one buffer)"));
    }
    let kind = backend.length_view(storage);
    let ptr = shadow.get(id, kind)?;
    let mut e = Emitter::new(0);
    let len = backend.length_of_view(&mut e, b, kind, ptr);
    entry_lens.extend(e.take_insts());
    root_len.push((id, len));
    Ok(len)
}

/// Follows every non-physical chain's Base back to the variables (and null pointers) it comes
/// from, through descriptor-array access chains, copies, selects, phis and function parameters.
fn trace_bases(b: &Builder, functions: &[Function], walk: &Walk) -> Result<Trace, RewriteError> {
    let bound = b.m.header[3] as usize;
    let mut t = Trace { shadowed: vec![], is_shadowed: vec![false; bound], roots: vec![], nulls: vec![] };
    let mut work: Vec<u32> = walk.chains.iter().filter(|c| !c.physical()).map(|c| c.base).collect();
    work.reverse();
    // Calls per function id, built when a parameter is first traced.
    let mut callers: Option<ListMap<u32, Vec<Loc>>> = None;
    while let Some(id) = work.pop() {
        match t.is_shadowed.get_mut(id as usize) {
            Some(seen) if !*seen => *seen = true,
            Some(_) => continue,
            None => return Err(RewriteError::malformed(0, format!("%{id} is outside the id bound"))),
        }
        t.shadowed.push(id);
        if let Some(g) = b.global(id) {
            match g.op {
                op::VARIABLE => t.roots.push(id),
                // A null pointer (variable pointers may select one): its shadows are null too,
                // and its range is empty.
                op::CONSTANT_NULL => t.nulls.push(id),
                _ => return Err(RewriteError::unsupported(format!("%{id}"), "raw access chain base is a global that is neither a variable nor a null pointer")),
            };
            continue;
        }
        let loc = walk.def(id).ok_or_else(|| RewriteError::unsupported(format!("%{id}"), "raw access chain base is never defined"))?;
        let inst = loc.inst(functions);
        let short = |n: usize| inst.ops.len() < n || (inst.op == op::PHI && !inst.ops.len().is_multiple_of(2));
        if inst.op != op::FUNCTION_PARAMETER && short(match inst.op { op::SELECT => 3, _ => 1 }) {
            return Err(RewriteError::malformed(0, format!("%{id} = opcode {} has too few operands", inst.op)));
        }
        match (loc.b, inst.op) {
            (PARAM, _) => {
                let callers = callers.get_or_insert_with(|| {
                    let mut map: ListMap<u32, Vec<Loc>> = ListMap::default();
                    for &c in &walk.calls {
                        if let Some(&callee) = c.inst(functions).ops.first() {
                            match map.get_mut(&callee) {
                                Some(v) => v.push(c),
                                None => map.0.push((callee, vec![c])),
                            }
                        }
                    }
                    map
                });
                let callee = functions[loc.f as usize].def.id;
                for c in callers.get(&callee).map(|v| v.as_slice()).unwrap_or(&[]) {
                    let call = c.inst(functions);
                    let arg = *call.ops.get(1 + loc.i as usize).ok_or_else(|| RewriteError::malformed(0, format!("call of %{} has too few arguments", call.ops[0])))?;
                    work.push(arg);
                }
            }
            (_, op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN) => {
                if inst.ops.len() > 2 {
                    return Err(RewriteError::unsupported(
                        describe(inst) + " (OpAccessChain)",
                        "a raw access chain base may index only the descriptor array, not into a block",
                    ));
                }
                work.push(inst.ops[0]);
            }
            (_, op::COPY_OBJECT) => work.push(inst.ops[0]),
            (_, op::SELECT) => work.extend([inst.ops[1], inst.ops[2]]),
            (_, op::PHI) => work.extend(inst.ops.iter().step_by(2).copied()),
            _ => {
                return Err(RewriteError::unsupported(
                    format!("%{id} = opcode {}", inst.op),
                    "raw access chain base comes from an instruction the lowering cannot follow (supported: variables, descriptor-array access chains, OpCopyObject, OpSelect, OpPhi, function parameters)",
                ))
            }
        }
    }
    Ok(t)
}

fn add_cap(b: &mut Builder, cap: u32, extension: &str) {
    b.m.add_capability(cap);
    b.m.add_extension(extension);
}
