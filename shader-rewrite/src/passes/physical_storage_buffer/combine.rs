//! Loads of neighbouring values through one physical pointer, in one block with no write
//! between them, read as one 8- or 16-byte unit (a node's `value` and `next`, a struct's `x`,
//! `y`, `z`, `w`): each such load becomes one access of the buffer table's descriptor array, and
//! on lavapipe each is a loop over the lanes (gallivm's `emit_load_mem`), where natively one
//! gather serves any of them.
//!
//! Only where the driver checks bounds, and checks a vector access component by component
//! (`Target::robust_vector_components`, lavapipe's probe): then every word of the unit reads
//! what a load of it alone would, in range or out of it. The unit is exactly the bytes from the
//! first load's to the end of the farthest (8 or 16), starting where the first load in the
//! block starts, which is aligned to the unit (its `Aligned`): so no byte past what the loads
//! span is read, only the gaps between them (padding, another member). Runs before the lowering,
//! on the module's own instructions: a pointer to the unit (`OpBitcast` of the first load's
//! pointer), one load of it, and each former load a component or a shuffle of it (bitcast to
//! its type: floats, 64-bit scalars, pointers are the same bits).
use rustc_hash::FxHashMap as HashMap;

use crate::builder::{sc, Builder, Emitter};
use crate::module::{op, Inst, Module};
use crate::ops;
use crate::passes::layout::Layouts;
use crate::passes::util::split_memory_operands;

use super::{is_atomic, units};

const OP_COPY_MEMORY_SIZED: u32 = 64;
const OP_CONTROL_BARRIER: u32 = 224;
const OP_MEMORY_BARRIER: u32 = 225;
const OP_IMAGE_WRITE: u32 = 99;
/// Memory operand bits a load may carry and be combined: Aligned (0x2), Nontemporal (0x4).
const PLAIN_MEMORY_OPERANDS: u32 = 0x6;

/// Where a pointer's constant byte offset counts from: a root pointer, then for each dynamic
/// index on the way (into an array or a vector) the constant offset before it, the index's id
/// and its stride. Equal places are equal addresses (the same ids hold the same values).
type Place = smallvec::SmallVec<[u32; 4]>;

/// One load of a group: where it is in its block, the bytes it reads from the group's place,
/// its result and type.
struct Member {
    at: usize,
    off: u32,
    size: u32,
    id: u32,
    ty: u32,
}

/// Loads from one place, open until a write or the block's end.
struct Group {
    root: Place,
    /// The first load's pointer and Aligned.
    ptr: u32,
    align: u32,
    members: Vec<Member>,
}

impl Group {
    fn start(&self) -> u32 {
        self.members[0].off
    }
    fn end(&self) -> u32 {
        self.members.iter().map(|m| m.off + m.size).max().unwrap_or(0)
    }
    /// The unit's size when the group is worth combining and may be: two loads or more, the
    /// bytes they span exactly 8 or 16, the first load's address aligned to that.
    fn unit(&self) -> Option<u32> {
        let span = self.end() - self.start();
        (self.members.len() >= 2 && matches!(span, 8 | 16) && self.align >= span && self.members.iter().all(|m| (m.off - self.start()).is_multiple_of(4))).then_some(span)
    }
}

/// Combines the groups in every function of `m`; returns how many loads were combined.
pub(super) fn adjacent_loads(m: &mut Module, layouts: &Layouts) -> u32 {
    let mut functions = std::mem::take(&mut m.functions);
    let mut combined = 0;
    {
        let mut b = Builder::new(m);
        for f in functions.iter_mut() {
            // Function-local access chains (followed back to their roots) and result types.
            let defs: HashMap<u32, Inst> = f.blocks.iter().flat_map(|blk| blk.insts.iter()).filter(|i| i.id != 0 && matches!(i.op, op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN)).map(|i| (i.id, i.clone())).collect();
            let types: HashMap<u32, u32> = f.params.iter().chain(f.blocks.iter().flat_map(|blk| blk.insts.iter())).filter(|i| i.id != 0).map(|i| (i.id, i.ty)).collect();
            for blk in f.blocks.iter_mut() {
                let cx = Chains { b: &b, layouts, defs: &defs, types: &types };
                let mut done: Vec<Group> = vec![];
                let mut open: Vec<Group> = vec![];
                for (at, inst) in blk.insts.iter().enumerate() {
                    if writes(inst) {
                        done.append(&mut open);
                        continue;
                    }
                    let Some((ref root, off, size, align)) = cx.candidate(inst) else { continue };
                    let member = Member { at, off, size, id: inst.id, ty: inst.ty };
                    match open.iter_mut().find(|g| g.root == *root && off >= g.start() && g.end().max(off + size) - g.start() <= 16) {
                        Some(g) => g.members.push(member),
                        None => open.push(Group { root: root.clone(), ptr: inst.ops[0], align, members: vec![member] }),
                    }
                }
                done.append(&mut open);
                let groups: Vec<(Group, u32)> = done.into_iter().filter_map(|g| g.unit().map(|u| (g, u))).collect();
                if groups.is_empty() {
                    continue;
                }
                combined += groups.iter().map(|(g, _)| g.members.len() as u32).sum::<u32>();
                blk.insts = rewrite_block(&mut b, blk.label, std::mem::take(&mut blk.insts), &groups);
            }
        }
    }
    m.functions = functions;
    combined
}

/// May `inst` write memory a physical pointer reaches, or order other invocations' writes?
fn writes(inst: &Inst) -> bool {
    matches!(inst.op, op::STORE | op::COPY_MEMORY | OP_COPY_MEMORY_SIZED | op::FUNCTION_CALL | OP_CONTROL_BARRIER | OP_MEMORY_BARRIER | OP_IMAGE_WRITE) || is_atomic(inst.op)
}

/// What following a pointer back to its root needs: a function's chains and result types.
struct Chains<'a, 'm> {
    b: &'a Builder<'m>,
    layouts: &'a Layouts,
    defs: &'a HashMap<u32, Inst>,
    types: &'a HashMap<u32, u32>,
}

impl Chains<'_, '_> {
    /// A load `inst` may be combined: through a physical pointer at a constant byte offset
    /// from its root, of 32/64-bit scalars or vectors or a physical pointer, with plain memory
    /// operands; (place, offset, size, Aligned).
    fn candidate(&self, inst: &Inst) -> Option<(Place, u32, u32, u32)> {
        if inst.op != op::LOAD {
            return None;
        }
        let mem = &inst.ops[1..];
        if split_memory_operands(mem).0 & !PLAIN_MEMORY_OPERANDS != 0 {
            return None;
        }
        let b = self.b;
        let size = match b.scalar_vec(inst.ty) {
            Some(sv) if sv.width >= 32 => sv.n * sv.width / 8,
            Some(_) => return None,
            None => match b.pointer(inst.ty) {
                Some((sc::PHYSICAL_STORAGE_BUFFER, _)) => 8,
                _ => return None,
            },
        };
        // The alignment the lowering reads (`memory::access_alignment`); one it refuses for
        // these (below 4 bytes, a non-power-of-two counting as 1:
        // VUID-StandaloneSpirv-PhysicalStorageBuffer64-06314) leaves the load alone, to be
        // reported there rather than hidden in a unit.
        let align = super::memory::access_alignment(mem);
        if align < 4 {
            return None;
        }
        let (root, off) = self.root_offset(inst.ops[0])?;
        Some((root, off, size, align))
    }

    /// The place physical pointer `ptr` derives from by access chains through structs, arrays
    /// and vectors, and the constant byte offset from it: `ptr` itself where a step is not such
    /// (a matrix, a layout not given); None where `ptr` is not a physical pointer.
    fn root_offset(&self, ptr: u32) -> Option<(Place, u32)> {
        let b = self.b;
        let ty = self.types.get(&ptr).copied().or_else(|| b.global(ptr).map(|g| g.ty))?;
        if !matches!(b.pointer(ty), Some((sc::PHYSICAL_STORAGE_BUFFER, _))) {
            return None;
        }
        Some(self.chain_offset(ptr).unwrap_or_else(|| (smallvec::smallvec![ptr], 0)))
    }

    /// [`Chains::root_offset`] of a chain `ptr`.
    fn chain_offset(&self, ptr: u32) -> Option<(Place, u32)> {
        let b = self.b;
        let chain = self.defs.get(&ptr)?;
        let base = chain.ops[0];
        let (mut place, mut off) = self.root_offset(base)?;
        let (_, mut ty) = b.pointer(self.types.get(&base).copied().or_else(|| b.global(base).map(|g| g.ty))?)?;
        for &idx in &chain.ops[1..] {
            let t = b.global(ty)?;
            let (stride, next) = match t.op {
                op::TYPE_STRUCT => {
                    let i = u32::try_from(b.const_value(idx)?).ok()?;
                    off = off.checked_add(self.layouts.member_offset(ty, i)?)?;
                    ty = *t.ops.get(i as usize)?;
                    continue;
                }
                op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => (self.layouts.array_stride(ty)?, t.ops[0]),
                op::TYPE_VECTOR => (b.scalar_vec(t.ops[0])?.width / 8, t.ops[0]),
                _ => return None,
            };
            match b.const_value(idx).and_then(|i| u32::try_from(i).ok()) {
                Some(i) => off = off.checked_add(stride.checked_mul(i)?)?,
                None => {
                    place.extend([off, idx, stride]);
                    off = 0;
                }
            }
            ty = next;
        }
        Some((place, off))
    }
}

/// `insts` (of block `label`) with each group's loads replaced by parts of one load of its
/// unit, made where its first load was.
fn rewrite_block(b: &mut Builder, label: u32, insts: Vec<Inst>, groups: &[(Group, u32)]) -> Vec<Inst> {
    // Instruction index → (group, member) for the loads to replace.
    let mut at: HashMap<usize, (usize, usize)> = HashMap::default();
    for (g, (group, _)) in groups.iter().enumerate() {
        for (k, m) in group.members.iter().enumerate() {
            at.insert(m.at, (g, k));
        }
    }
    let u32t = b.t_u32();
    let mut wide = vec![0; groups.len()];
    let mut e = Emitter::with_capacity(label, insts.len() + 4 * groups.len());
    for (n, inst) in insts.into_iter().enumerate() {
        let Some(&(g, k)) = at.get(&n) else {
            e.push(inst);
            continue;
        };
        let (group, unit) = (&groups[g].0, groups[g].1);
        let words = unit / 4;
        if k == 0 {
            // The group's first load: the unit's, through its pointer (the same address).
            let unit_ty = b.t_vec(u32t, words);
            let ptr_ty = b.t_ptr(sc::PHYSICAL_STORAGE_BUFFER, unit_ty);
            let p = e.op(b, op::BITCAST, ptr_ty, ops![group.ptr]);
            wide[g] = e.op(b, op::LOAD, unit_ty, ops![p, 0x2, unit]);
        }
        let m = &group.members[k];
        let v = units::part(&mut e, b, wide[g], words, m.ty, m.size / 4, m.off - group.start());
        e.push(Inst::new(op::COPY_OBJECT, m.ty, m.id, ops![v]));
    }
    e.take_insts()
}
