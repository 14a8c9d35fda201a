//! StorageInputOutput16 emulated: Input/Output variables whose types hold 16-bit scalars become
//! the same shape with 32-bit scalars. A 16-bit and a 32-bit scalar each take one component of
//! a location (Vulkan "Location and Component Assignment"), so Location/Component decorations
//! stay valid and the interface between stages keeps matching. Values convert at the boundary:
//! loads narrow (rounding to 16-bit precision where the original would have), stores widen
//! (exactly). Built-in variables are left alone (Vulkan has no 16-bit built-ins).
use crate::passes::layout::{contains_width, Layouts, BUILT_IN};
use super::*;

/// More elements than any interface array can have (maxVertexOutputComponents and friends are
/// far below); longer arrays are malformed input, see the check in `widen`.
const MAX_INTERFACE_ELEMENTS: u64 = 4096;

/// GLSL.std.450 InterpolateAtCentroid / AtSample / AtOffset: they read an Input through a pointer.
const INTERPOLATE_AT: [u32; 3] = [76, 77, 78];

/// Decorations: Flat, and PerVertexKHR (SPV_KHR_fragment_shader_barycentric).
const FLAT: u32 = 14;
const PER_VERTEX_KHR: u32 = 5285;

/// Execution models whose Input variables take values other than a previous stage's Output
/// verbatim: Vertex (vertex attributes, whose formats may be wider than the variable) and
/// Fragment (interpolation, unless Flat or PerVertexKHR).
const VERTEX: u32 = 0;
const FRAGMENT: u32 = 4;

/// Does every value variable `var` holds come from a 16-bit value, so its narrowing is exact?
/// Outputs hold what the stage stored (widened exactly); inputs of tessellation, geometry and
/// flat fragment inputs what the previous stage output.
fn holds_narrow_values(b: &Builder, storage: u32, var: u32) -> bool {
    if storage == sc::OUTPUT {
        return true;
    }
    let mut models = b.m.entry_points.iter().filter(|ep| blocks::interface_ids(ep).contains(&var)).map(|ep| ep.ops[0]);
    models.all(|model| model != VERTEX && (model != FRAGMENT || b.has_decoration(var, FLAT) || b.has_decoration(var, PER_VERTEX_KHR)))
}

/// Widens the 16-bit Input/Output variables. Returns the ids of the narrowing conversions that
/// are exact (see [`holds_narrow_values`]), which type legalization turns into copies.
pub(super) fn widen(b: &mut Builder, functions: &mut [Function], layouts: &Layouts, stats: &mut Stats) -> Result<HashSet<u32>, RewriteError> {
    let mut wide = Wide { map: HashMap::default(), emitted: vec![] };
    let mut exact: HashSet<u32> = HashSet::default();
    let mut exact_vars: HashSet<u32> = HashSet::default();
    let mut tracked: HashMap<u32, u32> = HashMap::default(); // pointer id → original pointee
    let vars: Vec<Inst> = b.m.globals.iter().filter(|g| g.op == op::VARIABLE).cloned().collect();
    for var in vars {
        let Some((storage, pointee)) = b.pointer(var.ty) else { continue };
        if !(storage == sc::INPUT || storage == sc::OUTPUT) || !contains_width(b, pointee, &[16]) {
            continue;
        }
        if b.has_decoration(var.id, BUILT_IN) || struct_of(b, pointee).is_some_and(|s| layouts.has_builtin_member(s)) {
            continue;
        }
        if var.ops.len() > 1 {
            return Err(RewriteError::unsupported(format!("%{} = OpVariable", var.id), "a 16-bit Input/Output variable with an initializer"));
        }
        if interface_elements(b, pointee, 0) > MAX_INTERFACE_ELEMENTS {
            return Err(RewriteError::unsupported(format!("%{} = OpVariable", var.id), "an Input/Output variable with more than 4096 elements"));
        }
        let w = wide.ty(b, pointee);
        let pty = b.t_ptr(storage, w);
        // Retype in place (same id: decorations and interface lists stay); `super::order_globals`
        // later moves it after its new type.
        let at = b.m.globals.iter().position(|g| g.id == var.id).expect("a global");
        b.m.globals[at].ty = pty;
        tracked.insert(var.id, pointee);
        if holds_narrow_values(b, storage, var.id) {
            exact_vars.insert(var.id);
        }
        stats.widened_io_variables += 1;
    }
    if tracked.is_empty() {
        return Ok(exact);
    }
    let glsl = b.m.ext_inst_imports.iter().find(|i| crate::module::string_is(&i.ops, "GLSL.std.450")).map(|i| i.id);
    for f in functions.iter_mut() {
        for blk in f.blocks.iter_mut() {
            let mut e = Emitter::new(blk.label);
            for mut inst in std::mem::take(&mut blk.insts) {
                let first = inst.ops.first().copied().unwrap_or(0);
                match inst.op {
                    op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | op::COPY_OBJECT if tracked.contains_key(&first) => {
                        let (storage, pointee) = b.pointer(inst.ty).ok_or_else(|| RewriteError::malformed(0, format!("%{} is not a pointer", inst.id)))?;
                        let w = wide.ty(b, pointee);
                        inst.ty = b.t_ptr(storage, w);
                        tracked.insert(inst.id, pointee);
                        if exact_vars.contains(&first) {
                            exact_vars.insert(inst.id);
                        }
                        e.push(inst);
                    }
                    op::LOAD if tracked.contains_key(&first) => {
                        let t = tracked[&first];
                        let w = wide.ty(b, t);
                        if w == t {
                            e.push(inst);
                            continue;
                        }
                        let (ty, id) = (inst.ty, inst.id);
                        let loaded = e.op(b, op::LOAD, w, inst.ops);
                        let v = wide.narrow(&mut e, b, loaded, t);
                        let renamed = e.rename_last(v, id);
                        if exact_vars.contains(&first) {
                            // The last conversion now has the load's id.
                            exact.extend(wide.emitted.iter().map(|&c| if renamed && c == v { id } else { c }));
                        }
                        wide.emitted.clear();
                        if !renamed {
                            e.push(Inst::new(op::COPY_OBJECT, ty, id, ops![v]));
                        }
                    }
                    op::STORE if tracked.contains_key(&first) => {
                        let t = tracked[&first];
                        if inst.ops.len() >= 2 && wide.ty(b, t) != t {
                            inst.ops[1] = wide.widen(&mut e, b, inst.ops[1], t);
                        }
                        e.push(inst);
                    }
                    op::EXT_INST
                        if Some(first) == glsl
                            && inst.ops.len() >= 3
                            && INTERPOLATE_AT.contains(&inst.ops[1])
                            && tracked.contains_key(&inst.ops[2]) =>
                    {
                        let t = tracked[&inst.ops[2]];
                        let (ty, id) = (inst.ty, inst.id);
                        let w = wide.ty(b, t);
                        let r = e.op(b, op::EXT_INST, w, inst.ops);
                        let v = wide.narrow(&mut e, b, r, t); // interpolated: never exact
                        wide.emitted.clear();
                        if !e.rename_last(v, id) {
                            e.push(Inst::new(op::COPY_OBJECT, ty, id, ops![v]));
                        }
                    }
                    _ => {
                        if let Some((_, id)) = pointer_operands(&inst).into_iter().find(|(_, id)| tracked.contains_key(id)) {
                            return Err(RewriteError::unsupported(
                                format!("opcode {} using %{id}", inst.op),
                                "a pointer to a 16-bit Input/Output variable used other than by access chains, OpLoad, OpStore and InterpolateAt*",
                            ));
                        }
                        e.push(inst);
                    }
                }
            }
            blk.insts = e.take_insts();
        }
    }
    Ok(exact)
}

/// How many scalars/vectors a value of `ty` holds (saturating; bounded depth).
fn interface_elements(b: &Builder, ty: u32, depth: u32) -> u64 {
    let Some(g) = b.global(ty) else { return 1 };
    if depth > 16 {
        return u64::MAX;
    }
    match g.op {
        op::TYPE_STRUCT => g.ops.iter().fold(0u64, |acc, &m| acc.saturating_add(interface_elements(b, m, depth + 1))),
        op::TYPE_ARRAY => b.const_value(g.ops[1]).unwrap_or(0).saturating_mul(interface_elements(b, g.ops[0], depth + 1)),
        op::TYPE_MATRIX => g.ops[1] as u64,
        _ => 1,
    }
}

/// The struct a type is, or is an array of.
fn struct_of(b: &Builder, ty: u32) -> Option<u32> {
    let mut t = ty;
    for _ in 0..4 {
        let g = b.global(t)?;
        match g.op {
            op::TYPE_STRUCT => return Some(t),
            op::TYPE_ARRAY => t = g.ops[0],
            _ => return None,
        }
    }
    None
}

/// Types with their 16-bit scalars widened to 32 bits, and the conversions between the two.
struct Wide {
    map: HashMap<u32, u32>,
    /// The width conversions emitted since the caller last cleared it.
    emitted: Vec<u32>,
}

impl Wide {
    fn ty(&mut self, b: &mut Builder, t: u32) -> u32 {
        if let Some(&w) = self.map.get(&t) {
            return w;
        }
        let w = if !contains_width(b, t, &[16]) {
            t
        } else {
            let g = b.global(t).cloned().expect("contains_width found it");
            match g.op {
                op::TYPE_INT => b.t_int(32, g.ops[1] != 0),
                op::TYPE_FLOAT => b.t_float(32),
                op::TYPE_VECTOR => {
                    let c = self.ty(b, g.ops[0]);
                    b.t_vec(c, g.ops[1])
                }
                op::TYPE_MATRIX => {
                    let c = self.ty(b, g.ops[0]);
                    let existing = b.m.globals.iter().find(|x| x.op == op::TYPE_MATRIX && x.ops[..] == [c, g.ops[1]]).map(|x| x.id);
                    existing.unwrap_or_else(|| {
                        let id = b.id();
                        b.add_global(Inst::new(op::TYPE_MATRIX, 0, id, ops![c, g.ops[1]]))
                    })
                }
                op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => {
                    let c = self.ty(b, g.ops[0]);
                    let mut ops = g.ops.clone();
                    ops[0] = c;
                    let id = b.id();
                    b.add_global(Inst::new(g.op, 0, id, ops));
                    copy_decorations(b.m, t, id);
                    id
                }
                op::TYPE_STRUCT => {
                    let members: Vec<u32> = g.ops.iter().map(|&m| self.ty(b, m)).collect();
                    let id = b.t_struct(&members);
                    copy_decorations(b.m, t, id);
                    id
                }
                _ => t,
            }
        };
        self.map.insert(t, w);
        w
    }

    /// Wide value `v` (of `ty(t)`) → a value of `t`.
    fn narrow(&mut self, e: &mut Emitter, b: &mut Builder, v: u32, t: u32) -> u32 {
        self.convert(e, b, v, t, false)
    }

    /// Value `v` of `t` → its wide twin.
    fn widen(&mut self, e: &mut Emitter, b: &mut Builder, v: u32, t: u32) -> u32 {
        self.convert(e, b, v, t, true)
    }

    fn convert(&mut self, e: &mut Emitter, b: &mut Builder, v: u32, t: u32, up: bool) -> u32 {
        let w = self.ty(b, t);
        if w == t {
            return v;
        }
        let to = if up { w } else { t };
        if let Some(sv) = b.scalar_vec(t) {
            let opcode = if sv.float { op::F_CONVERT } else if sv.signed { op::S_CONVERT } else { op::U_CONVERT };
            let c = e.op(b, opcode, to, ops![v]);
            self.emitted.push(c);
            return c;
        }
        let g = b.global(t).cloned().expect("a composite type");
        // Interface arrays are small (Location limits); a malformed length must not exhaust memory.
        let count = |n: u64| n.min(MAX_INTERFACE_ELEMENTS) as usize;
        let parts: Vec<u32> = match g.op {
            op::TYPE_STRUCT => g.ops.to_vec(),
            op::TYPE_ARRAY => vec![g.ops[0]; count(b.const_value(g.ops[1]).unwrap_or(0))],
            _ => vec![g.ops[0]; count(g.ops[1] as u64)], // matrix columns
        };
        let vals: Vec<u32> = parts
            .iter()
            .enumerate()
            .map(|(i, &pt)| {
                let src_ty = if up { pt } else { self.ty(b, pt) };
                let x = e.op(b, op::COMPOSITE_EXTRACT, src_ty, ops![v, i as u32]);
                self.convert(e, b, x, pt, up)
            })
            .collect();
        e.op(b, op::COMPOSITE_CONSTRUCT, to, vals)
    }
}

/// Copies the decorations, member decorations and names of type `from` onto `to`.
fn copy_decorations(m: &mut Module, from: u32, to: u32) {
    let mut extra = vec![];
    for a in &m.annotations {
        if matches!(a.op, op::DECORATE | op::MEMBER_DECORATE) && a.ops.first() == Some(&from) {
            let mut c = a.clone();
            c.ops[0] = to;
            extra.push(c);
        }
    }
    m.annotations.extend(extra);
    let mut names = vec![];
    for d in &m.debug {
        if matches!(d.op, op::NAME | op::MEMBER_NAME) && d.ops.first() == Some(&from) {
            let mut c = d.clone();
            c.ops[0] = to;
            names.push(c);
        }
    }
    m.add_names(names);
}
