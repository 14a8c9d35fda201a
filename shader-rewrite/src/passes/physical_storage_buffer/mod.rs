//! SPV_KHR_physical_storage_buffer → core SPIR-V on a layer-owned table of storage buffers
//! ([`BdaTable`]), for devices without `bufferDeviceAddress`.
//!
//! The layer gives every device-address buffer a slot in the table and fake addresses
//! `0xD3 << 56 | slot << 32 | (offset ^ 2^31)` ([`crate::bda`]). The lowering:
//!
//! 0. `calls`: the application's one-block functions called once whose signature holds a
//!    physical pointer are inlined at their call (parameters become copies of the arguments),
//!    so a pointer passed in or returned is the caller's pointer, located once with the
//!    caller's others, not a record decoded again in the callee.
//! 1. `combine`: where the driver checks bounds, and vector accesses component by component,
//!    neighbouring loads through one place in one block become one load of an 8- or 16-byte
//!    unit and its parts (one descriptor-indexed access instead of several).
//! 2. `types`: PhysicalStorageBuffer pointers become addresses, uvec2 (`address.rs`),
//!    wherever they are: values, struct members, arrays, variables,
//!    function parameters and results: 8 bytes, as the pointers were in explicit
//!    layouts.
//! 3. `address` and `values`: OpConvertUToPtr, OpConvertPtrToU and OpBitcast to and from
//!    pointers move the value; OpPtrEqual, OpPtrNotEqual and OpPtrDiff compare integers; OpPhi,
//!    OpSelect and calls carry addresses as they carried pointers.
//! 4. `chains`: OpAccessChain, OpPtrAccessChain (Element × the pointer type's ArrayStride) and
//!    their InBounds forms are a byte offset from the pointer's root (explicit layout, constants
//!    folded); the address itself (that offset added to the offset word, wrapping in 32 bits)
//!    is made only where the pointer is used as a value.
//! 5. `roots`: every pointer is a root (phi, parameter, loaded or converted pointer) plus a byte
//!    offset (an OpSelect of two pointers of one root is that root plus a select of their
//!    offsets; a pointer made again from the 64 bits of another is that one); roots loaded
//!    from the same push-constant member are one class (read-only,
//!    dynamically uniform), and a load of what an earlier load of the same place read, with
//!    no write, call, atomic or barrier on any path between, reuses its value (so glslang's
//!    reload of a pointer chain at every use is one class). Each accessed class is *located*
//!    once (`cfg`: at the nearest common dominator of its accesses, hoisted out of the loops
//!    its value does not change in): its address decoded into a record
//!    `uvec3(slot, offset, length)`.
//! 6. `helpers`, `memory` and `atomics`: loads, stores, OpCopyMemory and 32/64-bit integer and
//!    float atomics are calls of helper functions shared by all accesses of a kind (value
//!    type, alignment, memory operands; atomics: opcode and constant operands) with the
//!    record and the offset; composites call one helper per scalar/vector leaf (a composite
//!    accessed once in the module, or any where the driver checks bounds, is split where it is
//!    accessed, its leaves side by side moved as 8/16-byte units, `units`, where `combine`
//!    applies); a helper called once is
//!    inlined (`inline`), constant offsets folded (`fold`). Where the driver checks bounds
//!    (below), a leaf's access and `locate` are a few instructions, emitted in place, and the
//!    other small helpers are inlined at every call: a call costs the drivers more than such a
//!    body (measured, `inline`). Accesses never branch: no block is split.
//! 7. `tidy`: copies of same-typed values, members of just-constructed values and pure
//!    instructions an equal dominating one computed already (a record's members, a re-loaded
//!    push constant) go, and pure instructions nothing uses.
//! 8. `cleanup`: the capability, the extension and the PhysicalStorageBuffer64 addressing model
//!    go (Logical); the capabilities the table needs come in (descriptor indexing, Int64 for u64
//!    addresses, 8/16-bit storage for the byte views the target has and the accesses need).
//!
//! Robustness: an access outside every live buffer never touches a live buffer. An address
//! whose tag is not 0xD3 or whose slot is `>= count` names slot 0 with length 0; otherwise the
//! length is the slot's OpArrayLength (exact bytes through the 8-bit view, whole words when
//! every access is whole aligned words; a plain OpArrayLength for a uniform class, else
//! NonUniform, or one slot at a time in a subgroup waterfall loop under
//! Target::nonuniform_array_length_broken, in the functions of GLCompute and Fragment entry
//! points only; in whole units of the 8/16-byte view every access uses, when they all use one).
//! Each scalar/vector leaf, and each atomic, checks `offset + size <= length` (as
//! `offset < length - size + 1`, or as one `(offset | size - 4) < length` where the length is
//! whole words and the access one unit of the `size`-byte view, `memory::whole_unit_check`):
//! a load outside reads
//! offset 0 (of slot 0 after the one-comparison check; else of the buffer when the size fits
//! in it at all, else of slot 0) and yields 0 (or the debug poison pattern), a store goes
//! to offset 0 of slot 0, atomics branch around and return 0. Without branches: the layer
//! must keep slot 0 (never handed out) holding a null descriptor (or a buffer of at least 16
//! bytes nothing reads), and a valid or null descriptor in every slot below `count`.
//!
//! Where the target has robustBufferAccess2 on (`Target::robust_buffer_access2`: the driver
//! checks every storage-buffer access against its descriptor's range, reading 0 outside and
//! dropping writes and atomics there) and no debug poison is asked for, the driver does all of
//! that: the record is `uvec2(slot, offset)`, no length is taken (no OpArrayLength, no waterfall
//! loop) and the leaves and atomics access `table[slot]` at their offset unchecked. An address
//! outside the table still names slot 0 (indexing a descriptor array out of its bounds is
//! undefined even with robustness).
//!
//! Raw access chains on physical bases (lowered to address arithmetic and OpBitcast) and
//! bindless handles (integers, possibly in physical memory) are lowered before this pass,
//! 8/16-bit storage after it (crate::rewrite).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::bda::BdaTable;
use crate::builder::{model, sc, Builder, Emitter};
use crate::byte_address::{AliasKind, Backend};
use crate::error::RewriteError;
use crate::module::{leading_id_operands, op, Function, Inst, Module};
use crate::stats::Stats;
use crate::target::Options;

use super::layout::{contains_width, Layouts, MatrixLayout};
use super::leaves::{describe, Splitter};
use super::util::{call_tree, forget_ids};

mod address;
mod atomics;
mod blocks;
mod calls;
pub(crate) mod cfg;
mod chains;
mod cleanup;
mod combine;
mod fold;
mod helpers;
mod inline;
mod loops;
mod memory;
mod roots;
mod table;
mod types;
mod units;
mod values;

use address::Addr;
use helpers::Helpers;
use roots::Roots;
use table::Table;
use types::PhysPtr;

const EXECUTION_MODEL_FRAGMENT: u32 = 4;
const EXECUTION_MODEL_GL_COMPUTE: u32 = 5;

pub fn run(m: &mut Module, cfg: &BdaTable, options: &Options, stats: &mut Stats) -> Result<(), RewriteError> {
    let inlined = calls::inline_pointer_functions(m);
    stats.physical_inlined_functions += (inlined.len() / 2) as u32;
    forget_ids(m, &inlined);
    if options.bda_bounds_by_driver() && options.target.robust_vector_components {
        stats.physical_combined_loads += combine::adjacent_loads(m, &Layouts::read(m));
    }
    let (addr_ty, u32t) = types::address_type(m);
    let addr = Addr { ty: addr_ty };
    let retyped = types::retype_globals(m, addr_ty, u32t)?;
    let layouts = Layouts::read(m);
    let mut functions = std::mem::take(&mut m.functions);
    let lowered = lower(m, &mut functions, cfg, options, addr, &retyped, &layouts, stats);
    m.functions = functions;
    let (table, addr_values, mut elided) = lowered?;
    types::retype_functions(m, &retyped.ptrs, addr_ty);
    elided.extend(super::tidy::tidy(m, Default::default()));
    cleanup::finish(m, table, &addr_values, &elided);
    Ok(())
}

/// Lowers every function body; returns the table, the ids that held pointers and the pointer
/// ids no longer defined (access chains only accessed through).
#[allow(clippy::too_many_arguments)]
fn lower(
    m: &mut Module,
    functions: &mut Vec<Function>,
    cfg: &BdaTable,
    options: &Options,
    addr: Addr,
    retyped: &types::Retyped,
    layouts: &Layouts,
    stats: &mut Stats,
) -> Result<(Table, HashSet<u32>, HashSet<u32>), RewriteError> {
    let vulkan_mm = m.memory_model.first().is_some_and(|i| i.ops.get(1) == Some(&model::MEMORY_MODEL_VULKAN));
    let old_select = m.version() < (1, 4);
    // The waterfall loop needs subgroup operations: only in functions no entry point of another
    // stage than GLCompute or Fragment calls (where lavapipe, the driver with the length quirk,
    // has them; its VkPhysicalDeviceSubgroupProperties::supportedStages lacks the others).
    let without_subgroups: HashSet<u32> = m
        .entry_points
        .iter()
        .filter(|ep| !matches!(ep.ops[0], EXECUTION_MODEL_FRAGMENT | EXECUTION_MODEL_GL_COMPUTE))
        .flat_map(|ep| call_tree(functions, ep.ops[1]))
        .collect();
    let mut b = Builder::new(m);
    let mut backend = Backend::new(options.target, options.oob_poison, vulkan_mm);
    // Sized once: an entry per result of every function (rehashing as it grew was a good part
    // of a large module's lowering).
    let results: usize = functions.iter().map(|f| f.params.len() + f.blocks.iter().map(|b| b.insts.len()).sum::<usize>()).sum();
    let mut types: HashMap<u32, u32> = HashMap::with_capacity_and_hasher(results, Default::default());
    for f in functions.iter() {
        for i in f.params.iter().chain(f.blocks.iter().flat_map(|blk| blk.insts.iter())) {
            if i.id != 0 {
                types.insert(i.id, i.ty);
            }
        }
    }
    let words_only = words_only(&b, functions, &types, retyped);
    if words_only {
        // Every access is a whole number of 4-aligned words, so the word view's length is exact
        // too: no 8/16-bit view is declared, and the backend never plans one (a leaf an invalid
        // layout misaligns, an odd MatrixStride, still goes through word parts).
        let t = &mut backend.target;
        (t.storage_buffer_8bit, t.storage_buffer_16bit, t.uniform_and_storage_buffer_8bit, t.uniform_and_storage_buffer_16bit) = (false, false, false, false);
    }
    let mut table = Table::new(&mut b, *cfg, &mut backend);
    table.length_unit = one_unit(&b, functions, &types, retyped);
    // Bounds left to the driver's robustBufferAccess2 where it has it on, unless out-of-range
    // loads must return the debug poison byte (only the lowering's own checks can).
    let checked = !options.bda_bounds_by_driver();
    let mut cx = Cx {
        b: &mut b,
        layouts,
        h: Helpers::new(backend, table, addr, layouts, old_select, checked),
        ptrs: &retyped.ptrs,
        global_values: &retyped.global_values,
        types: &types,
        splitter: Splitter::keeping_f16(layouts),
        stats,
        waterfall: false,
        old_select,
        int64_target: options.target.int64,
        roots: Roots::default(),
        // (Pointers are a part of the results: room for a quarter of them.)
        deltas: HashMap::with_capacity_and_hasher(results / 4, Default::default()),
        shapes: HashMap::with_capacity_and_hasher(results / 4, Default::default()),
        records: HashMap::default(),
        elided: HashSet::with_capacity_and_hasher(results / 4, Default::default()),
        composites: HashMap::default(),
    };
    if checked {
        // (Unchecked, every composite is split where it is accessed: no count needed.)
        cx.count_composites(functions);
    }
    for f in functions.iter_mut() {
        cx.waterfall = checked && options.target.nonuniform_array_length_broken && !without_subgroups.contains(&f.def.id);
        cx.lower_blocks(f)?;
    }
    cx.stats.atomic_subword_stores += cx.h.backend.atomic_subword_stores;
    let addr_values = types.iter().filter(|(_, t)| retyped.ptrs.contains_key(t)).map(|(&id, _)| id).collect();
    let helper_ids: HashSet<u32> = cx.h.functions.iter().map(|f| f.def.id).collect();
    functions.append(&mut cx.h.functions);
    {
        // A helper called once costs a function for nothing, a small one more driver work
        // than its body (`inline`): their bodies replace the calls. (Rounds: a helper inlined
        // into another's body is inlined from there by the next; the deepest nesting is a
        // composite's helper calling its leaves'.)
        let (mut gone, mut inlined) = inline::inline_single_calls(cx.b, functions, &helper_ids);
        for _ in 0..3 {
            let (g, i) = inline::inline_single_calls(cx.b, functions, &helper_ids);
            let done = i.is_empty();
            gone.extend(g);
            inlined.extend(i);
            if done {
                break;
            }
        }
        let (gone_too, inlined_too) = inline::inline_branching_single_calls(cx.b, functions, &helper_ids);
        gone.extend(gone_too);
        inlined.extend(inlined_too);
        for (caller, helper) in inlined {
            let vars = cx.h.table.used_by.get(&helper).cloned().unwrap_or_default();
            cx.h.table.used_by.entry(caller).or_default().extend(vars);
        }
        cx.h.table.used_by.retain(|f, _| !gone.contains(f));
        cx.elided.extend(gone);
    }
    if options.target.nonuniform_access_per_lane {
        let vars = cx.h.table.variables();
        let accesses = |i: &Inst| match i.op {
            // (A uniform slot too: gallivm loops over the lanes for any per-lane offset.)
            op::ACCESS_CHAIN => i.ops.first().is_some_and(|v| vars.contains(v)),
            op::FUNCTION_CALL => i.ops.first().is_some_and(|f| helper_ids.contains(f)),
            _ => false,
        };
        cx.stats.physical_rolled_loops += loops::keep_rolled(functions, accesses);
    }
    let mut elided = std::mem::take(&mut cx.elided);
    elided.extend(cx.h.dead.drain());
    Ok((cx.h.table, addr_values, elided))
}

/// Is every access through a physical pointer a whole number of 4-aligned words (no 8/16-bit
/// scalar in what it moves, `Aligned` at least 4)? Member offsets of 32/64-bit scalars are
/// multiples of 4 in every Vulkan layout, so then each leaf is too.
fn words_only(b: &Builder, functions: &[Function], types: &HashMap<u32, u32>, retyped: &types::Retyped) -> bool {
    let pointee = |id: u32| types.get(&id).or_else(|| retyped.global_values.get(&id)).and_then(|t| retyped.ptrs.get(t)).map(|p| p.pointee);
    let aligned = |mem: &[u32]| memory::access_alignment(mem) >= 4;
    functions.iter().flat_map(|f| f.blocks.iter()).flat_map(|blk| blk.insts.iter()).all(|i| {
        let through = |k: usize| i.ops.get(k).and_then(|&p| pointee(p));
        let (ptr, mem) = match i.op {
            op::LOAD => (through(0), i.ops.get(1..).unwrap_or(&[])),
            op::STORE => (through(0), i.ops.get(2..).unwrap_or(&[])),
            // Either side (its operands are checked as the first side's, conservatively).
            op::COPY_MEMORY => (through(0).or(through(1)), i.ops.get(2..).unwrap_or(&[])),
            opcode if is_atomic(opcode) => return through(0).is_none_or(|t| !contains_width(b, t, &[8, 16])),
            _ => return true,
        };
        ptr.is_none_or(|t| !contains_width(b, t, &[8, 16]) && aligned(mem))
    })
}

/// The view every access through a physical pointer is one unit of, when they all are one
/// unit of the same 8- or 16-byte view: only loads and stores of a 64/128-bit scalar or vector
/// with `Aligned` at least its size (no composite, copy or atomic). A buffer's length counted
/// in those units is then exact for every access (an aligned unit fits in L bytes exactly when
/// it fits in the whole units of L), so the word view need not be declared for it.
fn one_unit(b: &Builder, functions: &[Function], types: &HashMap<u32, u32>, retyped: &types::Retyped) -> Option<AliasKind> {
    let pointee = |id: u32| types.get(&id).or_else(|| retyped.global_values.get(&id)).and_then(|t| retyped.ptrs.get(t)).map(|p| p.pointee);
    let mut unit = None;
    for i in functions.iter().flat_map(|f| f.blocks.iter()).flat_map(|blk| blk.insts.iter()) {
        let through = |k: usize| i.ops.get(k).and_then(|&p| pointee(p));
        let (ty, mem) = match i.op {
            op::LOAD => (through(0), i.ops.get(1..).unwrap_or(&[])),
            op::STORE => (through(0), i.ops.get(2..).unwrap_or(&[])),
            op::COPY_MEMORY if through(0).or(through(1)).is_some() => return None,
            opcode if is_atomic(opcode) && through(0).is_some() => return None,
            _ => continue,
        };
        let Some(ty) = ty else { continue };
        let sv = b.scalar_vec(ty)?;
        let size = sv.n * sv.width / 8;
        let kind = match size {
            8 => AliasKind::U32x2,
            16 => AliasKind::U32x4,
            _ => return None,
        };
        if memory::access_alignment(mem) < size || unit.is_some_and(|u| u != kind) {
            return None;
        }
        unit = Some(kind);
    }
    unit
}

/// Lowering state.
struct Cx<'a, 'm> {
    b: &'a mut Builder<'m>,
    layouts: &'a Layouts,
    /// The helper functions, and the backend and table they emit through.
    h: Helpers<'a>,
    /// The input's pointer types.
    ptrs: &'a HashMap<u32, PhysPtr>,
    /// Global null/undef pointers → their pointer type.
    global_values: &'a HashMap<u32, u32>,
    /// Result types of function-local ids, as in the input.
    types: &'a HashMap<u32, u32>,
    /// Splits values holding 8/16-bit scalars in callers.
    splitter: Splitter<'a>,
    stats: &'a mut Stats,
    /// Take buffer lengths in a subgroup waterfall loop (Target::nonuniform_array_length_broken)
    /// in the function being lowered, for values not known to be uniform.
    waterfall: bool,
    /// SPIR-V < 1.4: OpSelect of vectors wants a vector condition.
    old_select: bool,
    int64_target: bool,
    /// The function being lowered: its roots and classes.
    roots: Roots,
    /// Pointer → byte offset from its root (u32 id), for derived pointers.
    deltas: HashMap<u32, u32>,
    /// Derived pointers into a matrix, an array of matrices or a row-major matrix's column →
    /// the layout their chain stepped into (the enclosing struct member's MatrixStride and
    /// RowMajor, the column's component stride): the pointee type alone does not say it.
    shapes: HashMap<u32, Shape>,
    /// Class → its record (the `locate` result), once emitted.
    records: HashMap<usize, u32>,
    /// Derived pointers whose address was never needed as a value (left undefined).
    elided: HashSet<u32>,
    /// Composite accesses of the module by what their helper would be (store, type,
    /// alignment, memory operands) → how many ([`memory::CompositeKey`]).
    composites: HashMap<memory::CompositeKey, u32>,
}

/// Atomic opcodes (OpAtomicLoad..OpAtomicXor, flag ops, min/max/float add).
fn is_atomic(opcode: u32) -> bool {
    matches!(opcode, 227..=242 | 318 | 319 | 5614 | 5615 | 6035)
}

/// Instructions that only move values: an address passes through them as the pointer did.
fn moves_values(opcode: u32) -> bool {
    matches!(
        opcode,
        op::PHI | op::SELECT | op::FUNCTION_CALL | op::RETURN_VALUE | op::STORE | op::COPY_OBJECT | op::COMPOSITE_CONSTRUCT | op::COMPOSITE_INSERT | op::COPY_LOGICAL | op::EXT_INST
    )
}

/// A derived pointer's matrix layout and component stride ([`Cx::shapes`]).
type Shape = (MatrixLayout, u32);

const PTR_EQUAL: u32 = 401;
const PTR_NOT_EQUAL: u32 = 402;
const PTR_DIFF: u32 = 403;

impl Cx<'_, '_> {
    /// The input type of `id`.
    fn type_of(&self, id: u32) -> u32 {
        self.types.get(&id).copied().or_else(|| self.global_values.get(&id).copied()).or_else(|| self.b.global(id).map(|g| g.ty)).unwrap_or(0)
    }

    /// The pointer type of `id`, if it was a physical pointer.
    fn phys(&self, id: u32) -> Option<PhysPtr> {
        self.ptrs.get(&self.type_of(id)).copied()
    }

    fn addr(&self) -> Addr {
        self.h.addr
    }

    fn rewrite(&mut self, e: &mut Emitter, inst: Inst) -> Result<(), RewriteError> {
        let first = inst.ops.first().copied().unwrap_or(0);
        let result_is_ptr = self.ptrs.contains_key(&inst.ty);
        let first_is_ptr = self.phys(first).is_some();
        match inst.op {
            op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | op::PTR_ACCESS_CHAIN | op::IN_BOUNDS_PTR_ACCESS_CHAIN if first_is_ptr => self.chain(e, &inst)?,
            // A pointer-to-pointer copy or bitcast is the same address.
            op::COPY_OBJECT | op::BITCAST if result_is_ptr && first_is_ptr => self.chain(e, &inst)?,
            // The address made again from its bits (`roots::Derived::Bits`): a copy of it.
            op::CONVERT_U_TO_PTR | op::BITCAST if self.roots.bits_of.contains_key(&inst.id) => {
                let p = self.roots.bits_of[&inst.id];
                self.chain(e, &Inst::new(op::COPY_OBJECT, inst.ty, inst.id, crate::ops![p]))?
            }
            op::SELECT if result_is_ptr && self.roots.root_of.get(&inst.id).is_some_and(|&r| r != inst.id) => self.select_offset(e, &inst)?,
            op::CONVERT_U_TO_PTR | op::BITCAST if result_is_ptr => {
                let ty = self.type_of(first);
                self.addr().value_to_address(e, self.b, first, ty, inst.id);
            }
            op::CONVERT_PTR_TO_U | op::BITCAST if first_is_ptr => self.addr().address_to_value(e, self.b, first, inst.ty, inst.id),
            op::LOAD if first_is_ptr => self.load(e, &inst)?,
            op::STORE if first_is_ptr => self.store(e, &inst)?,
            op::COPY_MEMORY if first_is_ptr || inst.ops.get(1).is_some_and(|&s| self.phys(s).is_some()) => self.copy_memory(e, &inst)?,
            opcode if is_atomic(opcode) && first_is_ptr => self.atomic(e, &inst)?,
            PTR_EQUAL | PTR_NOT_EQUAL if first_is_ptr => {
                self.addr().compare(e, self.b, first, inst.ops[1], inst.op == PTR_EQUAL, inst.ty, inst.id);
            }
            PTR_DIFF if first_is_ptr => self.diff(e, &inst)?,
            op::SELECT if result_is_ptr && self.old_select => self.select(e, inst),
            opcode if moves_values(opcode) => e.push(inst),
            _ => {
                let n = leading_id_operands(inst.op).min(inst.ops.len());
                if let Some(&id) = inst.ops[..n].iter().find(|&&id| self.phys(id).is_some()) {
                    return Err(RewriteError::unsupported(
                        describe(&inst),
                        format!("uses %{id}, a PhysicalStorageBuffer pointer, in a way the lowering cannot follow (supported: conversions, access chains, loads, stores, OpCopyMemory, integer atomics, comparisons, phis, selects, calls)"),
                    ));
                }
                e.push(inst);
            }
        }
        Ok(())
    }
}
