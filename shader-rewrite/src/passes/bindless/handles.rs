//! Which values carry handles, and the handle integer type that replaces the opaque types in
//! them.
use std::collections::VecDeque;

use super::*;

/// Where an opaque value (image, sampler, sampled image, or an aggregate of them) comes from.
/// Bits: a value reached by more than one is "mixed", which the lowering cannot carry.
pub(super) const BOUND: u8 = 1;
/// From a handle: carried as an integer until an image instruction consumes it.
pub(super) const HANDLE: u8 = 2;
/// An OpSampledImage (or OpImage of one) with a bound part and a handle part: rebuilt at each
/// image instruction that consumes it.
pub(super) const LOCAL: u8 = 4;

pub(super) fn is_mixed(k: u8) -> bool {
    k.count_ones() > 1
}

/// An opaque type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Leaf {
    Image { dim: u32, sampled: u32 },
    Sampler,
    SampledImage { image: u32 },
}

/// The module's opaque types and the aggregates and pointers holding them.
pub(super) struct Types {
    pub leaf: HashMap<u32, Leaf>,
    /// Aggregates of opaque types that ordinary descriptors use (arrays in UniformConstant):
    /// never retyped.
    pub bound_aggs: HashSet<u32>,
    /// Every other aggregate holding opaque types (block members, Function/Private memory,
    /// composites): its opaque members become handles, in place.
    pub handle_aggs: HashSet<u32>,
    /// (storage class, pointee) of each pointer type, as declared.
    pub pointers: HashMap<u32, (u32, u32)>,
}

impl Types {
    pub fn read(m: &Module) -> Result<Self, RewriteError> {
        let mut leaf = HashMap::default();
        let mut pointers = HashMap::default();
        // Aggregates holding opaque types, with their member types. Members are declared before
        // the aggregate (only pointers may be forward-declared), so one pass finds them all.
        let mut aggs: HashMap<u32, Vec<u32>> = HashMap::default();
        for g in &m.globals {
            match g.op {
                op::TYPE_IMAGE => {
                    leaf.insert(g.id, Leaf::Image { dim: g.ops[1], sampled: g.ops[5] });
                }
                op::TYPE_SAMPLER => {
                    leaf.insert(g.id, Leaf::Sampler);
                }
                op::TYPE_SAMPLED_IMAGE => {
                    leaf.insert(g.id, Leaf::SampledImage { image: g.ops[0] });
                }
                op::TYPE_POINTER => {
                    pointers.insert(g.id, (g.ops[0], g.ops[1]));
                }
                op::TYPE_STRUCT | op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => {
                    let members: Vec<u32> = if g.op == op::TYPE_STRUCT { g.ops.to_vec() } else { vec![g.ops[0]] };
                    if members.iter().any(|t| leaf.contains_key(t) || aggs.contains_key(t)) {
                        aggs.insert(g.id, members);
                    }
                }
                _ => {}
            }
        }
        let mut bound_aggs: HashSet<u32> = HashSet::default();
        let mut work: Vec<u32> = pointers.values().filter(|(s, _)| *s == UNIFORM_CONSTANT).map(|&(_, p)| p).collect();
        while let Some(t) = work.pop() {
            if let Some(members) = aggs.get(&t) {
                if bound_aggs.insert(t) {
                    work.extend(members);
                }
            }
        }
        let handle_aggs: HashSet<u32> = aggs.keys().filter(|t| !bound_aggs.contains(t)).copied().collect();
        let shared = |t: u32| {
            RewriteError::unsupported(
                format!("%{t} (aggregate type)"),
                "the same aggregate type holds ordinary descriptors (UniformConstant) and bindless handles; declare separate types",
            )
        };
        for (&t, members) in &aggs {
            if handle_aggs.contains(&t) && members.iter().any(|x| bound_aggs.contains(x)) {
                return Err(shared(t));
            }
        }
        for &(s, p) in pointers.values() {
            if s != UNIFORM_CONSTANT && bound_aggs.contains(&p) {
                return Err(shared(p));
            }
        }
        Ok(Types { leaf, bound_aggs, handle_aggs, pointers })
    }

    /// Does a value of type `t` hold opaque types (and so have a kind)?
    pub fn interesting(&self, t: u32) -> bool {
        self.leaf.contains_key(&t) || self.bound_aggs.contains(&t) || self.handle_aggs.contains(&t)
    }

    /// (storage class, pointee) of pointer type `t`, when it is a pointer into memory that
    /// holds handles (not UniformConstant) and its pointee holds opaque types.
    pub fn handle_memory(&self, t: u32) -> Option<u32> {
        self.pointers.get(&t).filter(|(s, p)| *s != UNIFORM_CONSTANT && self.interesting(*p)).map(|&(_, p)| p)
    }
}

/// How the kind of a value follows from its operands.
enum Transfer {
    Fixed(u8),
    Union(Vec<u32>),
    /// OpSampledImage (image, sampler).
    Sampled(u32, u32),
}

struct Node {
    id: u32,
    op: u32,
    transfer: Transfer,
}

impl Node {
    fn sources(&self) -> &[u32] {
        match &self.transfer {
            Transfer::Fixed(_) => &[],
            Transfer::Union(v) => v,
            Transfer::Sampled(..) => &[],
        }
    }
    fn eval(&self, kind: &HashMap<u32, u8>) -> u8 {
        let k = |id: &u32| kind.get(id).copied().unwrap_or(0);
        match &self.transfer {
            Transfer::Fixed(f) => *f,
            Transfer::Union(v) => v.iter().map(k).fold(0, |a, b| a | b),
            Transfer::Sampled(i, s) => {
                let (ki, ks) = (k(i), k(s));
                if is_mixed(ki) || is_mixed(ks) {
                    return ki | ks; // reported at the operand
                }
                match ki | ks {
                    0 => 0,
                    BOUND => BOUND,
                    HANDLE => HANDLE,
                    _ => LOCAL,
                }
            }
        }
    }
    fn describe(&self) -> String {
        format!("%{} = {}", self.id, opcode_name(self.op))
    }
}

/// The kind of every function-local value that holds opaque types (a fixed point over the
/// module: OpPhi back edges and calls make it iterative). Errors on values that mix kinds.
pub(super) fn analyze(types: &Types, ty_of: &HashMap<u32, u32>, functions: &[Function]) -> Result<HashMap<u32, u8>, RewriteError> {
    let mut calls: HashMap<u32, Vec<&[u32]>> = HashMap::default();
    let mut returns: HashMap<u32, Vec<u32>> = HashMap::default();
    for f in functions {
        for inst in f.blocks.iter().flat_map(|b| b.insts.iter()) {
            match inst.op {
                op::FUNCTION_CALL => calls.entry(inst.ops[0]).or_default().push(&inst.ops[1..]),
                op::RETURN_VALUE => returns.entry(f.def.id).or_default().push(inst.ops[0]),
                _ => {}
            }
        }
    }
    let mut nodes: Vec<Node> = vec![];
    for f in functions {
        for (p, param) in f.params.iter().enumerate() {
            if !types.interesting(param.ty) {
                continue;
            }
            let mut args = vec![];
            for call in calls.get(&f.def.id).map(|v| v.as_slice()).unwrap_or(&[]) {
                args.push(*call.get(p).ok_or_else(|| RewriteError::malformed(0, format!("a call of %{} has too few arguments", f.def.id)))?);
            }
            nodes.push(Node { id: param.id, op: param.op, transfer: Transfer::Union(args) });
        }
        for inst in f.blocks.iter().flat_map(|b| b.insts.iter()).filter(|i| i.id != 0 && types.interesting(i.ty)) {
            let o = &inst.ops;
            let transfer = match inst.op {
                // Only UniformConstant holds descriptors; everything else holds handles.
                op::LOAD => match ty_of.get(&o[0]).and_then(|t| types.pointers.get(t)) {
                    Some(&(s, _)) if s != UNIFORM_CONSTANT => Transfer::Fixed(HANDLE),
                    _ => Transfer::Fixed(BOUND),
                },
                CONVERT_U_TO_IMAGE | CONVERT_U_TO_SAMPLER | CONVERT_U_TO_SAMPLED_IMAGE => Transfer::Fixed(HANDLE),
                op::PHI => Transfer::Union(o.iter().step_by(2).copied().collect()),
                op::SELECT => Transfer::Union(o[1..3].to_vec()),
                op::COPY_OBJECT | op::COPY_LOGICAL | op::COMPOSITE_EXTRACT | op::IMAGE => Transfer::Union(vec![o[0]]),
                op::COMPOSITE_INSERT => Transfer::Union(o[..2].to_vec()),
                op::COMPOSITE_CONSTRUCT => Transfer::Union(o.to_vec()),
                op::SAMPLED_IMAGE => Transfer::Sampled(o[0], o[1]),
                op::FUNCTION_CALL => Transfer::Union(returns.get(&o[0]).cloned().unwrap_or_default()),
                op::UNDEF => Transfer::Fixed(0),
                // Anything else producing an opaque value is left as it is.
                _ => Transfer::Fixed(BOUND),
            };
            nodes.push(Node { id: inst.id, op: inst.op, transfer });
        }
    }

    // Forward, to a fixed point. Each value's kind is recomputed from its operands' current
    // kinds (not OR-ed with what it had): an OpSampledImage seen with only its image known
    // (BOUND) becomes LOCAL once its sampler is known to be a handle, not BOUND|LOCAL. That
    // happens when an operand comes from a later node, e.g. a handle returned by a function
    // defined after its caller. Kinds only refine (none → bound/handle → local → mixed), so the
    // worklist ends; the budget only guards that argument.
    let mut kind: HashMap<u32, u8> = nodes.iter().map(|n| (n.id, 0)).collect();
    let index: HashMap<u32, usize> = nodes.iter().enumerate().map(|(n, node)| (node.id, n)).collect();
    let mut users: HashMap<u32, Vec<usize>> = HashMap::default();
    for (n, node) in nodes.iter().enumerate() {
        let extra = match node.transfer {
            Transfer::Sampled(i, s) => vec![i, s],
            _ => vec![],
        };
        for &s in node.sources().iter().chain(extra.iter()) {
            users.entry(s).or_default().push(n);
        }
    }
    let mut queue: VecDeque<usize> = (0..nodes.len()).collect();
    let mut queued = vec![true; nodes.len()];
    let mut budget = nodes.len().saturating_mul(32) + 64;
    while let Some(n) = queue.pop_front() {
        queued[n] = false;
        budget -= 1;
        if budget == 0 {
            return Err(RewriteError::unsupported(nodes[n].describe(), "where its image or sampler comes from (ordinary descriptor or bindless handle) did not settle"));
        }
        let node = &nodes[n];
        let old = kind[&node.id];
        let new = node.eval(&kind);
        if new != old {
            kind.insert(node.id, new);
            for &u in users.get(&node.id).map(|v| v.as_slice()).unwrap_or(&[]) {
                if !queued[u] {
                    queued[u] = true;
                    queue.push_back(u);
                }
            }
        }
    }
    // Backward: values of no kind (undefined) that flow into handles become handles too, so
    // they can be retyped with them. Each value changes at most once.
    let mut work: Vec<usize> = (0..nodes.len()).filter(|&n| kind[&nodes[n].id] == HANDLE).collect();
    while let Some(n) = work.pop() {
        let srcs: Vec<u32> = match nodes[n].transfer {
            Transfer::Sampled(i, s) => vec![i, s],
            _ => nodes[n].sources().to_vec(),
        };
        for s in srcs {
            if let Some(&m) = index.get(&s) {
                if kind[&s] == 0 {
                    kind.insert(s, HANDLE);
                    work.push(m);
                }
            }
        }
    }

    for node in &nodes {
        let k = kind[&node.id];
        let ty = ty_of.get(&node.id).copied().unwrap_or(0);
        if is_mixed(k) {
            return Err(RewriteError::unsupported(
                node.describe(),
                "mixes an image or sampler from an ordinary descriptor with one from a bindless handle in one value; the lowering carries handles as integers and cannot carry both",
            ));
        }
        if k == LOCAL && !matches!(node.op, op::SAMPLED_IMAGE | op::IMAGE) {
            return Err(RewriteError::unsupported(
                node.describe(),
                "a sampled image combining an ordinary descriptor with a bindless handle flows through this instruction; only image instructions may consume it",
            ));
        }
        if (types.handle_aggs.contains(&ty) && k & (BOUND | LOCAL) != 0) || (types.bound_aggs.contains(&ty) && k & HANDLE != 0) {
            return Err(RewriteError::unsupported(node.describe(), "an aggregate of images/samplers mixes ordinary descriptors and bindless handles"));
        }
    }
    Ok(kind)
}

/// The integer type a handle is carried in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// Addressing mode 32.
    U32,
    /// Addressing mode 64 in a module that has Int64.
    U64,
    /// Addressing mode 64 without Int64: same 8 bytes in memory.
    UVec2,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Repr {
    pub form: Form,
    pub ty: u32,
    pub u32t: u32,
}

impl Repr {
    /// Declares the handle type at the front of the global section: it replaces opaque types in
    /// place, so it must precede every type and variable that held one.
    pub fn declare(m: &mut Module, width: u32) -> Repr {
        let (form, u32t, ty) = {
            let mut b = Builder::new(m);
            let u32t = b.t_u32();
            match (width, b.m.has_capability(cap::INT64)) {
                (32, _) => (Form::U32, u32t, u32t),
                (_, true) => (Form::U64, u32t, b.t_int(64, false)),
                (_, false) => (Form::UVec2, u32t, b.t_vec(u32t, 2)),
            }
        };
        let mut front = vec![];
        for id in [u32t, ty] {
            if let Some(p) = m.globals.iter().position(|g| g.id == id) {
                front.push(m.globals.remove(p));
            }
        }
        m.globals.splice(0..0, front);
        Repr { form, ty, u32t }
    }
}

/// Replaces opaque types by the handle type `handle` in every pointer type into handle memory
/// and in every handle aggregate (same ids, so decorations such as Offset and ArrayStride stay).
/// Pointer types may then repeat: SPIR-V spec 2.8 requires uniqueness only of non-aggregate,
/// non-pointer types (and spirv-val accepts repeated pointer types in every version).
pub(super) fn retype_globals(m: &mut Module, types: &Types, handle: u32, stats: &mut Stats) {
    let mut handle_vars = 0;
    for g in m.globals.iter_mut() {
        match g.op {
            op::TYPE_POINTER if g.ops[0] != UNIFORM_CONSTANT && types.leaf.contains_key(&g.ops[1]) => g.ops[1] = handle,
            op::TYPE_STRUCT | op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY if types.handle_aggs.contains(&g.id) => {
                let n = if g.op == op::TYPE_STRUCT { g.ops.len() } else { 1 };
                for t in g.ops.iter_mut().take(n) {
                    if types.leaf.contains_key(t) {
                        *t = handle;
                        stats.bindless_handle_values += 1;
                    }
                }
            }
            op::VARIABLE if types.handle_memory(g.ty).is_some_and(|p| types.leaf.contains_key(&p)) => handle_vars += 1,
            _ => {}
        }
    }
    stats.bindless_handle_values += handle_vars;
}
