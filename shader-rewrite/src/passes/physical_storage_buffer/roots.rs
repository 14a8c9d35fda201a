//! Which buffer each access goes to, decided once per pointer value instead of per access.
//!
//! Every physical pointer of a function is a *root* (a value the lowering cannot see through: a
//! phi, a parameter, a pointer loaded from memory, a converted integer, a call's result) plus a
//! byte offset (access chains, copies and pointer-to-pointer bitcasts of a root; a select of
//! two pointers of one root, its offset selected; a pointer made again from the 64 bits of
//! one, [`Derived`]). Roots fall
//! into *classes* of equal values: a pointer (or a converted integer) loaded from the same
//! push-constant member with constant indices is the same value wherever it is loaded (push
//! constants are read-only and dynamically uniform), so are uses of one global null/undef; every
//! other root is its own class.
//!
//! Each class whose pointers are accessed is *located* once (its address decoded into slot,
//! offset and buffer length; [`super::helpers`]) at one place that dominates all its accesses:
//! the nearest common dominator of their blocks, moved out of every loop the class's value is
//! defined outside of (a push-constant class is defined everywhere), before the first access
//! when that block has one, else at its end. Accesses then only add their offset and check it.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::cfg::Cfg;

/// The Private storage class.
const PRIVATE: u32 = 6;
use super::*;

/// A class of equal root values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// Loaded from push-constant variable `.0` at constant indices `.1` (literal values),
    /// possibly converted to a pointer.
    PushConstant(u32, Vec<u64>),
    /// A global value (OpConstantNull, OpUndef).
    Global(u32),
    /// Any other root: itself.
    Value(u32),
}

/// How a located class's address value is made where it is located.
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// An id whose definition dominates the place.
    Id(u32),
    /// Load the push constant again: its pointer (`chain`: an OpAccessChain to re-emit with a
    /// fresh id, or the variable), the loaded type, and whether an integer load is converted.
    PushConstant { chain: Option<Inst>, var: u32, loaded_ty: u32 },
}

pub(super) struct Class {
    pub source: Source,
    /// Dynamically uniform (its length needs no waterfall loop).
    pub uniform: bool,
}

/// The analysis of one function.
#[derive(Default)]
pub(super) struct Roots {
    /// Labels of the blocks not reachable from the entry (their accesses locate on the spot).
    pub unreachable: HashSet<u32>,
    /// Pointer id → its root id.
    pub root_of: HashMap<u32, u32>,
    /// Root id → its class (only roots with accessed pointers).
    pub class_of: HashMap<u32, usize>,
    pub classes: Vec<Class>,
    /// (block label, instruction index) → classes to locate right before that instruction.
    pub place: HashMap<(u32, usize), Vec<usize>>,
    /// Pointers whose address is used as a value (not only accessed or chained from).
    pub needs_value: HashSet<u32>,
    /// Loads that read what an earlier load (the value) read: they become copies of it.
    pub reused: HashMap<u32, u32>,
    /// Pointers made from the bits of another (an integer round trip) → that pointer.
    pub bits_of: HashMap<u32, u32>,
}

/// How a physical pointer is another one plus an offset.
#[derive(Clone, Copy)]
enum Derived {
    /// An access chain, a copy or a pointer-to-pointer bitcast of `ops[0]`.
    Chain,
    /// OpSelect of two pointers of one root: the root plus the selected offset (the pointers'
    /// addresses differ only in the offset word then, both being that root's address plus
    /// their offset).
    Select,
    /// OpConvertUToPtr or OpBitcast of the 64 bits OpConvertPtrToU or OpBitcast made of this
    /// pointer: the same address.
    Bits(u32),
}

/// Where pointers point, interned: a place is a root class and the access-chain steps from it
/// (constant indices by value, others by id; OpPtrAccessChain's Element step marked), and two
/// pointers to equal places get the same place number.
#[derive(Default)]
struct Places {
    keys: HashMap<Key, u32>,
    ids: HashMap<Step, u32>,
}

/// A place: a root (its key's number), or one step from another place.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Step {
    Root(u32),
    Index { from: u32, element: bool, index: Result<u64, u32> },
}

impl Places {
    fn intern(&mut self, step: Step) -> u32 {
        let n = self.ids.len() as u32;
        *self.ids.entry(step).or_insert(n)
    }

    /// The place of a root whose class key is `key`.
    fn root(&mut self, key: Key) -> u32 {
        let n = self.keys.len() as u32;
        let k = *self.keys.entry(key).or_insert(n);
        self.intern(Step::Root(k))
    }

    /// The place `inst` (a step from place `from`) points to.
    fn then(&mut self, cx: &Cx, from: u32, inst: &Inst) -> u32 {
        let element = matches!(inst.op, op::PTR_ACCESS_CHAIN | op::IN_BOUNDS_PTR_ACCESS_CHAIN);
        let indices = if matches!(inst.op, op::COPY_OBJECT | op::BITCAST) { &[][..] } else { &inst.ops[1..] };
        indices.iter().enumerate().fold(from, |from, (k, &i)| self.intern(Step::Index { from, element: element && k == 0, index: cx.b.const_value(i).ok_or(i) }))
    }
}

/// An empty map with room for `n` entries.
fn sized<K, V>(n: usize) -> HashMap<K, V> {
    HashMap::with_capacity_and_hasher(n, Default::default())
}

/// Function-local definitions by id: (block, instruction).
type Defs<'a> = Vec<Option<(usize, &'a Inst)>>;

fn def<'a>(defs: &Defs<'a>, id: u32) -> Option<&'a Inst> {
    defs.get(id as usize).copied().flatten().map(|(_, i)| i)
}

/// Loads still valid: (place, loaded type) → the load.
type Available = HashMap<(u32, u32), u32>;

/// Memory operands a load may carry and still be reused: none, Aligned, Nontemporal (not
/// Volatile, not the availability/visibility ones).
fn plain_memory_operands(mem: &[u32]) -> bool {
    mem.first().is_none_or(|&mask| mask & !0x6 == 0)
}

/// Is `inst` a pointer-to-pointer step of a physical pointer (the result is `ops[0]` plus an
/// offset)?
fn derives(opcode: u32) -> bool {
    matches!(opcode, op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | op::PTR_ACCESS_CHAIN | op::IN_BOUNDS_PTR_ACCESS_CHAIN | op::COPY_OBJECT | op::BITCAST)
}

/// Operand positions of `inst` through which a physical pointer is accessed (not used as a value).
fn access_operands(inst: &Inst) -> &'static [usize] {
    match inst.op {
        op::LOAD | op::STORE => &[0],
        op::COPY_MEMORY => &[0, 1],
        opcode if is_atomic(opcode) => &[0],
        _ => &[],
    }
}

impl Cx<'_, '_> {
    /// Roots, classes and placements of `f` (before it is lowered).
    pub(super) fn analyze(&self, f: &Function) -> Roots {
        let cfg = Cfg::new(f);
        // Maps sized once for the function (grown an insert at a time, their rehashing was a
        // tenth of a large module's lowering): a pointer per few instructions at most.
        let n: usize = f.params.len() + f.blocks.iter().map(|b| b.insts.len()).sum::<usize>();
        let mut root_of: HashMap<u32, u32> = sized(n / 2);
        let mut needs_value: HashSet<u32> = HashSet::with_capacity_and_hasher(n / 4, Default::default());
        for p in f.params.iter().filter(|p| self.ptrs.contains_key(&p.ty)) {
            root_of.insert(p.id, p.id);
        }
        // Definitions of function-local ids and their blocks (for the push-constant keys and
        // where a class's value is defined), by id: one table, no hashing.
        let mut defs: Defs = vec![None; self.b.m.header[3] as usize];
        let mut accesses: Vec<(usize, usize, u32)> = vec![]; // (block, index, pointer)
        // Where each pointer points: its root's key and the steps from it.
        let mut interned = Places { keys: HashMap::default(), ids: sized(n / 2) };
        let mut places: HashMap<u32, u32> = sized(n / 2);
        for p in f.params.iter().filter(|p| self.ptrs.contains_key(&p.ty)) {
            places.insert(p.id, interned.root(Key::Value(p.id)));
        }
        // Loads of physical memory each block ends with, still valid (no write since).
        let mut exits: Vec<Option<Available>> = vec![None; f.blocks.len()];
        let mut reused: HashMap<u32, u32> = HashMap::default();
        let mut bits_of: HashMap<u32, u32> = HashMap::default();
        for (k, blk) in f.blocks.iter().enumerate() {
            let mut avail = self.available_at(&cfg, k, &exits);
            for (n, inst) in blk.insts.iter().enumerate() {
                if let Some(d) = defs.get_mut(inst.id as usize).filter(|_| inst.id != 0) {
                    *d = Some((k, inst));
                }
                let derived = self.derived(inst, &root_of, &defs);
                let mut access = true;
                if inst.op == op::LOAD && self.phys(inst.ops[0]).is_some() && self.reusable(inst.ty, &inst.ops[1..]) {
                    // A load of what an earlier load of the same place read, with no write in
                    // between on any path: the same value (a concurrent write would race).
                    let key = places.get(&inst.ops[0]).map(|&p| (p, inst.ty));
                    match key.as_ref().and_then(|key| avail.get(key)) {
                        Some(&earlier) => {
                            reused.insert(inst.id, earlier);
                            access = false;
                        }
                        None => {
                            avail.extend(key.map(|key| (key, inst.id)));
                        }
                    }
                } else if self.writes_memory(inst) {
                    avail.clear();
                }
                if self.ptrs.contains_key(&inst.ty) {
                    let (root, place) = if let Some(&earlier) = reused.get(&inst.id) {
                        (self.root(&root_of, earlier), places.get(&earlier).copied())
                    } else if let Some(how) = derived {
                        let base = match how {
                            Derived::Chain => inst.ops[0],
                            Derived::Select => inst.ops[1],
                            Derived::Bits(p) => {
                                bits_of.insert(inst.id, p);
                                p
                            }
                        };
                        let place = places.get(&base).map(|&p| match how {
                            Derived::Chain => interned.then(self, p, inst),
                            // (A place of its own: which arm it is is not known here.)
                            Derived::Select => interned.intern(Step::Index { from: p, element: false, index: Err(inst.id) }),
                            Derived::Bits(_) => p,
                        });
                        (self.root(&root_of, base), place)
                    } else {
                        (inst.id, Some(interned.root(self.key(inst.id, &defs))))
                    };
                    root_of.insert(inst.id, root);
                    places.extend(place.map(|p| (inst.id, p)));
                }
                let accessed = access_operands(inst);
                // Every operand word (a literal equal to a pointer id only costs its address).
                for (pos, &id) in inst.ops.iter().enumerate() {
                    if self.phys(id).is_none() {
                        continue;
                    }
                    if accessed.contains(&pos) {
                        if access {
                            accesses.push((k, n, id));
                        }
                    } else if !matches!((derived, pos), (Some(Derived::Chain), 0) | (Some(Derived::Select), 1 | 2)) {
                        needs_value.insert(id);
                    }
                }
            }
            exits[k] = Some(avail);
        }
        // Classes of the accessed roots, and the blocks of their accesses.
        let mut keys: HashMap<Key, usize> = HashMap::default();
        let mut classes: Vec<Class> = vec![];
        let mut class_of: HashMap<u32, usize> = HashMap::default();
        let mut first: Vec<Option<(usize, usize)>> = vec![];
        let mut def_block: Vec<Option<usize>> = vec![];
        for &(k, n, ptr) in &accesses {
            if !cfg.reachable(k) {
                continue;
            }
            let root = self.root(&root_of, ptr);
            let key = self.key(root, &defs);
            let c = *keys.entry(key.clone()).or_insert_with(|| {
                let (source, uniform, def) = match &key {
                    Key::PushConstant(..) => (self.push_constant_source(root, &defs), true, None),
                    Key::Global(g) => (Source::Id(*g), true, None),
                    // A parameter is defined before the entry block's first instruction.
                    Key::Value(v) => (Source::Id(*v), false, Some(defs.get(*v as usize).copied().flatten().map_or(0, |(k, _)| k))),
                };
                classes.push(Class { source, uniform });
                first.push(None);
                def_block.push(def);
                classes.len() - 1
            });
            class_of.insert(root, c);
            // Blocks come after their dominators (SPIR-V spec 2.16.1), so a dominator holding an
            // access of the class was seen first: a new dominator has none (its end is the place).
            first[c] = Some(match first[c] {
                None => (k, n),
                Some((b, i)) if b == k => (b, i.min(n)),
                Some((b, i)) => match cfg.common_dominator(b, k) {
                    d if d == b => (b, i),
                    d => (d, usize::MAX),
                },
            });
        }
        let mut place: HashMap<(u32, usize), Vec<usize>> = HashMap::default();
        for (c, at) in first.into_iter().enumerate() {
            let Some((mut blk, mut at)) = at else { continue };
            // Out of loops the value is defined outside of: located once, not per iteration.
            while let Some(h) = cfg.loop_of(blk) {
                let outside = match def_block[c] {
                    None => true,
                    Some(d) => d != h && cfg.dominates(d, h),
                };
                if !outside || h == 0 {
                    break;
                }
                blk = cfg.idom(h);
                at = usize::MAX;
            }
            let insts = &f.blocks[blk].insts;
            if at == usize::MAX {
                // The block's end: before its merge instruction and terminator.
                let merge = insts.len() >= 2 && matches!(insts[insts.len() - 2].op, op::SELECTION_MERGE | op::LOOP_MERGE);
                at = insts.len() - 1 - merge as usize;
            }
            place.entry((cfg.labels[blk], at)).or_default().push(c);
        }
        let unreachable = (0..cfg.labels.len()).filter(|&k| !cfg.reachable(k)).map(|k| cfg.labels[k]).collect();
        Roots { unreachable, root_of, class_of, classes, place, needs_value, reused, bits_of }
    }

    /// May a load of a `ty` value with memory operands `mem` be reused (or reuse another)?
    /// Plain memory operands, and an alignment the lowering accepts: a 32/64-bit component
    /// below 4 bytes (a missing or non-power-of-two `Aligned` counts as 1) is invalid SPIR-V
    /// (VUID-StandaloneSpirv-PhysicalStorageBuffer64-06314) that the lowering reports
    /// (`helpers::call_access`); a reused load is not lowered, and must not hide it.
    fn reusable(&self, ty: u32, mem: &[u32]) -> bool {
        plain_memory_operands(mem) && (super::memory::access_alignment(mem) >= 4 || self.b.scalar_vec(ty).is_some_and(|sv| sv.width < 32))
    }

    /// How the result of `inst` is another physical pointer plus an offset, if it is one
    /// (`root_of`: the roots of the pointers before it).
    fn derived(&self, inst: &Inst, root_of: &HashMap<u32, u32>, defs: &Defs) -> Option<Derived> {
        if !self.ptrs.contains_key(&inst.ty) {
            return None;
        }
        let phys = |k: usize| inst.ops.get(k).is_some_and(|&p| self.phys(p).is_some());
        match inst.op {
            opcode if derives(opcode) && phys(0) => Some(Derived::Chain),
            op::SELECT if phys(1) && phys(2) && self.root(root_of, inst.ops[1]) == self.root(root_of, inst.ops[2]) => Some(Derived::Select),
            op::CONVERT_U_TO_PTR | op::BITCAST => {
                let bits = def(defs, inst.ops[0]).filter(|d| matches!(d.op, op::CONVERT_PTR_TO_U | op::BITCAST))?;
                let whole = self.b.scalar_vec(bits.ty).is_some_and(|sv| sv.n * sv.width == 64);
                (whole && self.phys(bits.ops[0]).is_some()).then_some(Derived::Bits(bits.ops[0]))
            }
            _ => None,
        }
    }

    /// The loads still valid on entry to block `k`: those valid at the end of every predecessor
    /// (none when one is not seen yet: a loop header's back edge).
    fn available_at(&self, cfg: &Cfg, k: usize, exits: &[Option<Available>]) -> Available {
        let preds = &cfg.preds[k];
        if preds.is_empty() || preds.iter().any(|&p| exits[p].is_none()) {
            return Available::default();
        }
        let mut it = preds.iter().map(|&p| exits[p].as_ref().expect("seen"));
        let mut avail = it.next().expect("a predecessor").clone();
        for other in it {
            avail.retain(|key, id| other.get(key) == Some(id));
        }
        avail
    }

    /// May `inst` write memory a physical pointer can reach (or order other invocations'
    /// writes before later loads)? Stores and copies to anything but Function/Private
    /// variables, atomics, calls, barriers, image writes.
    fn writes_memory(&self, inst: &Inst) -> bool {
        const COPY_MEMORY_SIZED: u32 = 64;
        const CONTROL_BARRIER: u32 = 224;
        const MEMORY_BARRIER: u32 = 225;
        const IMAGE_WRITE: u32 = 99;
        match inst.op {
            op::STORE | op::COPY_MEMORY | COPY_MEMORY_SIZED => {
                let p = inst.ops[0];
                let ty = self.types.get(&p).copied().or_else(|| self.b.global(p).map(|g| g.ty)).unwrap_or(0);
                !matches!(self.b.pointer(ty), Some((sc::FUNCTION | PRIVATE, _)))
            }
            op::FUNCTION_CALL | CONTROL_BARRIER | MEMORY_BARRIER | IMAGE_WRITE => true,
            opcode => is_atomic(opcode),
        }
    }

    /// The root of pointer `id` (itself when it is not derived from another pointer).
    fn root(&self, root_of: &HashMap<u32, u32>, id: u32) -> u32 {
        root_of.get(&id).copied().unwrap_or(id)
    }

    /// The class key of root `root`.
    fn key(&self, root: u32, defs: &Defs) -> Key {
        if self.global_values.contains_key(&root) || self.b.global(root).is_some() {
            return Key::Global(root);
        }
        self.push_constant_key(root, defs).unwrap_or(Key::Value(root))
    }

    /// `root` loaded from a push constant at constant indices (then converted to a pointer):
    /// its key.
    fn push_constant_key(&self, root: u32, defs: &Defs) -> Option<Key> {
        let (load, _) = self.push_constant_load(root, defs)?;
        let p = load.ops[0];
        match def(defs, p) {
            None => Some(Key::PushConstant(p, vec![])),
            Some(chain) => {
                let indices = chain.ops[1..].iter().map(|&i| self.b.const_value(i)).collect::<Option<Vec<u64>>>()?;
                Some(Key::PushConstant(chain.ops[0], indices))
            }
        }
    }

    /// The OpLoad from push-constant memory that `root` is (or converts), and whether it is
    /// converted; only loads through the variable or an OpAccessChain of it with constant
    /// indices and no memory operands.
    fn push_constant_load<'d>(&self, root: u32, defs: &Defs<'d>) -> Option<(&'d Inst, bool)> {
        let inst = def(defs, root)?;
        let (load, converted) = match inst.op {
            op::LOAD => (inst, false),
            op::CONVERT_U_TO_PTR | op::BITCAST => (def(defs, inst.ops[0]).filter(|l| l.op == op::LOAD)?, true),
            _ => return None,
        };
        if load.ops.len() != 1 {
            return None;
        }
        let p = load.ops[0];
        let var = match def(defs, p) {
            None => p,
            Some(chain) if chain.op == op::ACCESS_CHAIN && chain.ops[1..].iter().all(|&i| self.b.const_value(i).is_some()) => chain.ops[0],
            Some(_) => return None,
        };
        self.b.global(var).filter(|g| g.op == op::VARIABLE && g.ops.first() == Some(&sc::PUSH_CONSTANT))?;
        Some((load, converted))
    }

    fn push_constant_source(&self, root: u32, defs: &Defs) -> Source {
        let (load, _) = self.push_constant_load(root, defs).expect("a push-constant key");
        let chain = def(defs, load.ops[0]).cloned();
        let var = chain.as_ref().map_or(load.ops[0], |c| c.ops[0]);
        Source::PushConstant { chain, var, loaded_ty: load.ty }
    }
}
