//! The layer's table of storage buffers ([`BdaTable`]) as the shader sees it: one array
//! variable per alias view (`struct { uint8_t/uint16_t/uint/uvec2/uvec4 data[]; }`, and one of
//! the value's type for 64-bit and float atomics), all on the table's set and binding (Vulkan lets variables of
//! compatible types alias one binding), indexed by the address's slot with NonUniform.
use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashSet as HashSet;

use crate::bda::BdaTable;
use crate::builder::{deco, sc, Builder, Emitter};
use crate::byte_address::{AliasKind, AliasViews, Backend};
use crate::module::{op, Inst, Module};
use crate::ops;

use super::address::Decoded;
use crate::passes::raw_access_chains::control_flow::waterfall_length;

/// One entry per view of the table ([`AliasKind::ALL`] at most).
type Views<T> = smallvec::SmallVec<[T; 5]>;

/// A buffer of the table, found from an address. Pointers to its views are made as accesses
/// need them: a view no access uses is never declared (nor its 8/16-bit capability).
#[derive(Clone)]
pub(super) struct Located {
    /// Byte offset of the address in the buffer.
    pub offset: u32,
    /// Byte length of the buffer; 0 when the address is outside the table.
    pub len: u32,
    slot: u32,
    /// The slot is dynamically uniform ([`Table::uniform_slots`]): its chains need no NonUniform.
    uniform: bool,
    // (The table's few views, inline: a Located is made per access where accesses are emitted
    // in place, and four heap lists each were a good part of that.)
    kinds: Views<AliasKind>,
    vars: Views<u32>,
    struct_ptrs: Views<u32>,
    /// Pointer to each view's struct, in the views' order; 0 until needed.
    view_ptrs: Views<u32>,
    /// The typed view's struct (64-bit and float atomics).
    pub typed: Option<u32>,
    /// Table variables used.
    pub used: BTreeSet<u32>,
}

impl Located {
    /// The slot (an id).
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// Whether the slot is dynamically uniform (no NonUniform on accesses through it).
    pub fn uniform(&self) -> bool {
        self.uniform
    }

    /// The same buffer table at another slot (no view pointers made yet, nothing used).
    pub fn at_slot(&self, slot: u32) -> Located {
        Located { slot, uniform: false, view_ptrs: smallvec::smallvec![0; self.vars.len()], typed: None, used: BTreeSet::new(), ..self.clone() }
    }

    /// Pointers to the views' structs, in the views' order, made for `need` (others stay 0).
    pub fn view_ptrs(&mut self, e: &mut Emitter, b: &mut Builder, need: &[AliasKind]) -> &[u32] {
        for k in need {
            let n = self.kinds.iter().position(|x| x == k).expect("views come from the target's");
            if self.view_ptrs[n] == 0 {
                self.view_ptrs[n] = chain(e, b, self.struct_ptrs[n], self.vars[n], self.slot, self.uniform);
                self.used.insert(self.vars[n]);
            }
        }
        &self.view_ptrs
    }
}

/// How a buffer's length is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Length {
    /// The slot is dynamically uniform: a plain OpArrayLength (no NonUniform).
    Uniform,
    /// A NonUniform OpArrayLength.
    NonUniform,
    /// One slot at a time in a subgroup loop (Target::nonuniform_array_length_broken).
    Waterfall,
}

pub(super) struct Table {
    cfg: BdaTable,
    /// Array variable per view, in the views' order.
    vars: Vec<u32>,
    kinds: Vec<AliasKind>,
    /// Pointer to each view's struct, in the views' order.
    struct_ptrs: Vec<u32>,
    /// The first id the table's declarations took: types from there on are its own.
    first_id: u32,
    /// Typed views by element type: (pointer to the struct, array variable), declared on
    /// first use.
    typed: BTreeMap<u32, (u32, u32)>,
    /// Function → table variables it uses (for the entry points' interfaces).
    pub used_by: BTreeMap<u32, BTreeSet<u32>>,
    /// The 8/16-byte view every access is one unit of (`one_unit` in the module): lengths are
    /// taken through it, in whole units, and the word view is not needed for them.
    pub length_unit: Option<AliasKind>,
    /// Slots decoded from a dynamically uniform address (a push-constant or global class,
    /// `super::roots`): their chains are not NonUniform (SPIR-V spec 2.19, "Uniformity": the
    /// decoration is for indices that may differ within the invocation group), so a driver
    /// that expands non-uniform descriptor indexing per lane (lavapipe) does not for them.
    pub uniform_slots: HashSet<u32>,
}

impl Table {
    /// Declares the views the backend's target can have (8/16-bit ones with its storage
    /// features) in `backend` and their array variables.
    pub fn new(b: &mut Builder, cfg: BdaTable, backend: &mut Backend) -> Self {
        let first_id = b.m.header[3];
        let target = backend.target;
        let kinds: Vec<AliasKind> = AliasKind::ALL.into_iter().filter(|k| k.available(&target, sc::STORAGE_BUFFER)).collect();
        let views = AliasViews::new(b, sc::STORAGE_BUFFER, kinds.clone());
        let vars = views.struct_ty.clone().into_iter().map(|st| declare(b, &cfg, st)).collect();
        let struct_ptrs = views.struct_ptr.clone();
        backend.views.insert(sc::STORAGE_BUFFER, views);
        Table { cfg, vars, kinds, struct_ptrs, first_id, typed: BTreeMap::new(), used_by: BTreeMap::new(), length_unit: None, uniform_slots: HashSet::default() }
    }

    /// The declarations of the views no access used: each view's variable and the types only it
    /// needs (its array, alias struct and their pointers; an 8/16-bit element type the table
    /// added, which would need its storage capability).
    pub fn unused_declarations(&self, m: &Module) -> HashSet<u32> {
        let used: BTreeSet<u32> = self.used_by.values().flatten().copied().collect();
        let index = m.global_index();
        let def = |id: u32| index.get(&id).map(|&n| &m.globals[n]);
        let pointer_to = |pointee: u32| m.globals.iter().find(|g| g.op == op::TYPE_POINTER && g.ops[..] == [sc::STORAGE_BUFFER, pointee]).map(|g| g.id);
        let mut gone = HashSet::default();
        for (n, &var) in self.vars.iter().enumerate().filter(|(_, v)| !used.contains(v)) {
            let var_ty = def(var).expect("declared").ty;
            let arr = def(var_ty).expect("declared").ops[1];
            let st = def(arr).expect("declared").ops[0];
            let rta = def(st).expect("declared").ops[0];
            let elem = def(rta).expect("declared").ops[0];
            gone.extend([var, var_ty, arr, st, rta]);
            gone.extend(pointer_to(st));
            gone.extend(pointer_to(elem).filter(|&p| p >= self.first_id));
            if matches!(self.kinds[n], AliasKind::U8 | AliasKind::U16) && elem >= self.first_id {
                gone.insert(elem);
            }
        }
        gone
    }

    /// Every table variable declared (the views', the typed views').
    pub fn variables(&self) -> HashSet<u32> {
        self.vars.iter().copied().chain(self.typed.values().map(|&(_, v)| v)).collect()
    }

    /// The view of a table variable (None: the 64-bit one).
    pub fn kind_of(&self, var: u32) -> Option<AliasKind> {
        self.vars.iter().position(|&v| v == var).map(|n| self.kinds[n])
    }

    /// Slots in the table (0: every address lies outside).
    pub fn count(&self) -> u32 {
        self.cfg.count
    }

    /// The buffer at `d.slot`, at byte `d.offset`, `len` bytes long. Pointers to its views are
    /// made as accesses need them (NonUniform: the pointers, not the slot, must be decorated,
    /// Vulkan "Descriptor Indexing").
    pub fn at(&self, d: &Decoded, len: u32) -> Located {
        Located {
            offset: d.offset,
            len,
            slot: d.slot,
            uniform: self.uniform_slots.contains(&d.slot),
            kinds: Views::from_slice(&self.kinds),
            vars: Views::from_slice(&self.vars),
            struct_ptrs: Views::from_slice(&self.struct_ptrs),
            view_ptrs: smallvec::smallvec![0; self.vars.len()],
            typed: None,
            used: BTreeSet::new(),
        }
    }

    /// The byte length of the buffer `d` names, as `how` says: taken at the slot clamped to the
    /// table (slot 0 outside it, which holds a null descriptor) and selected to 0 outside the
    /// table, without a branch (lavapipe crashes on an OpArrayLength in a branch no invocation
    /// of the subgroup takes).
    pub fn length(&self, e: &mut Emitter, b: &mut Builder, backend: &Backend, d: &Decoded, how: Length, used: &mut BTreeSet<u32>) -> u32 {
        // The one unit every access is (exact for all of them), else the backend's length view.
        let length_view = self.length_unit.unwrap_or(backend.length_view(sc::STORAGE_BUFFER));
        let n = self.kinds.iter().position(|&k| k == length_view).expect("the length view is declared");
        let (var, struct_ptr) = (self.vars[n], self.struct_ptrs[n]);
        used.insert(var);
        let u32t = b.t_u32();
        let zero = b.c_u32(0);
        let length = |e: &mut Emitter, b: &mut Builder| {
            if how == Length::Waterfall {
                // One OpArrayLength per subgroup on such drivers: one slot at a time.
                waterfall_length(e, b, backend, length_view, var, struct_ptr, d.slot)
            } else {
                let p = e.op(b, op::ACCESS_CHAIN, struct_ptr, ops![var, d.slot]);

                if how == Length::NonUniform {
                    b.decorate(p, deco::NON_UNIFORM, &[]);
                }
                backend.length_of_view(e, b, length_view, p)
            }
        };
        let l = length(e, b);
        e.op(b, op::SELECT, u32t, ops![d.in_table, l, zero])
    }

    /// A pointer to the typed view (`struct { elem data[]; }`, 64-bit and float atomics) at
    /// `slot`; its variable goes into `used`.
    pub fn typed_view(&mut self, e: &mut Emitter, b: &mut Builder, elem: u32, slot: u32, used: &mut BTreeSet<u32>) -> u32 {
        let (ptr, var) = *self.typed.entry(elem).or_insert_with(|| typed_view(b, &self.cfg, elem));
        used.insert(var);
        chain(e, b, ptr, var, slot, self.uniform_slots.contains(&slot))
    }

    /// Records that `function` used the variables of `at`.
    pub fn used(&mut self, function: u32, at: &Located) {
        self.used_by.entry(function).or_default().extend(at.used.iter().copied());
    }
}

/// `&var[slot]`, NonUniform unless the slot is dynamically uniform.
fn chain(e: &mut Emitter, b: &mut Builder, ptr: u32, var: u32, slot: u32, uniform: bool) -> u32 {
    let p = e.op(b, op::ACCESS_CHAIN, ptr, ops![var, slot]);
    if !uniform {
        b.decorate(p, deco::NON_UNIFORM, &[]);
    }
    p
}

/// An array of `count` alias structs `st` on the table's set and binding.
fn declare(b: &mut Builder, cfg: &BdaTable, st: u32) -> u32 {
    // A zero-length array is invalid: at least one descriptor (never indexed when count is 0).
    let n = b.c_u32(cfg.count.max(1));
    let arr = b.id();
    b.add_global(Inst::new(op::TYPE_ARRAY, 0, arr, ops![st, n]));
    let ptr = b.t_ptr(sc::STORAGE_BUFFER, arr);
    let v = b.id();
    b.add_global(Inst::new(op::VARIABLE, ptr, v, ops![sc::STORAGE_BUFFER]));
    b.decorate(v, deco::DESCRIPTOR_SET, &[cfg.set]);
    b.decorate(v, deco::BINDING, &[cfg.binding]);
    b.decorate(v, deco::ALIASED, &[]);
    v
}

/// `struct { T data[]; }` for a 32/64-bit scalar `T` and its array variable: (pointer to the
/// struct, variable).
fn typed_view(b: &mut Builder, cfg: &BdaTable, elem: u32) -> (u32, u32) {
    let bytes = b.scalar_vec(elem).expect("a scalar").width / 8;
    let rta = b.t_runtime_array(elem, bytes);
    let st = b.t_struct(&[rta]);
    b.decorate(st, deco::BLOCK, &[]);
    b.m.member_decorate(st, 0, deco::OFFSET, &[0]);
    (b.t_ptr(sc::STORAGE_BUFFER, st), declare(b, cfg, st))
}
