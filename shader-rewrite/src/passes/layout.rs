//! Explicit layouts (SPIR-V spec 2.16.2 "Validation Rules for Shader Capabilities", Vulkan
//! "Offset and Stride Assignment"): member Offsets, ArrayStrides, MatrixStrides and RowMajor,
//! read once from the annotations, and what a type contains.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::builder::{deco, Builder};
use crate::module::{op, Module};

const ROW_MAJOR: u32 = 4;
const MATRIX_STRIDE: u32 = 7;
pub(crate) const BUILT_IN: u32 = 11;

#[derive(Default)]
pub(crate) struct Layouts {
    offset: HashMap<(u32, u32), u32>,
    matrix_stride: HashMap<(u32, u32), u32>,
    row_major: HashSet<(u32, u32)>,
    array_stride: HashMap<u32, u32>,
    /// Structs with a BuiltIn member (gl_PerVertex and friends).
    builtin_structs: HashSet<u32>,
}

/// How the matrices inside a struct member are laid out (MatrixStride, RowMajor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct MatrixLayout {
    pub stride: u32,
    pub row_major: bool,
}

impl Layouts {
    pub fn read(m: &Module) -> Self {
        let mut l = Layouts::default();
        for a in &m.annotations {
            match (a.op, a.ops.as_slice()) {
                (op::MEMBER_DECORATE, [s, i, d, rest @ ..]) => match (*d, rest) {
                    (deco::OFFSET, [v, ..]) => {
                        l.offset.insert((*s, *i), *v);
                    }
                    (MATRIX_STRIDE, [v, ..]) => {
                        l.matrix_stride.insert((*s, *i), *v);
                    }
                    (ROW_MAJOR, _) => {
                        l.row_major.insert((*s, *i));
                    }
                    (BUILT_IN, _) => {
                        l.builtin_structs.insert(*s);
                    }
                    _ => {}
                },
                (op::DECORATE, [t, deco::ARRAY_STRIDE, v, ..]) => {
                    l.array_stride.insert(*t, *v);
                }
                _ => {}
            }
        }
        l
    }
    pub fn member_offset(&self, s: u32, i: u32) -> Option<u32> {
        self.offset.get(&(s, i)).copied()
    }
    pub fn matrix(&self, s: u32, i: u32) -> MatrixLayout {
        MatrixLayout { stride: self.matrix_stride.get(&(s, i)).copied().unwrap_or(0), row_major: self.row_major.contains(&(s, i)) }
    }
    pub fn array_stride(&self, t: u32) -> Option<u32> {
        self.array_stride.get(&t).copied()
    }
    pub fn has_builtin_member(&self, s: u32) -> bool {
        self.builtin_structs.contains(&s)
    }
}

/// Does type `ty` contain (or is it) an int/float scalar of a width in `widths`? Bounded depth,
/// so a malformed self-referencing type cannot recurse forever.
pub(crate) fn contains_width(b: &Builder, ty: u32, widths: &[u32]) -> bool {
    fn go(b: &Builder, ty: u32, widths: &[u32], depth: u32) -> bool {
        if depth > 64 {
            return false;
        }
        let Some(t) = b.global(ty) else { return false };
        match t.op {
            op::TYPE_INT | op::TYPE_FLOAT => t.ops.first().is_some_and(|w| widths.contains(w)),
            op::TYPE_VECTOR | op::TYPE_MATRIX | op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => {
                t.ops.first().is_some_and(|&e| go(b, e, widths, depth + 1))
            }
            op::TYPE_STRUCT => t.ops.iter().any(|&m| go(b, m, widths, depth + 1)),
            _ => false,
        }
    }
    go(b, ty, widths, 0)
}

/// Size in bytes a value of `ty` spans in an explicit layout (an upper bound for matrices and
/// arrays whose strides are missing). Runtime arrays count as empty. None when it does not fit
/// in 32 bits (only a damaged or absurd module: sizes, strides and counts are its own numbers).
pub(crate) fn byte_size(b: &Builder, l: &Layouts, ty: u32, mat: MatrixLayout) -> Option<u32> {
    // u64 with saturating steps: no intermediate can wrap, the result is checked once.
    fn go(b: &Builder, l: &Layouts, ty: u32, mat: MatrixLayout, depth: u32) -> u64 {
        let Some(t) = b.global(ty) else { return 0 };
        if depth > 64 {
            return 0;
        }
        match t.op {
            op::TYPE_INT | op::TYPE_FLOAT => t.ops.first().map_or(0, |w| (w / 8) as u64),
            op::TYPE_VECTOR => go(b, l, t.ops[0], mat, depth + 1).saturating_mul(t.ops[1] as u64),
            op::TYPE_MATRIX => {
                let cols = t.ops[1] as u64;
                let (rows, comp) = b.scalar_vec(t.ops[0]).map_or((0, 0), |v| (v.n as u64, (v.width / 8) as u64));
                let stride = mat.stride as u64;
                let (strided, packed) = if mat.row_major { (rows, cols) } else { (cols, rows) };
                stride.saturating_mul(strided.saturating_sub(1)).saturating_add(comp.saturating_mul(packed))
            }
            op::TYPE_ARRAY => {
                let n = b.const_value(t.ops[1]).unwrap_or(0);
                let stride = l.array_stride(ty).unwrap_or(0) as u64;
                let elem = go(b, l, t.ops[0], mat, depth + 1);
                if n == 0 { 0 } else { stride.saturating_mul(n - 1).saturating_add(elem) }
            }
            op::TYPE_STRUCT => (0..t.ops.len() as u32)
                .map(|i| (l.member_offset(ty, i).unwrap_or(0) as u64).saturating_add(go(b, l, t.ops[i as usize], l.matrix(ty, i), depth + 1)))
                .max()
                .unwrap_or(0),
            _ => 0,
        }
    }
    u32::try_from(go(b, l, ty, mat, 0)).ok()
}

/// Largest power of two (≤ 16) dividing `v` (16 for 0).
pub(crate) fn pow2_align(v: u32) -> u32 {
    if v == 0 { 16 } else { (1 << v.trailing_zeros()).min(16) }
}
