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
use crate::module::{op, Inst, Module};
use crate::stats::Stats;
use crate::target::Options;

const CAP_RAW_ACCESS_CHAINS: u32 = 5414;
const CAP_STORAGE_BUFFER_16: u32 = 4433;
const CAP_UNIFORM_16: u32 = 4434;
const CAP_STORAGE_BUFFER_8: u32 = 4448;
const CAP_UNIFORM_8: u32 = 4449;
const MEMORY_MODEL_VULKAN: u32 = 3;
/// Raw Access Chain Operands (SPV_NV_raw_access_chains "Raw Access Chain Operands").
const ROBUST_PER_COMPONENT: u32 = 0x1;
const ROBUST_PER_ELEMENT: u32 = 0x2;
/// Memory operand bits (SPIR-V spec 3.26).
const MEM_ALIGNED: u32 = 0x2;

/// One OpRawAccessChainNV.
#[derive(Debug, Clone)]
struct Chain {
    ty: u32,
    base: u32,
    stride: u32,
    index: u32,
    offset: u32,
    robustness: Robustness,
    storage: u32,
    nonuniform: bool,
}

/// Where a function-local id is defined.
#[derive(Debug, Clone, Copy)]
enum Def {
    Inst { f: usize, b: usize, i: usize },
    Param { f: usize, p: usize },
}

/// Shadow pointer ids by (original pointer, view).
struct Shadows(HashMap<(u32, AliasKind), u32>);

impl Shadows {
    fn get(&self, id: u32, k: AliasKind) -> Result<u32, RewriteError> {
        self.0.get(&(id, k)).copied().ok_or_else(|| {
            RewriteError::malformed(0, format!("pointer %{id} flows into a raw access chain base but is not a buffer pointer of the chain's storage class"))
        })
    }
    fn all(&self, id: u32, views: &AliasViews) -> Result<Vec<u32>, RewriteError> {
        views.kinds.iter().map(|&k| self.get(id, k)).collect()
    }
}

fn views_of(backend: &Backend, storage: u32, id: u32) -> Result<&AliasViews, RewriteError> {
    backend.views.get(&storage).ok_or_else(|| RewriteError::malformed(0, format!("pointer %{id} has storage class {storage}, unlike the raw access chains it reaches")))
}

fn pointer_of(b: &Builder, ty: u32, id: u32) -> Result<(u32, u32), RewriteError> {
    b.pointer(ty).ok_or_else(|| RewriteError::malformed(0, format!("%{id} should be a pointer but its type %{ty} is not")))
}

fn describe(inst: &Inst) -> String {
    let name = match inst.op {
        op::RAW_ACCESS_CHAIN_NV => "OpRawAccessChainNV".to_string(),
        op::LOAD => "OpLoad".to_string(),
        op::STORE => "OpStore".to_string(),
        other => format!("opcode {other}"),
    };
    if inst.id != 0 { format!("%{} = {}", inst.id, name) } else { format!("{} %{}", name, inst.ops.first().copied().unwrap_or(0)) }
}

pub fn run(m: &mut Module, options: &Options, stats: &mut Stats) -> Result<(), RewriteError> {
    let mut functions = std::mem::take(&mut m.functions);
    let result = lower(m, &mut functions, options, stats);
    m.functions = functions;
    result
}

fn lower(m: &mut Module, functions: &mut Vec<crate::module::Function>, options: &Options, stats: &mut Stats) -> Result<(), RewriteError> {
    let vulkan_mm = m.memory_model.first().map(|i| i.ops.get(1) == Some(&MEMORY_MODEL_VULKAN)).unwrap_or(false);
    let mut b = Builder::new(m);

    // Definitions of function-local ids.
    let mut defs: HashMap<u32, Def> = HashMap::default();
    for (fi, f) in functions.iter().enumerate() {
        for (pi, p) in f.params.iter().enumerate() {
            defs.insert(p.id, Def::Param { f: fi, p: pi });
        }
        for (bi, blk) in f.blocks.iter().enumerate() {
            for (ii, inst) in blk.insts.iter().enumerate() {
                if inst.id != 0 {
                    defs.insert(inst.id, Def::Inst { f: fi, b: bi, i: ii });
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

    // 1. The chains.
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

    // 2. Uses: only OpLoad/OpStore may consume a chain (spec: "The result must only be consumed
    //    by OpLoad and OpStore"); their shapes decide which alias views are needed.
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
        if let Some(shape) = access_shape(&b, &chains, inst)? {
            access_list.push(shape);
        }
    }

    // 3. Alias views per storage class, from what every access needs.
    let mut backend = Backend::new(options.target, options.oob_poison, vulkan_mm);
    let mut kinds_by_sc: BTreeMap<u32, BTreeSet<AliasKind>> = BTreeMap::new();
    for chain in chains.values().filter(|c| c.storage != sc::PHYSICAL_STORAGE_BUFFER) {
        kinds_by_sc.entry(chain.storage).or_default().insert(AliasKind::U32);
    }
    for shape in &access_list {
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
        if !kinds.contains(&AliasKind::U8) && chains.values().any(|c| c.storage == storage && c.robustness != Robustness::None) {
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
    let version = (b.m.header[1] >> 16) & 0xff;
    let minor = (b.m.header[1] >> 8) & 0xff;
    let interface_lists_all = (version, minor) >= (1, 4);
    let result_types = {
        let mut t: HashMap<u32, u32> = HashMap::default();
        for f in functions.iter() {
            for i in f.params.iter().chain(f.blocks.iter().flat_map(|blk| blk.insts.iter())) {
                if i.id != 0 {
                    t.insert(i.id, i.ty);
                }
            }
        }
        t
    };
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
            b.add_global(Inst::new(op::VARIABLE, sty, sid, vec![storage]));
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
            b.add_global(Inst::new(op::CONSTANT_NULL, sty, sid, vec![]));
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
                ps.push(Inst::new(op::FUNCTION_PARAMETER, u32t, l, vec![]));
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
            let at = entry.iter().take_while(|i| i.op == op::VARIABLE || i.op == op::LINE || i.op == 317).count();
            entry.splice(at..at, e.take_insts());
        }
        let len_of = |id: u32| -> Result<u32, RewriteError> {
            root_len.get(&id).or_else(|| len_shadow.get(&id)).copied().ok_or_else(|| {
                RewriteError::unsupported(format!("%{id}"), "robust raw access chain on a whole descriptor array (Base must select one buffer)")
            })
        };
        for blk in std::mem::take(&mut f.blocks) {
            let mut e = Emitter::new(blk.label);
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
                        let scaled = e.op(&mut b, op::I_MUL, u32t, vec![stride, chain.index]);
                        if chain.storage == sc::PHYSICAL_STORAGE_BUFFER {
                            let addr = e.op(&mut b, op::I_ADD, u32t, vec![chain.offset, scaled]);
                            physical_address(&mut e, &mut b, chain, addr, inst.id);
                            stats.raw_chains_physical += 1;
                        } else {
                            // The chain's id now names its byte address.
                            e.push(Inst::new(op::I_ADD, u32t, inst.id, vec![chain.offset, scaled]));
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
                            e.push(Inst::new(op::COPY_OBJECT, inst.ty, inst.id, vec![v]));
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
            let rest = e.take_insts();
            let last = e.label();
            e.blocks.push(crate::module::Block { label: last, insts: rest });
            if last != blk.label {
                relabel.insert(blk.label, last);
            }
            new_blocks.extend(e.blocks);
        }
        for inst in new_blocks.iter_mut().flat_map(|blk| blk.insts.iter_mut()).filter(|i| i.op == op::PHI) {
            for parent in inst.ops.iter_mut().skip(1).step_by(2) {
                if let Some(&l) = relabel.get(parent) {
                    *parent = l;
                }
            }
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

/// The access shape of an OpLoad/OpStore through a (non-physical) chain; None for other
/// instructions.
fn access_shape(b: &Builder, chains: &BTreeMap<u32, Chain>, inst: &Inst) -> Result<Option<AccessShape>, RewriteError> {
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
fn split_memory_operands(ops: &[u32]) -> (u32, Option<u32>, Vec<u32>) {
    let Some(&mask) = ops.first() else { return (0, None, vec![]) };
    if mask & MEM_ALIGNED != 0 {
        (mask, ops.get(1).copied(), ops.get(2..).unwrap_or(&[]).to_vec())
    } else {
        (mask, None, ops[1..].to_vec())
    }
}

/// (operand position, id) of the operands of `inst` that can hold a pointer. Only opcodes whose
/// operand layout is all ids (or known) are listed, so a literal is never mistaken for an id.
fn pointer_operands(inst: &Inst) -> Vec<(usize, u32)> {
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

fn add_cap(b: &mut Builder, cap: u32, extension: &str) {
    b.m.add_capability(cap);
    b.m.add_extension(extension);
}

/// The pointee of a raw chain's root variable must be a Block (StorageBuffer) or BufferBlock
/// (Uniform) struct, or a descriptor array of them (SPV_NV_raw_access_chains, Base).
fn check_block(b: &Builder, pointee: u32, storage: u32, root: u32) -> Result<(), RewriteError> {
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
fn shadow_ty(
    b: &mut Builder,
    backend: &Backend,
    cache: &mut HashMap<(u32, AliasKind), u32>,
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
            b.add_global(Inst::new(op::TYPE_ARRAY, 0, nid, vec![alias, g.ops[1]]))
        }
        op::TYPE_RUNTIME_ARRAY => {
            let nid = b.id();
            b.add_global(Inst::new(op::TYPE_RUNTIME_ARRAY, 0, nid, vec![alias]))
        }
        _ => return Err(RewriteError::unsupported(format!("%{id}"), "raw access chain base does not point to a block or an array of blocks")),
    };
    let t = b.t_ptr(storage, new_pointee);
    cache.insert((ty, k), t);
    Ok(t)
}

/// `result = base + addr` for a PhysicalStorageBuffer base, through a uvec2 bitcast and an
/// add with carry (SPV_KHR_physical_storage_buffer allows OpBitcast between a physical pointer
/// and a vector of two 32-bit integers; no Int64 needed).
fn physical_address(e: &mut Emitter, b: &mut Builder, chain: &Chain, addr: u32, result: u32) {
    let u32t = b.t_u32();
    let uv2 = b.t_vec(u32t, 2);
    let v = e.op(b, op::BITCAST, uv2, vec![chain.base]);
    let lo = e.op(b, op::COMPOSITE_EXTRACT, u32t, vec![v, 0]);
    let hi = e.op(b, op::COMPOSITE_EXTRACT, u32t, vec![v, 1]);
    let carry_ty = b.t_struct(&[u32t, u32t]);
    let sum = e.op(b, op::I_ADD_CARRY, carry_ty, vec![lo, addr]);
    let new_lo = e.op(b, op::COMPOSITE_EXTRACT, u32t, vec![sum, 0]);
    let carry = e.op(b, op::COMPOSITE_EXTRACT, u32t, vec![sum, 1]);
    let new_hi = e.op(b, op::I_ADD, u32t, vec![hi, carry]);
    let nv = e.op(b, op::COMPOSITE_CONSTRUCT, uv2, vec![new_lo, new_hi]);
    e.push(Inst::new(op::BITCAST, chain.ty, result, vec![nv]));
}

/// A loop header whose body needs bounds-check branches: its OpLoopMerge must stay right before
/// its terminator (SPIR-V spec 2.11), so the header keeps its OpPhis and the OpLoopMerge and
/// branches to a new block that holds the rest. The returned instructions go into that block.
fn split_loop_header(e: &mut Emitter, b: &mut Builder, mut insts: Vec<Inst>, lm: usize) -> Result<Vec<Inst>, RewriteError> {
    let merge = insts.remove(lm);
    let (merge_block, continue_target) = (merge.ops[0], merge.ops[1]);
    let term = insts.last().expect("a block ends with a terminator");
    let exits_loop = |t: &u32| *t == merge_block || *t == continue_target;
    let ok = match term.op {
        op::BRANCH => true,
        // Moved out of the header, a conditional branch must be a break/continue.
        op::BRANCH_CONDITIONAL => term.ops[1..3].iter().any(exits_loop),
        _ => false,
    };
    if !ok {
        return Err(RewriteError::unsupported(
            format!("OpLoopMerge %{merge_block} %{continue_target}"),
            "a loop header that branches into its body two ways and also needs bounds checks",
        ));
    }
    let phis = insts.iter().take_while(|i| i.op == op::PHI).count();
    let rest = insts.split_off(phis);
    for phi in insts {
        e.push(phi);
    }
    e.push(merge);
    let body = b.id();
    e.terminate(Inst::new(op::BRANCH, 0, 0, vec![body]), body);
    Ok(rest)
}

/// The byte length of `array[index]` for a non-uniform `index`, one distinct index at a time:
/// a loop that takes the subgroup's first active index, lets the invocations holding it take a
/// uniform OpArrayLength and leave, and repeats for the rest (a "waterfall" loop). Works
/// around drivers that evaluate OpArrayLength once per subgroup (Target::nonuniform_array_length_broken).
fn waterfall_length(e: &mut Emitter, b: &mut Builder, backend: &Backend, storage: u32, array: u32, elem_ty: u32, index: u32) -> u32 {
    let u32t = b.t_u32();
    let bool_t = b.t_bool();
    let (header, body, then, cont, merge) = (b.id(), b.id(), b.id(), b.id(), b.id());
    e.terminate(Inst::new(op::BRANCH, 0, 0, vec![header]), header);
    e.stmt(op::LOOP_MERGE, vec![merge, cont, 0]);
    e.terminate(Inst::new(op::BRANCH, 0, 0, vec![body]), body);
    let first = if b.m.version() >= (1, 3) {
        // OpGroupNonUniformBroadcastFirst (SPIR-V 1.3), Execution scope Subgroup (3).
        b.m.add_capability(61); // GroupNonUniform
        b.m.add_capability(64); // GroupNonUniformBallot
        let subgroup = b.c_u32(3);
        e.op(b, 338, u32t, vec![subgroup, index])
    } else {
        // OpSubgroupFirstInvocationKHR (SPV_KHR_shader_ballot) before SPIR-V 1.3.
        b.m.add_capability(4423); // SubgroupBallotKHR
        b.m.add_extension("SPV_KHR_shader_ballot");
        e.op(b, 4422, u32t, vec![index])
    };
    let mine = e.op(b, 170 /* OpIEqual */, bool_t, vec![index, first]);
    // Not a selection header: one target is the loop's continue target (SPIR-V spec 2.11).
    e.terminate(Inst::new(op::BRANCH_CONDITIONAL, 0, 0, vec![mine, then, cont]), then);
    let ptr = e.op(b, op::ACCESS_CHAIN, elem_ty, vec![array, first]);
    let len = backend.length_of_view(e, b, storage, ptr);
    e.terminate(Inst::new(op::BRANCH, 0, 0, vec![merge]), cont);
    e.terminate(Inst::new(op::BRANCH, 0, 0, vec![header]), merge);
    // `then` is the only way into `merge`, so `len` dominates everything after the loop.
    len
}
