//! Helpers the passes share.
use rustc_hash::FxHashSet as HashSet;

use std::collections::{BTreeMap, BTreeSet};

use crate::module::{leading_id_operands, op, Function, Inst, Module};

/// A map kept as a list of pairs: for the few entries a pass tracks, a linear search costs
/// less than hashing, and its code is the same small loop for every key type (less code to
/// fault in on a process's first rewrite than a hash map per key type).
#[derive(Debug, Clone)]
pub struct ListMap<K, V>(pub Vec<(K, V)>);

impl<K, V> Default for ListMap<K, V> {
    fn default() -> Self {
        ListMap(Vec::new())
    }
}

impl<K: PartialEq, V> ListMap<K, V> {
    pub fn get(&self, k: &K) -> Option<&V> {
        self.0.iter().find(|(x, _)| x == k).map(|(_, v)| v)
    }
    pub fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.0.iter_mut().find(|(x, _)| x == k).map(|(_, v)| v)
    }
    pub fn contains_key(&self, k: &K) -> bool {
        self.get(k).is_some()
    }
    /// Sets `k` to `v` (replacing an earlier value).
    pub fn insert(&mut self, k: K, v: V) {
        match self.get_mut(&k) {
            Some(x) => *x = v,
            None => self.0.push((k, v)),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

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

/// Memory operands of a load/store lowered onto views of other widths, without Aligned (those
/// accesses have their own alignment).
pub fn without_aligned(ops: &[u32]) -> Vec<u32> {
    let (mask, _, rest) = split_memory_operands(ops);
    if mask & !MEM_ALIGNED == 0 {
        return vec![];
    }
    let mut out = vec![mask & !MEM_ALIGNED];
    out.extend(rest);
    out
}

/// (operand position, id) of the operands of `inst` that can hold a pointer. Only opcodes whose
/// operand layout is all ids (or known) are listed, so a literal is never mistaken for an id.
pub fn pointer_operands(inst: &Inst) -> smallvec::SmallVec<[(usize, u32); 4]> {
    let Some((from, count, step)) = pointer_operand_positions(inst.op) else { return smallvec::SmallVec::new() };
    inst.ops.iter().copied().enumerate().skip(from).step_by(step).take(count).collect()
}

/// Where [`pointer_operands`] looks: (first operand, how many (`usize::MAX`: to the end),
/// step), or None for an opcode that takes no pointer. A match on the opcode only, for walks
/// over every instruction.
#[inline]
pub fn pointer_operand_positions(opcode: u32) -> Option<(usize, usize, usize)> {
    Some(match opcode {
        op::LOAD | op::COPY_OBJECT | op::ARRAY_LENGTH | op::CONVERT_PTR_TO_U | op::BITCAST => (0, 1, 1),
        op::STORE => (0, 2, 1),
        op::SELECT => (1, 2, 1),
        op::PHI => (0, usize::MAX, 2),
        op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | op::RAW_ACCESS_CHAIN_NV => (0, 1, 1),
        // The callee, then every argument.
        op::FUNCTION_CALL => (0, usize::MAX, 1),
        // OpCopyMemory / OpCopyMemorySized: target and source.
        63 | 64 => (0, 2, 1),
        // Atomics (OpAtomicLoad..OpAtomicXor, flag ops, float min/max/add): the pointer comes first.
        227..=242 | 318 | 319 | 5614 | 5615 | 6035 => (0, 1, 1),
        // OpPtrEqual, OpPtrNotEqual, OpPtrDiff.
        401..=403 => (0, 2, 1),
        _ => return None,
    })
}

/// Instructions whose first operand is the image or sampled image they work on (SPIR-V spec
/// 3.56.10 "Image Instructions", and the vendor ones that follow the same shape).
pub const fn consumes_image(opcode: u32) -> bool {
    // OpImageSample*..OpImageQuerySamples (87..=107, OpImage = 100 included), the sparse ones
    // but OpImageSparseTexelsResident (316), OpFragmentMaskFetchAMD / OpFragmentFetchAMD,
    // OpImageSampleFootprintNV.
    matches!(opcode, 87..=107 | 305..=315 | 320 | 5011 | 5012 | 5283)
}

/// Drops names and decorations that target ids no longer defined.
pub fn forget_ids(m: &mut Module, gone: &HashSet<u32>) {
    if gone.is_empty() {
        return;
    }
    m.debug.retain(|d| !(matches!(d.op, op::NAME | op::MEMBER_NAME) && d.ops.first().is_some_and(|id| gone.contains(id))));
    m.annotations.retain(|a| {
        !(matches!(a.op, op::DECORATE | op::MEMBER_DECORATE | op::DECORATE_ID | op::DECORATE_STRING | op::MEMBER_DECORATE_STRING)
            && a.ops.first().is_some_and(|id| gone.contains(id)))
    });
}

/// Pointer types a retyping made equal (pointers to two pointer types that are both the address
/// now, pointers to two opaque types that are both the handle now) become one (the first),
/// which every type, value and result type uses. Duplicates are valid SPIR-V (spec 2.8 asks
/// uniqueness of non-aggregate, non-pointer types only), but each is words every pipeline
/// creation reads. Decorated ones (ArrayStride) stay apart.
pub fn merge_pointer_types(m: &mut Module) {
    // (storage class, pointee, declaration order, id), sorted: equal types are neighbours, the
    // first declared first. Most modules have none, and those that do a few: the merged ids
    // are looked up in a short list, not a map (this runs on every bindless and BDA rewrite).
    let mut pointers: Vec<(u32, u32, usize, u32)> =
        m.globals.iter().enumerate().filter(|(_, g)| g.op == op::TYPE_POINTER).map(|(n, g)| (g.ops[0], g.ops[1], n, g.id)).collect();
    pointers.sort_unstable();
    if !pointers.windows(2).any(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1)) {
        return;
    }
    let decorated = |id: u32| m.annotations.iter().any(|a| a.op == op::DECORATE && a.ops.first() == Some(&id));
    let mut merged: smallvec::SmallVec<[(u32, u32); 4]> = smallvec::SmallVec::new();
    let mut keep: Option<(u32, u32, u32)> = None; // (storage class, pointee, id)
    for &(class, pointee, _, id) in &pointers {
        if decorated(id) {
            continue;
        }
        match keep {
            Some((c, p, k)) if (c, p) == (class, pointee) => merged.push((id, k)),
            _ => keep = Some((class, pointee, id)),
        }
    }
    if merged.is_empty() {
        return;
    }
    m.globals.retain(|g| !merged.iter().any(|&(from, _)| from == g.id));
    // Every result type of the module is looked at: most are outside the merged ids' range.
    let (lo, hi) = merged.iter().fold((u32::MAX, 0), |(lo, hi), &(from, _)| (lo.min(from), hi.max(from)));
    let merged = &merged[..];
    let sub = |id: &mut u32| {
        if (lo..=hi).contains(id) {
            if let Some(&(_, to)) = merged.iter().find(|&&(from, _)| from == *id) {
                *id = to;
            }
        }
    };
    let mut function_types = false;
    for g in m.globals.iter_mut() {
        sub(&mut g.ty);
        match g.op {
            op::TYPE_STRUCT => g.ops.iter_mut().for_each(sub),
            op::TYPE_FUNCTION => {
                let before = g.ops.clone();
                g.ops.iter_mut().for_each(sub);
                function_types |= g.ops != before;
            }
            op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => sub(&mut g.ops[0]),
            op::TYPE_POINTER => sub(&mut g.ops[1]),
            _ => {}
        }
    }
    for f in m.functions.iter_mut() {
        sub(&mut f.def.ty);
        f.params.iter_mut().for_each(|p| sub(&mut p.ty));
        f.blocks.iter_mut().flat_map(|b| b.insts.iter_mut()).for_each(|i| sub(&mut i.ty));
    }
    forget_ids(m, &merged.iter().map(|&(from, _)| from).collect());
    // A function type with a merged pointer parameter may equal another one now.
    if function_types {
        merge_function_types(m);
    }
}

/// Function types a retyping made equal become one (the first), and functions use it (SPIR-V
/// spec 2.8: non-aggregate, non-pointer types must be unique).
pub fn merge_function_types(m: &mut Module) {
    // A module declares a handful of function types: compared pairwise, without a map or a
    // copy of each (this runs on every bindless and BDA rewrite).
    let types: Vec<&Inst> = m.globals.iter().filter(|g| g.op == op::TYPE_FUNCTION).collect();
    let merged: Vec<(u32, u32)> =
        types.iter().enumerate().filter_map(|(n, t)| types[..n].iter().find(|u| u.ops == t.ops).map(|u| (t.id, u.id))).collect();
    if merged.is_empty() {
        return;
    }
    m.globals.retain(|g| !merged.iter().any(|&(from, _)| from == g.id));
    for f in m.functions.iter_mut() {
        if let Some(&(_, keep)) = merged.iter().find(|&&(from, _)| f.def.ops.get(1) == Some(&from)) {
            f.def.ops[1] = keep;
        }
    }
    forget_ids(m, &merged.iter().map(|&(from, _)| from).collect());
}

/// Memory operand bits whose operands are literals: Volatile, Aligned, Nontemporal.
const LITERAL_MEMORY_OPERANDS: u32 = 0x1 | 0x2 | 0x4;

/// The operand words of a function's instruction that may name an id: all but those certainly
/// literals (an OpExtInst's set, an import, and its instruction number; composite indices;
/// literal memory operands of OpLoad/OpStore). Other words are counted whatever they are: a
/// caller that counts a literal as a use only keeps something alive.
pub fn may_name_ids(inst: &Inst) -> &[u32] {
    let w = &inst.ops[..];
    match inst.op {
        op::EXT_INST => w.get(2..).unwrap_or(&[]),
        op::COMPOSITE_EXTRACT | op::COMPOSITE_INSERT | op::VECTOR_SHUFFLE => &w[..leading_id_operands(inst.op).min(w.len())],
        op::LOAD | op::STORE => {
            let lead = leading_id_operands(inst.op).min(w.len());
            if w.get(lead).is_none_or(|m| m & !LITERAL_MEMORY_OPERANDS == 0) {
                &w[..lead]
            } else {
                w
            }
        }
        _ => w,
    }
}

/// Takes the ids `gone` accepts out of the entry points' interfaces.
pub fn remove_from_interfaces(m: &mut Module, gone: impl Fn(u32) -> bool) {
    for ep in &mut m.entry_points {
        let start = crate::module::interface_start(&ep.ops);
        if ep.ops[start..].iter().any(|&id| gone(id)) {
            let kept: crate::module::Ops = ep.ops[..start].iter().copied().chain(ep.ops[start..].iter().copied().filter(|&id| !gone(id))).collect();
            ep.ops = kept;
        }
    }
}

/// Ids a global refers to: its type and every operand word that may name a global. The literal
/// operands of the common types and constants are skipped; other literals may alias ids, which
/// only keeps more alive, never breaks order.
fn refs(g: &Inst) -> impl Iterator<Item = u32> + '_ {
    let ids = match g.op {
        op::TYPE_INT | op::TYPE_FLOAT | op::CONSTANT | op::SPEC_CONSTANT => &g.ops[..0],
        op::TYPE_VECTOR | 24 /* OpTypeMatrix */ | op::TYPE_IMAGE => &g.ops[..1],
        op::TYPE_POINTER => &g.ops[1..],
        op::VARIABLE => &g.ops[1..],
        _ => &g.ops[..],
    };
    std::iter::once(g.ty).chain(ids.iter().copied()).filter(|&r| r != 0)
}

/// Removes types and constants nothing refers to (a lowering's old types may still need the
/// capabilities it removed), and the globals `also_removable` accepts that nothing refers to.
/// A removable variable listed in an entry point's interface (SPIR-V 1.4+ lists every global
/// the entry point references) is not kept alive by that, and leaves the interface with it.
/// Dense per-id tables: every instruction of the module is looked at.
pub fn sweep_dead_globals(m: &mut Module, also_removable: impl Fn(&Inst) -> bool) {
    let is_removable = |g: &Inst| {
        matches!(g.op, op::TYPE_STRUCT | op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY | op::TYPE_POINTER | op::TYPE_VECTOR | op::TYPE_INT | op::TYPE_FLOAT | 24)
            || matches!(g.op, op::CONSTANT | op::CONSTANT_COMPOSITE | op::CONSTANT_NULL | op::CONSTANT_TRUE | op::CONSTANT_FALSE)
            || also_removable(g)
    };
    let bound = m.header[3] as usize;
    // Position + 1 of each global by id.
    let mut index = vec![0u32; bound];
    for (n, g) in m.globals.iter().enumerate() {
        if let Some(x) = index.get_mut(g.id as usize).filter(|_| g.id != 0) {
            *x = n as u32 + 1;
        }
    }
    let removable_id = |id: u32| index.get(id as usize).is_some_and(|&n| n != 0 && is_removable(&m.globals[n as usize - 1]));
    let mut live = vec![false; bound];
    let mut work: Vec<u32> = vec![];
    let mut mark = |id: u32, work: &mut Vec<u32>| {
        if let Some(l) = live.get_mut(id as usize).filter(|l| !**l) {
            *l = true;
            work.push(id);
        }
    };
    for f in &m.functions {
        for i in std::iter::once(&f.def).chain(f.params.iter()).chain(f.blocks.iter().flat_map(|b| b.insts.iter())) {
            // Certain literals are skipped, so a type whose id equals one is not kept.
            for &r in std::iter::once(&i.ty).chain(may_name_ids(i)) {
                if r != 0 {
                    mark(r, &mut work);
                }
            }
        }
    }
    // Only the id operands: OpExecutionMode's literals (LocalSize = 17, 64, ...) and the entry
    // point's name are not ids, and kept unrelated types with those ids alive (an unused
    // OpTypeSampledImage of a storage image, invalid in Vulkan, survived that way).
    for ep in &m.entry_points {
        let start = crate::module::interface_start(&ep.ops);
        for &r in ep.ops.iter().skip(1).take(1).chain(ep.ops.iter().skip(start).filter(|&&r| !removable_id(r))) {
            mark(r, &mut work);
        }
    }
    for em in &m.execution_modes {
        let ids = if em.op == op::EXECUTION_MODE_ID { em.ops.len() } else { 1 };
        for (n, &r) in em.ops.iter().enumerate().take(ids) {
            if n != 1 {
                mark(r, &mut work); // the entry point, and OpExecutionModeId's operands
            }
        }
    }
    for a in m.annotations.iter().filter(|a| a.op == op::DECORATE_ID) {
        for &r in a.ops.iter().skip(2) {
            mark(r, &mut work);
        }
    }
    // A decoration group's targets stay (forget_ids does not edit the group's target lists).
    for a in m.annotations.iter().filter(|a| matches!(a.op, op::GROUP_DECORATE | op::GROUP_MEMBER_DECORATE)) {
        for &r in &a.ops {
            mark(r, &mut work);
        }
    }
    for g in m.globals.iter().filter(|g| !is_removable(g)) {
        mark(g.id, &mut work);
    }
    while let Some(id) = work.pop() {
        if let Some(&n) = index.get(id as usize).filter(|&&n| n != 0) {
            for r in refs(&m.globals[n as usize - 1]) {
                mark(r, &mut work);
            }
        }
    }
    let dead: HashSet<u32> =
        m.globals.iter().filter(|g| is_removable(g) && !live.get(g.id as usize).copied().unwrap_or(false)).map(|g| g.id).collect();
    if dead.is_empty() {
        return;
    }
    remove_from_interfaces(m, |id| dead.contains(&id));
    m.globals.retain(|g| !dead.contains(&g.id));
    forget_ids(m, &dead);
}

/// Ids of the functions `root`'s call tree reaches (itself included). From SPIR-V 1.4 on, an
/// OpEntryPoint's interface lists every global variable its call tree references (SPIR-V spec
/// 2.17 / OpEntryPoint), so a lowering that adds variables needs this per entry point.
pub fn call_tree(functions: &[Function], root: u32) -> HashSet<u32> {
    let index: rustc_hash::FxHashMap<u32, usize> = functions.iter().enumerate().map(|(n, f)| (f.def.id, n)).collect();
    let mut seen: HashSet<u32> = HashSet::default();
    let mut work = vec![root];
    while let Some(id) = work.pop() {
        if !seen.insert(id) {
            continue;
        }
        let Some(&n) = index.get(&id) else { continue };
        for inst in functions[n].blocks.iter().flat_map(|b| b.insts.iter()) {
            if inst.op == op::FUNCTION_CALL && !inst.ops.is_empty() && !seen.contains(&inst.ops[0]) {
                work.push(inst.ops[0]);
            }
        }
    }
    seen
}

/// Adds variables a lowering declared to the interface of every entry point whose call tree
/// uses them (`used_by`: function → variables): from SPIR-V 1.4 on, an OpEntryPoint lists
/// every global variable its call tree references (SPIR-V spec "OpEntryPoint").
pub fn add_to_interfaces(m: &mut Module, functions: &[Function], used_by: &BTreeMap<u32, BTreeSet<u32>>) {
    if m.version() < (1, 4) {
        return;
    }
    for ep in m.entry_points.iter_mut() {
        let tree = call_tree(functions, ep.ops[1]);
        let vars: BTreeSet<u32> = used_by.iter().filter(|(f, _)| tree.contains(f)).flat_map(|(_, v)| v.iter().copied()).collect();
        for v in vars {
            if !ep.ops[2..].contains(&v) {
                ep.ops.push(v);
            }
        }
    }
}
