//! Lowers `OpRawAccessChainNV` (SPV_NV_raw_access_chains) to core SPIR-V.
//!
//! - PhysicalStorageBuffer bases: the chain becomes address arithmetic (uvec2 bitcast + add with
//!   carry, so no Int64 is needed); loads/stores through it are untouched and keep `Aligned`.
//! - StorageBuffer / Uniform (BufferBlock) bases: every pointer that reaches a chain's Base gets
//!   "shadow" pointers to alias views of the same descriptor (see `byte_address`), following it
//!   through descriptor-array access chains, OpCopyObject, OpSelect, OpPhi and function
//!   parameters. The chain becomes its byte address; each OpLoad/OpStore through it becomes a call
//!   of a backend helper with the shadows.
//!
//! Byte addresses are `Offset + Stride × Index` in wrapping 32-bit arithmetic: what NVIDIA does
//! and what vkd3d-proton's addressing-wrap tests expect (design.md §2).
use rustc_hash::FxHashMap as HashMap;
use std::collections::{BTreeMap, BTreeSet};

use crate::builder::{deco, sc, Builder, Emitter};
use crate::byte_address::{AccessShape, AliasKind, AliasViews, Backend, Robustness};
use crate::error::RewriteError;
use crate::ops;
use crate::module::{op, Function, Inst, Module};
use crate::stats::Stats;
use crate::target::Options;

mod chains;
pub(crate) mod control_flow;
mod physical;
mod shadows;

use chains::{access_shape, collect_accesses, collect_chains, describe, Chain};
use super::util::{pointer_operands, split_memory_operands, MEM_ALIGNED};
use control_flow::{legalize_split, split_loop_header, waterfall_length};
use physical::physical_address;
use shadows::{check_block, pointer_of, shadow_ty, views_of, Shadows};

const CAP_RAW_ACCESS_CHAINS: u32 = 5414;
const CAP_STORAGE_BUFFER_16: u32 = 4433;
const CAP_UNIFORM_16: u32 = 4434;
const CAP_STORAGE_BUFFER_8: u32 = 4448;
const CAP_UNIFORM_8: u32 = 4449;
const MEMORY_MODEL_VULKAN: u32 = 3;
/// Raw Access Chain Operands (SPV_NV_raw_access_chains "Raw Access Chain Operands").
const ROBUST_PER_COMPONENT: u32 = 0x1;
const ROBUST_PER_ELEMENT: u32 = 0x2;

/// Where a function-local id is defined.
#[derive(Debug, Clone, Copy)]
enum Def {
    Inst { f: usize, b: usize, i: usize },
    Param { f: usize, p: usize },
}

pub fn run(m: &mut Module, options: &Options, stats: &mut Stats) -> Result<(), RewriteError> {
    let mut functions = std::mem::take(&mut m.functions);
    let result = lower(m, &mut functions, options, stats);
    m.functions = functions;
    result
}

fn lower(m: &mut Module, functions: &mut [Function], options: &Options, stats: &mut Stats) -> Result<(), RewriteError> {
    let vulkan_mm = m.memory_model.first().map(|i| i.ops.get(1) == Some(&MEMORY_MODEL_VULKAN)).unwrap_or(false);
    let mut b = Builder::new(m);

    // Definitions and result types of function-local ids (the types stay valid while the
    // bodies are rewritten below; the positions only until then).
    let locals = functions.iter().map(|f| f.params.len() + f.blocks.iter().map(|blk| blk.insts.len()).sum::<usize>()).sum();
    let mut defs: HashMap<u32, Def> = HashMap::with_capacity_and_hasher(locals, Default::default());
    let mut result_types: HashMap<u32, u32> = HashMap::with_capacity_and_hasher(locals, Default::default());
    for (fi, f) in functions.iter().enumerate() {
        for (pi, p) in f.params.iter().enumerate() {
            defs.insert(p.id, Def::Param { f: fi, p: pi });
            result_types.insert(p.id, p.ty);
        }
        for (bi, blk) in f.blocks.iter().enumerate() {
            for (ii, inst) in blk.insts.iter().enumerate() {
                if inst.id != 0 {
                    defs.insert(inst.id, Def::Inst { f: fi, b: bi, i: ii });
                    result_types.insert(inst.id, inst.ty);
                }
            }
        }
    }
    let inst_at = |d: Def| -> &Inst {
        match d {
            Def::Inst { f, b, i } => &functions[f].blocks[b].insts[i],
            Def::Param { f, p } => &functions[f].params[p],
        }
    };

    // 1. The chains, and 2. the loads/stores through them.
    let chains = collect_chains(&b, functions)?;
    let access_list = collect_accesses(&b, functions, &chains)?;

    // 3. Alias views per storage class, from what every access needs.
    let mut backend = Backend::new(options.target, options.oob_poison, vulkan_mm);
    let mut kinds_by_sc: BTreeMap<u32, BTreeSet<AliasKind>> = BTreeMap::new();
    for chain in chains.values().filter(|c| c.storage != sc::PHYSICAL_STORAGE_BUFFER) {
        kinds_by_sc.entry(chain.storage).or_default().insert(AliasKind::U32);
    }
    // Once per distinct shape: large modules repeat a handful of shapes thousands of times.
    let distinct: rustc_hash::FxHashSet<&AccessShape> = access_list.iter().collect();
    for shape in distinct {
        kinds_by_sc.entry(shape.storage).or_default().extend(shape.views_used(&options.target));
    }
    for (&storage, kinds) in &kinds_by_sc {
        let views = AliasViews::new(&mut b, storage, kinds.iter().copied().collect());
        backend.views.insert(storage, views);
        for k in kinds {
            match (k, storage == sc::UNIFORM) {
                (AliasKind::U8, false) => add_cap(&mut b, CAP_STORAGE_BUFFER_8, "SPV_KHR_8bit_storage"),
                (AliasKind::U8, true) => add_cap(&mut b, CAP_UNIFORM_8, "SPV_KHR_8bit_storage"),
                (AliasKind::U16, false) => add_cap(&mut b, CAP_STORAGE_BUFFER_16, "SPV_KHR_16bit_storage"),
                (AliasKind::U16, true) => add_cap(&mut b, CAP_UNIFORM_16, "SPV_KHR_16bit_storage"),
                _ => {}
            }
        }
        // Checks of whole words are exact on the word view's length; only 8/16-bit ones need
        // the 8-bit view's.
        if !kinds.contains(&AliasKind::U8) && access_list.iter().any(|a| a.storage == storage && a.needs_byte_length()) {
            stats.word_granular_bounds = true;
        }
    }

    // 4. Which pointer ids need shadows: chain bases, followed back to their variables.
    let mut shadowed: BTreeSet<u32> = BTreeSet::new();
    let mut roots: BTreeSet<u32> = BTreeSet::new();
    let mut nulls: BTreeSet<u32> = BTreeSet::new();
    let mut work: Vec<u32> = chains.values().filter(|c| c.storage != sc::PHYSICAL_STORAGE_BUFFER).map(|c| c.base).collect();
    // Calls per function id: (function index, call instruction positions).
    let mut callers: HashMap<u32, Vec<(usize, usize, usize)>> = HashMap::default();
    for (fi, f) in functions.iter().enumerate() {
        for (bi, blk) in f.blocks.iter().enumerate() {
            for (ii, inst) in blk.insts.iter().enumerate() {
                if inst.op == op::FUNCTION_CALL && !inst.ops.is_empty() {
                    callers.entry(inst.ops[0]).or_default().push((fi, bi, ii));
                }
            }
        }
    }
    while let Some(id) = work.pop() {
        if !shadowed.insert(id) {
            continue;
        }
        if let Some(g) = b.global(id) {
            match g.op {
                op::VARIABLE => roots.insert(id),
                // A null pointer (variable pointers may select one): its shadows are null too,
                // and its range is empty.
                op::CONSTANT_NULL => nulls.insert(id),
                _ => return Err(RewriteError::unsupported(format!("%{id}"), "raw access chain base is a global that is neither a variable nor a null pointer")),
            };
            continue;
        }
        let def = *defs.get(&id).ok_or_else(|| RewriteError::unsupported(format!("%{id}"), "raw access chain base is never defined"))?;
        let inst = inst_at(def);
        let short = |n: usize| inst.ops.len() < n || (inst.op == op::PHI && inst.ops.len() % 2 != 0);
        if inst.op != op::FUNCTION_PARAMETER && short(match inst.op { op::SELECT => 3, _ => 1 }) {
            return Err(RewriteError::malformed(0, format!("%{id} = opcode {} has too few operands", inst.op)));
        }
        match (def, inst.op) {
            (Def::Param { f, p }, _) => {
                for &(cf, cb, ci) in callers.get(&functions[f].def.id).map(|v| v.as_slice()).unwrap_or(&[]) {
                    let call = &functions[cf].blocks[cb].insts[ci];
                    let arg = *call.ops.get(1 + p).ok_or_else(|| RewriteError::malformed(0, format!("call of %{} has too few arguments", call.ops[0])))?;
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

    // 5. Alias variables for the roots, and shadow ids for every shadowed pointer.
    let interface_lists_all = b.m.version() >= (1, 4);
    let type_of = |b: &Builder, id: u32| -> u32 { b.global(id).map(|g| g.ty).or_else(|| result_types.get(&id).copied()).unwrap_or(0) };
    let mut shadow = Shadows(HashMap::default());
    let mut shadow_ty_cache: HashMap<(u32, AliasKind), u32> = HashMap::default();
    for &id in &shadowed {
        let ty = type_of(&b, id);
        let (storage, _) = b.pointer(ty).ok_or_else(|| RewriteError::unsupported(format!("%{id}"), "raw access chain base is not a pointer"))?;
        let kinds = backend.views.get(&storage).map(|v| v.kinds.clone()).ok_or_else(|| {
            RewriteError::unsupported(format!("%{id}"), "base pointer storage class differs from the chain's")
        })?;
        for k in kinds {
            let sid = b.id();
            shadow.0.insert((id, k), sid);
            shadow_ty(&mut b, &backend, &mut shadow_ty_cache, ty, k, id)?;
        }
    }
    // Byte lengths of the bound ranges, for robust accesses. OpArrayLength cannot take a
    // variable pointer (spirv-val), so a length is taken where the pointer is still a variable
    // or descriptor-array chain and then follows the pointer through OpSelect/OpPhi/OpCopyObject
    // and function parameters as a u32 "length shadow".
    let need_len = access_list.iter().any(|a| a.robustness != Robustness::None);
    let mut len_shadow: HashMap<u32, u32> = HashMap::default();
    if need_len {
        for &id in shadowed.iter().filter(|id| !roots.contains(id) && !nulls.contains(id)) {
            len_shadow.insert(id, b.id());
        }
    }
    let chain_decos: BTreeSet<u32> = b
        .m
        .annotations
        .iter()
        .filter(|a| a.op == op::DECORATE && chains.contains_key(&a.ops[0]))
        .map(|a| a.ops[1])
        .filter(|d| !vulkan_mm && (*d == deco::COHERENT || *d == deco::VOLATILE))
        .collect();
    for &root in &roots {
        let var = b.global(root).cloned().expect("roots are globals");
        let (storage, pointee) = pointer_of(&b, var.ty, root)?;
        check_block(&b, pointee, storage, root)?;
        let decos = b.m.decorations_of(root);
        for k in views_of(&backend, storage, root)?.kinds.clone() {
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

    for &null in &nulls {
        let ty = type_of(&b, null);
        let (storage, _) = pointer_of(&b, ty, null)?;
        for k in views_of(&backend, storage, null)?.kinds.clone() {
            let sty = shadow_ty(&mut b, &backend, &mut shadow_ty_cache, ty, k, null)?;
            let sid = shadow.get(null, k)?;
            b.add_global(Inst::new(op::CONSTANT_NULL, sty, sid, ops![]));
        }
    }

    // 6. Function parameters that carry shadows get one extra parameter per view.
    let mut extra_params: HashMap<usize, Vec<(usize, Vec<Inst>)>> = HashMap::default();
    for &id in &shadowed {
        if let Some(Def::Param { f, p }) = defs.get(&id).copied() {
            let ty = type_of(&b, id);
            let (storage, _) = pointer_of(&b, ty, id)?;
            let mut ps = vec![];
            for k in views_of(&backend, storage, id)?.kinds.clone() {
                let sty = shadow_ty(&mut b, &backend, &mut shadow_ty_cache, ty, k, id)?;
                ps.push(Inst::new(op::FUNCTION_PARAMETER, sty, shadow.get(id, k)?, vec![]));
            }
            if let Some(&l) = len_shadow.get(&id) {
                let u32t = b.t_u32();
                ps.push(Inst::new(op::FUNCTION_PARAMETER, u32t, l, ops![]));
            }
            extra_params.entry(f).or_default().push((p, ps));
        }
    }
    for (&fi, list) in extra_params.iter_mut() {
        list.sort_by_key(|(p, _)| *p);
        let f = &mut functions[fi];
        for (_, ps) in list.iter() {
            f.params.extend(ps.iter().cloned());
        }
        let ret = f.def.ty;
        let param_tys: Vec<u32> = f.params.iter().map(|p| p.ty).collect();
        let fn_ty = b.t_fn(ret, &param_tys);
        f.def.ops[1] = fn_ty;
    }
    let shadowed_params: HashMap<u32, Vec<usize>> = extra_params
        .iter()
        .map(|(&fi, list)| (functions[fi].def.id, list.iter().map(|(p, _)| *p).collect()))
        .collect();

    // Lengths of NonUniform descriptor-array elements on drivers with the array-length quirk.
    let quirk = options.target.nonuniform_array_length_broken;
    let waterfall = |b: &Builder, id: u32, ops: &[u32]| -> bool {
        quirk && ops.len() == 2 && (b.has_decoration(id, deco::NON_UNIFORM) || b.has_decoration(ops[1], deco::NON_UNIFORM))
    };

    // 7. Rewrite bodies. Bounds checks split blocks: the first part keeps the label, the last
    //    part (with the original terminator) gets a new one, and OpPhi parents are renamed.
    let u32t = b.t_u32();
    let mut elem_offsets: HashMap<u32, u32> = HashMap::default();
    // Root variables that are a single block get their length once per function, at the top of
    // the entry block (after its OpVariables, which must come first: SPIR-V spec 2.4).
    let struct_roots: Vec<u32> = roots
        .iter()
        .copied()
        .filter(|&r| b.global(r).and_then(|g| b.pointer(g.ty)).is_some_and(|(_, p)| b.global(p).is_some_and(|t| t.op == op::TYPE_STRUCT)))
        .collect();
    for f in functions.iter_mut() {
        let mut relabel: HashMap<u32, u32> = HashMap::default();
        let mut new_blocks = Vec::with_capacity(f.blocks.len());
        let mut root_len: HashMap<u32, u32> = HashMap::default();
        let mut limits_at = 0;
        if need_len {
            for &null in &nulls {
                root_len.insert(null, b.c_u32(0));
            }
        }
        if need_len && !f.blocks.is_empty() {
            // Only roots this function reaches: another entry point's interface may not list them.
            let used: BTreeSet<u32> = f
                .blocks
                .iter()
                .flat_map(|blk| blk.insts.iter())
                .flat_map(|i| match i.op {
                    op::RAW_ACCESS_CHAIN_NV if chains.contains_key(&i.id) => vec![i.ops[0]],
                    op::FUNCTION_CALL if shadowed_params.contains_key(&i.ops[0]) => {
                        shadowed_params[&i.ops[0]].iter().filter_map(|&p| i.ops.get(1 + p).copied()).collect()
                    }
                    _ if shadowed.contains(&i.id) => pointer_operands(i).into_iter().map(|(_, id)| id).collect(),
                    _ => vec![],
                })
                .collect();
            let mut e = Emitter::new(0);
            for &r in struct_roots.iter().filter(|r| used.contains(r)) {
                let storage = pointer_of(&b, b.global(r).map_or(0, |g| g.ty), r)?.0;
                let views = shadow.all(r, views_of(&backend, storage, r)?)?;
                root_len.insert(r, backend.byte_length(&mut e, &mut b, storage, &views));
            }
            let entry = &mut f.blocks[0].insts;
            let at = entry.iter().take_while(|i| i.op == op::VARIABLE || i.op == op::LINE || i.op == op::NO_LINE).count();
            let lens = e.take_insts();
            limits_at = at + lens.len();
            entry.splice(at..at, lens);
        }
        // Bounds limits on these lengths are computed once, after them (see Backend::limit).
        backend.begin_function(root_len.values().copied());
        let len_of = |id: u32| -> Result<u32, RewriteError> {
            root_len.get(&id).or_else(|| len_shadow.get(&id)).copied().ok_or_else(|| {
                RewriteError::unsupported(format!("%{id}"), "robust raw access chain on a whole descriptor array (Base must select one buffer)")
            })
        };
        let original: rustc_hash::FxHashSet<u32> = f.blocks.iter().map(|blk| blk.label).collect();
        for blk in std::mem::take(&mut f.blocks) {
            // Room for the block and what its accesses expand into.
            let mut e = Emitter::with_capacity(blk.label, blk.insts.len() * 4);
            let mut insts = blk.insts;
            let mut shapes = insts.iter().map(|i| access_shape(&b, &chains, i)).collect::<Result<Vec<_>, _>>()?;
            let loops = insts.iter().any(|i| len_shadow.contains_key(&i.id) && waterfall(&b, i.id, &i.ops));
            if loops || shapes.iter().flatten().any(Backend::branches) {
                if let Some(lm) = insts.iter().position(|i| i.op == op::LOOP_MERGE) {
                    insts = split_loop_header(&mut e, &mut b, insts, lm)?;
                    shapes = insts.iter().map(|i| access_shape(&b, &chains, i)).collect::<Result<Vec<_>, _>>()?;
                }
            }
            for (inst, shape) in insts.into_iter().zip(shapes) {
                match inst.op {
                    op::RAW_ACCESS_CHAIN_NV => {
                        let chain = &chains[&inst.id];
                        let stride = b.c_u32(chain.stride);
                        let scaled = e.op(&mut b, op::I_MUL, u32t, ops![stride, chain.index]);
                        if chain.storage == sc::PHYSICAL_STORAGE_BUFFER {
                            let addr = e.op(&mut b, op::I_ADD, u32t, ops![chain.offset, scaled]);
                            physical_address(&mut e, &mut b, chain, addr, inst.id);
                            stats.raw_chains_physical += 1;
                        } else {
                            // The chain's id now names its byte address.
                            e.push(Inst::new(op::I_ADD, u32t, inst.id, ops![chain.offset, scaled]));
                            elem_offsets.insert(inst.id, scaled);
                        }
                        match chain.robustness {
                            Robustness::PerComponent => stats.raw_chains_per_component += 1,
                            Robustness::PerElement { .. } => stats.raw_chains_per_element += 1,
                            Robustness::None => {}
                        }
                        stats.raw_chains += 1;
                    }
                    op::LOAD | op::STORE if shape.is_some() => {
                        let shape = shape.unwrap();
                        let chain = &chains[&inst.ops[0]];
                        let views = shadow.all(chain.base, views_of(&backend, shape.storage, chain.base)?)?;
                        let elem = match shape.robustness {
                            Robustness::PerElement { .. } => Some(*elem_offsets.get(&inst.ops[0]).ok_or_else(|| {
                                RewriteError::malformed(0, format!("{} comes before its OpRawAccessChainNV", describe(&inst)))
                            })?),
                            _ => None,
                        };
                        let len = if shape.robustness != Robustness::None { Some(len_of(chain.base)?) } else { None };
                        if inst.op == op::STORE {
                            backend.emit(&mut e, &mut b, &shape, &views, inst.ops[0], len, elem, Some(inst.ops[1]));
                            stats.stores += 1;
                        } else {
                            let v = backend.emit(&mut e, &mut b, &shape, &views, inst.ops[0], len, elem, None);
                            e.push(Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![v]));
                            stats.loads += 1;
                        }
                    }
                    op::FUNCTION_CALL if shadowed_params.contains_key(&inst.ops[0]) => {
                        let mut inst = inst;
                        let mut extra = vec![];
                        for &p in &shadowed_params[&inst.ops[0]] {
                            let arg = *inst.ops.get(1 + p).ok_or_else(|| RewriteError::malformed(0, format!("call of %{} has too few arguments", inst.ops[0])))?;
                            let (storage, _) = pointer_of(&b, type_of(&b, arg), arg)?;
                            extra.extend(shadow.all(arg, views_of(&backend, storage, arg)?)?);
                            if need_len {
                                extra.push(len_of(arg)?);
                            }
                        }
                        inst.ops.extend(extra);
                        e.push(inst);
                    }
                    _ => {
                        let (id, opcode, ops) = (inst.id, inst.op, inst.ops.clone());
                        e.push(inst);
                        if id != 0 && shadowed.contains(&id) {
                            let ty = type_of(&b, id);
                            let (storage, _) = pointer_of(&b, ty, id)?;
                            for k in views_of(&backend, storage, id)?.kinds.clone() {
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
                                    _ => unreachable!("shadow sources were checked in step 4"),
                                };
                                if b.has_decoration(id, deco::NON_UNIFORM) {
                                    b.decorate(sid, deco::NON_UNIFORM, &[]);
                                }
                                e.push(Inst::new(opcode, sty, sid, sops));
                            }
                            if let Some(&l) = len_shadow.get(&id) {
                                let lops: Vec<u32> = match opcode {
                                    op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN if waterfall(&b, id, &ops) => {
                                        let k = backend.length_view(storage);
                                        let array = shadow.get(ops[0], k)?;
                                        let elem_ty = shadow_ty(&mut b, &backend, &mut shadow_ty_cache, ty, k, id)?;
                                        vec![waterfall_length(&mut e, &mut b, &backend, storage, array, elem_ty, ops[1])]
                                    }
                                    op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN => {
                                        let views = shadow.all(id, views_of(&backend, storage, id)?)?;
                                        vec![backend.byte_length(&mut e, &mut b, storage, &views)]
                                    }
                                    op::COPY_OBJECT => vec![len_of(ops[0])?],
                                    op::SELECT => vec![ops[0], len_of(ops[1])?, len_of(ops[2])?],
                                    op::PHI => ops.chunks(2).map(|pair| Ok([len_of(pair[0])?, pair[1]])).collect::<Result<Vec<_>, RewriteError>>()?.concat(),
                                    _ => unreachable!("shadow sources were checked in step 4"),
                                };
                                let lop = if opcode == op::ACCESS_CHAIN || opcode == op::IN_BOUNDS_ACCESS_CHAIN { op::COPY_OBJECT } else { opcode };
                                e.push(Inst::new(lop, u32t, l, lops));
                            }
                        }
                    }
                }
            }
            let mut pieces = e.finish();
            if pieces.len() > 1 {
                legalize_split(&mut b, &mut pieces, type_of);
                // Successors' OpPhis now come from the last piece.
                relabel.insert(blk.label, pieces[pieces.len() - 1].label);
            }
            new_blocks.extend(pieces);
        }
        // Only the function's own OpPhis (in blocks that kept an original label): the backend's
        // OpPhis may name an original label as the parent that really branches to them.
        for inst in new_blocks.iter_mut().filter(|blk| original.contains(&blk.label)).flat_map(|blk| blk.insts.iter_mut()).filter(|i| i.op == op::PHI) {
            for parent in inst.ops.iter_mut().skip(1).step_by(2) {
                if let Some(&l) = relabel.get(parent) {
                    *parent = l;
                }
            }
        }
        let limits = backend.take_entry_insts();
        if !limits.is_empty() {
            // The entry block's first part keeps its label and its leading instructions.
            new_blocks[0].insts.splice(limits_at..limits_at, limits);
        }
        f.blocks = new_blocks;
    }

    // 8. Clean up: the capability, the extension, and names/decorations of removed pointers
    //    (a chain's id now names a u32 byte address: memory decorations no longer apply).
    b.m.remove_capability(CAP_RAW_ACCESS_CHAINS);
    b.m.remove_extension("SPV_NV_raw_access_chains");
    b.m.annotations.retain(|a| {
        let Some(c) = (a.op == op::DECORATE).then(|| chains.get(&a.ops[0])).flatten() else { return true };
        c.storage == sc::PHYSICAL_STORAGE_BUFFER && a.ops[1] == deco::NON_UNIFORM
    });
    stats.atomic_subword_stores += backend.atomic_subword_stores;
    Ok(())
}

fn add_cap(b: &mut Builder, cap: u32, extension: &str) {
    b.m.add_capability(cap);
    b.m.add_extension(extension);
}

