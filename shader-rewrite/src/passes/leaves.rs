//! Walking memory in an explicit layout (member Offset, ArrayStride, MatrixStride, RowMajor;
//! SPIR-V spec 2.16.2, Vulkan "Offset and Stride Assignment"): access-chain steps become byte
//! offset arithmetic ([`Cursor::step`]), and loads and stores of composites are split into
//! scalar/vector leaves ([`Splitter`]) that a pass then emits through the byte-address backend.
//! Shared by the 8/16-bit block lowering and the physical-storage-buffer lowering.
use crate::builder::{Builder, Emitter, ScalarVec};
use crate::error::RewriteError;
use crate::module::{op, Inst};
use crate::ops;

use super::layout::{pow2_align, Layouts, MatrixLayout};

/// Most leaves one load or store of a composite may split into.
const MAX_LEAVES: u32 = 4096;
/// Deepest composite nesting a load or store may walk.
const MAX_DEPTH: u32 = 64;

/// `%id = opcode %first`, for error messages.
pub(crate) fn describe(inst: &Inst) -> String {
    let id = if inst.id != 0 { format!("%{} = ", inst.id) } else { String::new() };
    format!("{id}opcode {} %{}", inst.op, inst.ops.first().copied().unwrap_or(0))
}

/// A place in explicitly laid out memory.
#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    /// Byte offset from the base (a u32 id; wrapping arithmetic).
    pub off: u32,
    /// Guaranteed alignment of `off`.
    pub align: u32,
    /// Type of what lies there.
    pub ty: u32,
    /// Layout of the matrices inside it (from the enclosing struct member).
    pub mat: MatrixLayout,
    /// Vectors: bytes between components (a row-major matrix column); 0 = packed.
    pub comp_stride: u32,
}

impl Cursor {
    /// The start of a `ty` at offset 0, aligned to `align`.
    pub fn at_start(b: &mut Builder, ty: u32, align: u32) -> Self {
        Cursor { off: b.c_u32(0), align, ty, mat: MatrixLayout::default(), comp_stride: 0 }
    }

    /// One access-chain index: `idx` (of integer type `idx_ty`) into the composite at the cursor.
    pub fn step(mut self, e: &mut Emitter, b: &mut Builder, layouts: &Layouts, idx: u32, idx_ty: u32, inst: &Inst) -> Result<Cursor, RewriteError> {
        let t = b.global(self.ty).cloned().ok_or_else(|| RewriteError::malformed(0, format!("{}: type %{} not found", describe(inst), self.ty)))?;
        match t.op {
            op::TYPE_STRUCT => {
                let i = b.const_value(idx).ok_or_else(|| RewriteError::malformed(0, format!("{}: struct index %{idx} is not a constant", describe(inst))))? as u32;
                let member = *t.ops.get(i as usize).ok_or_else(|| RewriteError::malformed(0, format!("{}: member {i} out of range", describe(inst))))?;
                let off = layouts.member_offset(self.ty, i).ok_or_else(|| {
                    RewriteError::unsupported(describe(inst), format!("member {i} of struct %{} has no Offset decoration", self.ty))
                })?;
                self.advance(e, b, None, 0, off);
                self.mat = layouts.matrix(self.ty, i);
                self.ty = member;
            }
            op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => {
                let stride = layouts.array_stride(self.ty).ok_or_else(|| RewriteError::unsupported(describe(inst), format!("array %{} has no ArrayStride", self.ty)))?;
                self.advance(e, b, Some(idx), idx_ty, stride);
                self.ty = t.ops[0];
            }
            op::TYPE_MATRIX => {
                let col = t.ops[0];
                let comp = b.scalar_vec(col).map_or(4, |v| v.width / 8);
                no_matrix_stride(self.mat, self.ty, inst)?;
                if self.mat.row_major {
                    self.advance(e, b, Some(idx), idx_ty, comp);
                    self.comp_stride = self.mat.stride;
                } else {
                    let stride = self.mat.stride;
                    self.advance(e, b, Some(idx), idx_ty, stride);
                }
                self.ty = col;
            }
            op::TYPE_VECTOR => {
                let comp = b.scalar_vec(self.ty).map_or(4, |v| v.width / 8);
                let stride = if self.comp_stride != 0 { self.comp_stride } else { comp };
                self.advance(e, b, Some(idx), idx_ty, stride);
                self.ty = t.ops[0];
                self.comp_stride = 0;
            }
            _ => return Err(RewriteError::malformed(0, format!("{}: indexes into a non-composite type", describe(inst)))),
        }
        Ok(self)
    }

    /// `off += idx * scale` (`idx` None: `+= scale`), folding constants.
    pub fn advance(&mut self, e: &mut Emitter, b: &mut Builder, idx: Option<u32>, idx_ty: u32, scale: u32) {
        let c = match idx {
            None => Some(scale),
            Some(i) => b.const_value(i).map(|v| (v as u32).wrapping_mul(scale)),
        };
        let u32t = b.t_u32();
        let term = match c {
            Some(0) => return,
            Some(c) => {
                self.align = self.align.min(pow2_align(c));
                b.c_u32(c)
            }
            None => {
                let i = index_u32(e, b, idx.expect("dynamic index"), idx_ty);
                self.align = self.align.min(pow2_align(scale));
                if scale == 1 {
                    i
                } else {
                    let s = b.c_u32(scale);
                    e.op(b, op::I_MUL, u32t, ops![i, s])
                }
            }
        };
        self.off = e.op(b, op::I_ADD, u32t, ops![self.off, term]);
    }
}

/// An index as u32 (wrapping), whatever its integer type `ty`.
pub(crate) fn index_u32(e: &mut Emitter, b: &mut Builder, idx: u32, ty: u32) -> u32 {
    let u32t = b.t_u32();
    match b.scalar_vec(ty) {
        Some(v) if v.width == 32 && !v.signed => idx,
        Some(v) if v.width == 32 => e.op(b, op::BITCAST, u32t, ops![idx]),
        _ => e.op(b, op::U_CONVERT, u32t, ops![idx]),
    }
}

/// One scalar/vector access of a split load or store: a `ty` (`sv`) at byte offset `off`
/// aligned to `align`. 8/16-bit leaves move their 32-bit twin (f32/i32/u32 components holding
/// the exact value): the backend's `AccessShape::wide`.
pub(crate) struct Leaf {
    pub ty: u32,
    pub sv: ScalarVec,
    pub off: u32,
    /// `off` less the split access's own offset (the cursor's): a constant.
    pub rel: u32,
    pub align: u32,
}

/// Splits loads and stores into leaves, within a budget (a whole-array access of a huge array,
/// or a malformed self-containing type, must fail, not exhaust memory).
pub(crate) struct Splitter<'l> {
    layouts: &'l Layouts,
    budget: u32,
    depth: u32,
    /// Width conversions from 8/16-bit memory: exact, a type legalization may turn them into copies.
    pub exact: Vec<u32>,
    /// Loaded 16-bit float leaves come back as themselves where [`loads_f16_exactly`] (the
    /// physical-pointer helpers return them so).
    f16_as_is: bool,
}

struct Part {
    ty: u32,
    offset: u32,
    mat: MatrixLayout,
    comp_stride: u32,
}

impl<'l> Splitter<'l> {
    pub fn new(layouts: &'l Layouts) -> Self {
        Splitter { layouts, budget: 0, depth: 0, exact: vec![], f16_as_is: false }
    }

    /// A splitter whose loads give 16-bit floats back as themselves (see `f16_as_is`).
    pub fn keeping_f16(layouts: &'l Layouts) -> Self {
        Splitter { f16_as_is: true, ..Splitter::new(layouts) }
    }

    /// Loads the value at `cur`, one `leaf` call per scalar/vector (which returns the loaded
    /// value, the 32-bit twin for 8/16-bit leaves but f16 ones with `f16_as_is`).
    pub fn load(&mut self, e: &mut Emitter, b: &mut Builder, cur: &Cursor, inst: &Inst, leaf: &mut dyn FnMut(&mut Emitter, &mut Builder, &Leaf) -> u32) -> Result<u32, RewriteError> {
        self.budget = MAX_LEAVES;
        self.depth = 0;
        self.load_at(e, b, cur.ty, (cur.off, 0), cur.align, cur.mat, cur.comp_stride, inst, leaf)
    }

    /// Stores `value` at `cur`, one `leaf` call per scalar/vector (given the value to store, the
    /// 32-bit twin for 8/16-bit leaves).
    pub fn store(&mut self, e: &mut Emitter, b: &mut Builder, cur: &Cursor, value: u32, inst: &Inst, leaf: &mut dyn FnMut(&mut Emitter, &mut Builder, &Leaf, u32)) -> Result<(), RewriteError> {
        self.budget = MAX_LEAVES;
        self.depth = 0;
        self.store_at(e, b, cur.ty, (cur.off, 0), cur.align, cur.mat, cur.comp_stride, value, inst, leaf)
    }

    #[allow(clippy::too_many_arguments)]
    fn load_at(
        &mut self,
        e: &mut Emitter,
        b: &mut Builder,
        ty: u32,
        (off, rel): (u32, u32),
        align: u32,
        mat: MatrixLayout,
        cs: u32,
        inst: &Inst,
        leaf: &mut dyn FnMut(&mut Emitter, &mut Builder, &Leaf) -> u32,
    ) -> Result<u32, RewriteError> {
        if let Some(sv) = self.leaf(b, ty, inst)? {
            let small = sv.width < 32 && !(self.f16_as_is && loads_f16_exactly(b, sv));
            let wide = if sv.n == 1 || cs == 0 || cs == sv.width / 8 {
                leaf(e, b, &Leaf { ty, sv, off, rel, align })
            } else {
                // A row-major matrix column: one access per component.
                let comp = ScalarVec { n: 1, ..sv };
                let mut comps: Vec<u32> = Vec::with_capacity(sv.n as usize);
                for k in 0..sv.n {
                    let c = scaled(k, cs, inst)?;
                    let (o, a) = at(e, b, off, align, c);
                    comps.push(leaf(e, b, &Leaf { ty: sv.comp_ty, sv: comp, off: o, rel: rel.wrapping_add(c), align: a }));
                }
                let vt = if small { wide_ty(b, sv) } else { ty };
                e.op(b, op::COMPOSITE_CONSTRUCT, vt, comps)
            };
            if !small {
                return Ok(wide);
            }
            let v = convert(e, b, wide, sv, ty);
            self.exact.push(v);
            return Ok(v);
        }
        let parts = self.parts(b, ty, mat, inst)?;
        let mut vals = vec![];
        self.nest(inst)?;
        for part in parts {
            let (o, a) = at(e, b, off, align, part.offset);
            vals.push(self.load_at(e, b, part.ty, (o, rel.wrapping_add(part.offset)), a, part.mat, part.comp_stride, inst, leaf)?);
        }
        self.depth -= 1;
        Ok(e.op(b, op::COMPOSITE_CONSTRUCT, ty, vals))
    }

    #[allow(clippy::too_many_arguments)]
    fn store_at(
        &mut self,
        e: &mut Emitter,
        b: &mut Builder,
        ty: u32,
        (off, rel): (u32, u32),
        align: u32,
        mat: MatrixLayout,
        cs: u32,
        value: u32,
        inst: &Inst,
        leaf: &mut dyn FnMut(&mut Emitter, &mut Builder, &Leaf, u32),
    ) -> Result<(), RewriteError> {
        if let Some(sv) = self.leaf(b, ty, inst)? {
            let small = sv.width < 32;
            let wide = if small {
                let wt = wide_ty(b, sv);
                convert(e, b, value, sv, wt)
            } else {
                value
            };
            if sv.n == 1 || cs == 0 || cs == sv.width / 8 {
                leaf(e, b, &Leaf { ty, sv, off, rel, align }, wide);
            } else {
                let comp = ScalarVec { n: 1, ..sv };
                let ct = if small { wide_ty(b, comp) } else { sv.comp_ty };
                for k in 0..sv.n {
                    let c = e.op(b, op::COMPOSITE_EXTRACT, ct, ops![wide, k]);
                    let step = scaled(k, cs, inst)?;
                    let (o, a) = at(e, b, off, align, step);
                    leaf(e, b, &Leaf { ty: sv.comp_ty, sv: comp, off: o, rel: rel.wrapping_add(step), align: a }, c);
                }
            }
            return Ok(());
        }
        let parts = self.parts(b, ty, mat, inst)?;
        self.nest(inst)?;
        for (i, part) in parts.into_iter().enumerate() {
            let v = e.op(b, op::COMPOSITE_EXTRACT, part.ty, ops![value, i as u32]);
            let (o, a) = at(e, b, off, align, part.offset);
            self.store_at(e, b, part.ty, (o, rel.wrapping_add(part.offset)), a, part.mat, part.comp_stride, v, inst, leaf)?;
        }
        self.depth -= 1;
        Ok(())
    }

    /// One level deeper into a composite (a malformed type may contain itself).
    fn nest(&mut self, inst: &Inst) -> Result<(), RewriteError> {
        if self.depth >= MAX_DEPTH {
            return Err(RewriteError::unsupported(describe(inst), format!("loads or stores a composite nested more than {MAX_DEPTH} levels deep")));
        }
        self.depth += 1;
        Ok(())
    }

    /// `ty` as a scalar/vector leaf of a load or store (None for composites).
    fn leaf(&mut self, b: &Builder, ty: u32, inst: &Inst) -> Result<Option<ScalarVec>, RewriteError> {
        if self.budget == 0 {
            return Err(RewriteError::unsupported(describe(inst), format!("loads or stores a composite of more than {MAX_LEAVES} scalars/vectors")));
        }
        self.budget -= 1;
        match b.scalar_vec(ty) {
            Some(sv) if matches!(sv.width, 8 | 16 | 32 | 64) && (1..=4).contains(&sv.n) => Ok(Some(sv)),
            Some(_) => Err(RewriteError::unsupported(describe(inst), format!("type %{ty} is not an 8/16/32/64-bit scalar or 2-4 component vector"))),
            None => Ok(None),
        }
    }

    /// The members / elements / columns of a composite in an explicit layout.
    fn parts(&self, b: &Builder, ty: u32, mat: MatrixLayout, inst: &Inst) -> Result<Vec<Part>, RewriteError> {
        let t = b.global(ty).ok_or_else(|| RewriteError::malformed(0, format!("{}: type %{ty} not found", describe(inst))))?;
        Ok(match t.op {
            op::TYPE_STRUCT => (0..t.ops.len() as u32)
                .map(|i| {
                    let offset = self.layouts.member_offset(ty, i).ok_or_else(|| {
                        RewriteError::unsupported(describe(inst), format!("member {i} of struct %{ty} has no Offset decoration"))
                    })?;
                    Ok(Part { ty: t.ops[i as usize], offset, mat: self.layouts.matrix(ty, i), comp_stride: 0 })
                })
                .collect::<Result<_, RewriteError>>()?,
            op::TYPE_ARRAY => {
                let n = b.const_value(t.ops[1]).ok_or_else(|| RewriteError::unsupported(describe(inst), "array length is a specialization constant"))?;
                if n > MAX_LEAVES as u64 {
                    return Err(RewriteError::unsupported(describe(inst), format!("loads or stores an array of {n} elements (at most {MAX_LEAVES})")));
                }
                let n = n as u32;
                let stride = self.layouts.array_stride(ty).ok_or_else(|| RewriteError::unsupported(describe(inst), format!("array %{ty} has no ArrayStride")))?;
                (0..n).map(|i| Ok(Part { ty: t.ops[0], offset: scaled(i, stride, inst)?, mat, comp_stride: 0 })).collect::<Result<_, RewriteError>>()?
            }
            op::TYPE_MATRIX => {
                // OpTypeMatrix: "Column Count is the number of columns ... must be at least 2"
                // and at most 4 (Vector16 aside); a damaged count must not size a Vec.
                let columns = *t.ops.get(1).unwrap_or(&0);
                if !(2..=4).contains(&columns) {
                    return Err(RewriteError::malformed(0, format!("{}: matrix type %{ty} has {columns} columns", describe(inst))));
                }
                let comp = b.scalar_vec(t.ops[0]).map_or(4, |v| v.width / 8);
                no_matrix_stride(mat, ty, inst)?;
                (0..columns)
                    .map(|j| {
                        Ok(if mat.row_major {
                            Part { ty: t.ops[0], offset: j * comp, mat, comp_stride: mat.stride }
                        } else {
                            Part { ty: t.ops[0], offset: scaled(j, mat.stride, inst)?, mat, comp_stride: 0 }
                        })
                    })
                    .collect::<Result<_, RewriteError>>()?
            }
            _ => return Err(RewriteError::unsupported(describe(inst), format!("loads or stores a value of type %{ty} (runtime arrays and opaque types cannot be)"))),
        })
    }
}

/// A matrix in memory is laid out by the MatrixStride (and RowMajor) of the struct member that
/// holds it, or holds the array of matrices it is in (SPIR-V spec 2.16.2, Vulkan "Offset and
/// Stride Assignment"); a matrix reached without one (through a pointer to the matrix itself)
/// has no layout the lowering can follow: an error, not columns at a guessed stride.
fn no_matrix_stride(mat: MatrixLayout, ty: u32, inst: &Inst) -> Result<(), RewriteError> {
    if mat.stride != 0 {
        return Ok(());
    }
    Err(RewriteError::unsupported(describe(inst), format!("accesses matrix %{ty} without a MatrixStride (none on a struct member along its access chain)")))
}

/// `k × stride` bytes, the offset of part `k`. Offsets are 32-bit: a layout (ArrayStride,
/// MatrixStride) that puts a part past 4 GiB is refused, not wrapped.
fn scaled(k: u32, stride: u32, inst: &Inst) -> Result<u32, RewriteError> {
    k.checked_mul(stride).ok_or_else(|| RewriteError::unsupported(describe(inst), format!("its explicit layout puts part {k} at {k} × {stride} bytes, past the 4 GiB the lowering addresses")))
}

/// Offset `off + c` and its alignment.
fn at(e: &mut Emitter, b: &mut Builder, off: u32, align: u32, c: u32) -> (u32, u32) {
    if c == 0 {
        return (off, align);
    }
    let u32t = b.t_u32();
    let k = b.c_u32(c);
    (e.op(b, op::I_ADD, u32t, ops![off, k]), align.min(pow2_align(c)))
}

/// Does a loaded 16-bit float leaf come back as itself, not as its f32 twin? Where the module
/// has Float16 a function may return f16 values, and the backend makes them from the loaded
/// bits (OpBitcast), so NaN payloads survive: a conversion through f32 may quiet or
/// canonicalize them (lavapipe's f16 → f32 unpacking does), and a load converts nothing.
pub(crate) fn loads_f16_exactly(b: &Builder, sv: ScalarVec) -> bool {
    sv.float && sv.width == 16 && b.m.has_capability(crate::builder::cap::FLOAT16)
}

/// Does an 8/16-bit leaf cross a helper's boundary as its 32-bit twin (`store`: into the helper,
/// else loaded out of it)? Every one does but a loaded 16-bit float where [`loads_f16_exactly`].
pub(crate) fn moves_as_twin(b: &Builder, sv: ScalarVec, store: bool) -> bool {
    sv.width < 32 && (store || !loads_f16_exactly(b, sv))
}

/// Width conversion between an 8/16-bit scalar/vector type and its 32-bit twin.
fn convert(e: &mut Emitter, b: &mut Builder, v: u32, sv: ScalarVec, to: u32) -> u32 {
    let opcode = if sv.float { op::F_CONVERT } else if sv.signed { op::S_CONVERT } else { op::U_CONVERT };
    e.op(b, opcode, to, ops![v])
}

/// The 32-bit twin of a small scalar/vector type.
fn wide_ty(b: &mut Builder, sv: ScalarVec) -> u32 {
    let c = if sv.float { b.t_float(32) } else { b.t_int(32, sv.signed) };
    b.t_vec(c, sv.n)
}
