//! Random buffer layouts reached through physical pointers: a generated differential test of
//! the buffer-device-address lowering's chains, layouts and leaf splitting (the shapes
//! [`crate::bda::chain_paths`] lists by hand, at random).
//!
//! A case is a random element type `S` (nested structs, arrays with padded strides, column-
//! and row-major matrices with padded MatrixStride, vectors; 8-, 16-, 32- and 64-bit scalars) laid out
//! by the standard storage-buffer rules with random padding, and 1 to 3 random access chains
//! into it, with constant and dynamic (`gl_GlobalInvocationID.x % n`) indices, each stopping at
//! a random depth: a whole struct, array or matrix, a column (strided in a row-major matrix),
//! a vector or one component, some written as two chains or with an OpPtrAccessChain from an
//! element pointer. Invocation `i` loads each chain's value in `src[i]` and stores
//! it at the same chain in `dst[i]` (the `Aligned` operand: the largest power of two the
//! address is known to be a multiple of, at most 16). The test runs every case natively and
//! with the emulation forced, and compares `dst` byte for byte: the copy is exact only if the
//! lowering found every leaf's offset (member offsets, strides, majorness) as the driver does.
use crate::bda::{base, compute, push_constants, push_loads};
use crate::matrix::rng::Rng;
use spvasm::Module;

/// Bytes per element of the buffers' runtime arrays: a multiple of 16 at least the size of `S`.
pub fn element_stride(c: &Case) -> u32 {
    round_up(c.root.size(), 16)
}

/// The seeds a test runs: `BDA_RANDOM_CASES` (default 24; 1000 under `POLYFILL_FULL_SWEEP=1`)
/// from `BDA_RANDOM_SEED` (default 1) on.
pub fn seeds() -> std::ops::Range<u64> {
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let first = env("BDA_RANDOM_SEED", 1);
    first..first + env("BDA_RANDOM_CASES", if crate::sweep::full_sweep() { 1000 } else { 24 })
}

/// The `src` buffer of 64 elements: small bytes (no float NaN or infinity whose bits a
/// conversion might change).
pub fn input(c: &Case) -> Vec<u8> {
    (0..64 * element_stride(c) as usize).map(|i| ((i * 37 + 11) % 251) as u8 & 0x3f).collect()
}

/// Scalars of the generated types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scalar {
    U32,
    I32,
    F32,
    U64,
    F64,
    U8,
    U16,
    I16,
    F16,
}

impl Scalar {
    fn bytes(self) -> u32 {
        match self {
            Scalar::U64 | Scalar::F64 => 8,
            Scalar::U8 => 1,
            Scalar::U16 | Scalar::I16 | Scalar::F16 => 2,
            _ => 4,
        }
    }
    /// spvasm's standard name (`%u32` …).
    fn name(self) -> &'static str {
        match self {
            Scalar::U32 => "u32",
            Scalar::I32 => "i32",
            Scalar::F32 => "f32",
            Scalar::U64 => "u64",
            Scalar::F64 => "f64",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::I16 => "i16",
            Scalar::F16 => "f16",
        }
    }
    /// The name of a vector of it: spvasm's standard `%v3f` for 32-bit and f16 ones, the
    /// module's own declaration for the others.
    fn vector(self, n: u32) -> String {
        match self {
            Scalar::U32 => format!("v{n}u"),
            Scalar::I32 => format!("v{n}i"),
            Scalar::F32 => format!("v{n}f"),
            Scalar::U64 => format!("vul{n}"),
            Scalar::F64 => format!("vd{n}"),
            Scalar::U8 => format!("vub{n}"),
            Scalar::U16 => format!("vus{n}"),
            Scalar::I16 => format!("vis{n}"),
            Scalar::F16 => format!("v{n}h"),
        }
    }
    /// Declared by spvasm (see [`Scalar::vector`]).
    fn standard_vector(self) -> bool {
        matches!(self, Scalar::U32 | Scalar::I32 | Scalar::F32 | Scalar::F16)
    }
}

/// A generated type with its layout.
#[derive(Clone, Debug)]
enum Ty {
    Scalar(Scalar),
    Vector(Scalar, u32),
    /// `cols` columns of `vec{rows}` f32; its layout comes from the struct member it is in.
    Matrix { cols: u32, rows: u32 },
    /// `len` elements `stride` bytes apart; `id` names its declaration.
    Array { elem: Box<Ty>, len: u32, stride: u32, id: usize },
    Struct { members: Vec<Member>, id: usize },
}

#[derive(Clone, Debug)]
struct Member {
    ty: Ty,
    offset: u32,
    /// For a matrix, or an array of matrices: RowMajor, MatrixStride.
    layout: Option<(bool, u32)>,
}

fn round_up(x: u32, a: u32) -> u32 {
    x.div_ceil(a) * a
}

fn vector_align(s: Scalar, n: u32) -> u32 {
    s.bytes() * if n == 2 { 2 } else { 4 }
}

impl Ty {
    /// Base alignment (standard storage-buffer layout). A matrix's depends on its majorness:
    /// [`Member::align`].
    fn align(&self, layout: Option<(bool, u32)>) -> u32 {
        match self {
            Ty::Scalar(s) => s.bytes(),
            Ty::Vector(s, n) => vector_align(*s, *n),
            // A row-major matrix's is its row vector's (Vulkan "Offset and Stride Assignment"),
            // but spirv-val (2025.5) takes the column vector's for a struct nested in an
            // array, so the generator keeps to the larger of the two there.
            Ty::Matrix { cols, rows } => {
                let (row_major, _) = layout.expect("a matrix has a layout");
                let column = vector_align(Scalar::F32, *rows);
                if row_major { column.max(vector_align(Scalar::F32, *cols)) } else { column }
            }
            Ty::Array { elem, .. } => elem.align(layout),
            Ty::Struct { members, .. } => members.iter().map(|m| m.ty.align(m.layout)).max().unwrap_or(4),
        }
    }
    fn size_with(&self, layout: Option<(bool, u32)>) -> u32 {
        match self {
            Ty::Scalar(s) => s.bytes(),
            Ty::Vector(s, n) => s.bytes() * n,
            Ty::Matrix { cols, rows } => {
                let (row_major, stride) = layout.expect("a matrix has a layout");
                stride * if row_major { *rows } else { *cols }
            }
            Ty::Array { len, stride, .. } => len * stride,
            Ty::Struct { .. } => self.size(),
        }
    }
    /// A struct's size: its last member's end rounded up to its alignment.
    fn size(&self) -> u32 {
        match self {
            Ty::Struct { members, .. } => {
                let end = members.iter().map(|m| m.offset + m.ty.size_with(m.layout)).max().unwrap_or(0);
                round_up(end, self.align(None))
            }
            _ => self.size_with(None),
        }
    }
    fn has_matrix(&self) -> bool {
        match self {
            Ty::Matrix { .. } => true,
            Ty::Array { elem, .. } => elem.has_matrix(),
            _ => false,
        }
    }
    /// Its SPIR-V name (without `%`).
    fn name(&self) -> String {
        match self {
            Ty::Scalar(s) => s.name().into(),
            Ty::Vector(s, n) => s.vector(*n),
            Ty::Matrix { cols, rows } => format!("m{cols}x{rows}"),
            Ty::Array { id, .. } => format!("arr{id}"),
            Ty::Struct { id, .. } => format!("st{id}"),
        }
    }
    fn scalars(&self, out: &mut Vec<Scalar>) {
        match self {
            Ty::Scalar(s) | Ty::Vector(s, _) => out.push(*s),
            Ty::Matrix { .. } => out.push(Scalar::F32),
            Ty::Array { elem, .. } => elem.scalars(out),
            Ty::Struct { members, .. } => members.iter().for_each(|m| m.ty.scalars(out)),
        }
    }
    fn describe(&self, layout: Option<(bool, u32)>) -> String {
        match self {
            Ty::Scalar(s) => s.name().into(),
            Ty::Vector(s, n) => format!("{}x{n}", s.name()),
            Ty::Matrix { cols, rows } => match layout {
                Some((row_major, stride)) => format!("mat{cols}x{rows}({}, stride {stride})", if row_major { "row" } else { "col" }),
                None => format!("mat{cols}x{rows}"), // a chain's value: its member's layout
            },
            Ty::Array { elem, len, stride, .. } => format!("{}[{len}] stride {stride}", elem.describe(layout)),
            Ty::Struct { members, .. } => {
                let ms: Vec<String> = members.iter().map(|m| format!("@{} {}", m.offset, m.ty.describe(m.layout))).collect();
                format!("{{ {} }}", ms.join(", "))
            }
        }
    }
}

/// The generator's state: the next declaration number, and whether 64-bit and 8/16-bit
/// scalars may appear.
struct Gen<'r> {
    rng: &'r mut Rng,
    next_id: usize,
    wide: bool,
    narrow: bool,
}

impl Gen<'_> {
    fn scalar(&mut self) -> Scalar {
        let mut pool = vec![Scalar::U32, Scalar::I32, Scalar::F32];
        if self.wide {
            pool.extend([Scalar::U64, Scalar::F64]);
        }
        if self.narrow {
            pool.extend([Scalar::U8, Scalar::U16, Scalar::I16, Scalar::F16]);
        }
        self.rng.pick(&pool)
    }

    /// A member type at `depth` (0 = the root's members); matrices only as members (or arrays
    /// of them), where their layout lives.
    fn member(&mut self, depth: u32) -> Member {
        let roll = self.rng.below(if depth >= 2 { 3 } else { 6 });
        let ty = match roll {
            0 => Ty::Scalar(self.scalar()),
            1 => Ty::Vector(self.scalar(), self.rng.range(2, 4) as u32),
            2 => Ty::Matrix { cols: self.rng.range(2, 4) as u32, rows: self.rng.range(2, 4) as u32 },
            3 | 4 => {
                let inner = self.member(depth + 1);
                let layout = inner.layout;
                let elem = inner.ty;
                let (align, size) = (elem.align(layout), elem.size_with(layout));
                let stride = round_up(size, align) + align * self.rng.below(2) as u32;
                self.next_id += 1;
                let arr = Ty::Array { elem: Box::new(elem), len: self.rng.range(2, 4) as u32, stride, id: self.next_id };
                return Member { ty: arr, offset: 0, layout };
            }
            _ => return self.structure(depth + 1),
        };
        let layout = ty.has_matrix().then(|| self.matrix_layout(&ty));
        Member { ty, offset: 0, layout } // placed by `structure`
    }

    /// RowMajor or not, and a MatrixStride: the major vector's size rounded up to its
    /// alignment, sometimes padded to 32.
    fn matrix_layout(&mut self, ty: &Ty) -> (bool, u32) {
        let Ty::Matrix { cols, rows } = ty else { unreachable!("a matrix") };
        let row_major = self.rng.chance(1, 2);
        let n = if row_major { *cols } else { *rows };
        let tight = round_up(4 * n, vector_align(Scalar::F32, n));
        (row_major, if self.rng.chance(1, 3) { tight.max(32) } else { tight })
    }

    /// A struct of 1 to 4 members placed in order at their alignment, sometimes one alignment
    /// further.
    fn structure(&mut self, depth: u32) -> Member {
        let n = self.rng.range(1, if depth == 0 { 4 } else { 3 });
        let mut members = vec![];
        let mut at = 0;
        for _ in 0..n {
            let mut m = self.member(depth);
            let align = m.ty.align(m.layout);
            m.offset = round_up(at, align) + align * self.rng.below(2) as u32;
            at = m.offset + m.ty.size_with(m.layout);
            members.push(m);
        }
        self.next_id += 1;
        Member { ty: Ty::Struct { members, id: self.next_id }, offset: 0, layout: None }
    }
}

/// One step of a chain: its index operand, and what it adds to the offset.
struct Step {
    operand: String,
    /// Constant bytes added, or the stride a dynamic index multiplies.
    bytes: u32,
    dynamic: bool,
    /// The type the chain has reached after this step, if a second chain may start there
    /// (not a row-major matrix's column: its pointer may not be used as a value,
    /// `VUID-StandaloneSpirv-PhysicalStorageBuffer64-04709`).
    base: Option<Ty>,
    /// An array's index: the array's stride.
    array_stride: Option<u32>,
}

/// How a chain is written: one OpAccessChain, two (the second on the first's pointer, after
/// step `k`), or one to element 0 of the array indexed at step `k` and an OpPtrAccessChain
/// whose Element is that step's index (the pointer type decorated with the array's stride).
#[derive(Clone, Copy, Debug)]
enum Split {
    None,
    After(usize),
    Element(usize),
}

/// One generated case.
pub struct Case {
    root: Ty,
    /// Physical pointers (push constants), or storage-buffer descriptors.
    physical: bool,
    /// Int8/Int16/Float16 declared: without them 8/16-bit values move only as scalars and
    /// vectors (SPIR-V's 16-bit storage rules), so chains through them go on to one.
    arith: bool,
    /// Per chain: the type it reaches, its steps, its Aligned value, and how it is written.
    chains: Vec<(Ty, Vec<Step>, u32, Split)>,
}

impl Case {
    /// A case through physical pointers.
    pub fn new(seed: u64) -> Case {
        Self::generate(seed, true)
    }

    /// A case through storage-buffer descriptors `src` (binding 0) and `dst` (binding 1) of
    /// set 0, with 8/16-bit scalars always, for the 8/16-bit storage lowering; its chains move
    /// those only as scalars and vectors (no Int8/Int16/Float16), never through
    /// OpPtrAccessChain (not allowed on storage buffers without VariablePointers).
    pub fn in_storage_buffers(seed: u64) -> Case {
        Self::generate(seed, false)
    }

    fn generate(seed: u64, physical: bool) -> Case {
        let mut rng = Rng::new(seed);
        let (wide, narrow) = (rng.chance(1, 2), !physical || rng.chance(1, 2));
        let mut g = Gen { rng: &mut rng, next_id: 0, wide, narrow };
        let mut root = g.structure(0).ty;
        // Through descriptors the case is for the 8/16-bit lowering: it must have something to lower.
        while !physical && !{
            let mut s = vec![];
            root.scalars(&mut s);
            s.iter().any(|s| s.bytes() < 4)
        } {
            root = g.structure(0).ty;
        }
        let arith = physical && (!narrow || rng.chance(1, 2));
        let chains = (0..rng.range(1, 3)).map(|_| chain(&mut rng, &root, arith, physical)).collect();
        Case { root, physical, arith, chains }
    }

    pub fn describe(&self) -> String {
        let chains: Vec<String> = self
            .chains
            .iter()
            .map(|(ty, steps, align, split)| {
                let s: Vec<String> = steps.iter().map(|s| if s.dynamic { format!("[i % n]×{}", s.bytes) } else { format!("+{}", s.bytes) }).collect();
                let split = match split {
                    Split::None => String::new(),
                    Split::After(k) => format!(" (split after {k})"),
                    Split::Element(k) => format!(" (OpPtrAccessChain at {k})"),
                };
                format!("{} {}{split} Aligned {align}", ty.describe(None), s.join(" "))
            })
            .collect();
        format!("S = {}; chains: {}", self.root.describe(None), chains.join("; "))
    }

    /// The compute shader (SPIR-V 1.5, validated).
    pub fn shader(&self) -> Vec<u32> {
        let mut scalars = vec![];
        self.root.scalars(&mut scalars);
        let mut caps = vec![];
        if scalars.contains(&Scalar::U64) {
            caps.push("Int64");
        }
        if scalars.contains(&Scalar::F64) {
            caps.push("Float64");
        }
        // spirv-val counts the types the push constants' pointers point to as theirs.
        if scalars.iter().any(|s| s.bytes() == 2) {
            caps.extend(["StorageBuffer16BitAccess"].into_iter().chain(self.physical.then_some("StoragePushConstant16")));
        }
        if scalars.contains(&Scalar::U8) {
            caps.extend(["StorageBuffer8BitAccess"].into_iter().chain(self.physical.then_some("StoragePushConstant8")));
        }
        if self.arith {
            let narrow = |t: &[Scalar]| scalars.iter().any(|s| t.contains(s));
            caps.extend([(narrow(&[Scalar::U8]), "Int8"), (narrow(&[Scalar::U16, Scalar::I16]), "Int16"), (narrow(&[Scalar::F16]), "Float16")].into_iter().filter(|c| c.0).map(|c| c.1));
        }
        let mut decl = Decls { class: if self.physical { "PhysicalStorageBuffer" } else { "StorageBuffer" }, ..Default::default() };
        decl.ty(&self.root);
        let stride = element_stride(self);
        decl.decorations += &format!("OpDecorate %rta ArrayStride {stride}\nOpDecorate %BufR Block\nOpMemberDecorate %BufR 0 Offset 0\n");
        decl.globals += "%rta = OpTypeRuntimeArray %st_root\n%BufR = OpTypeStruct %rta\n";
        if self.physical {
            decl.globals += "%pbufR = OpTypePointer PhysicalStorageBuffer %BufR\n";
        }
        // Physical accesses carry Aligned (required there).
        let aligned = |a: u32| if self.physical { format!(" Aligned {a}") } else { String::new() };
        let mut code = if self.physical { push_loads(0, &[("src", "%pbufR"), ("dst", "%pbufR")]) } else { String::new() };
        let mut moves = String::new();
        for (k, (ty, steps, align, split)) in self.chains.iter().enumerate() {
            let ptr = decl.pointer(ty);
            let ops: Vec<&str> = steps.iter().map(|s| s.operand.as_str()).collect();
            for side in ["src", "dst"] {
                match *split {
                    Split::After(at) => {
                        let mid = decl.pointer(steps[at - 1].base.as_ref().expect("a split point"));
                        code += &format!("%{side}{k}a = OpAccessChain {mid} %{side} %c0 %gx {}\n", ops[..at].join(" "));
                        code += &format!("%{side}{k} = OpAccessChain {ptr} %{side}{k}a {}\n", ops[at..].join(" "));
                    }
                    Split::Element(at) => {
                        let elem = decl.strided_pointer(steps[at].base.as_ref().expect("an element"), steps[at].array_stride.expect("an array"));
                        code += &format!("%{side}{k}a = OpAccessChain {elem} %{side} %c0 %gx {} %c0\n", ops[..at].join(" "));
                        code += &format!("%{side}{k} = OpPtrAccessChain {ptr} %{side}{k}a {}\n", ops[at..].join(" "));
                    }
                    Split::None => code += &format!("%{side}{k} = OpAccessChain {ptr} %{side} %c0 %gx {}\n", ops.join(" ")),
                }
            }
            code += &format!("%v{k} = OpLoad %{} %src{k}{}\n", ty.name(), aligned(*align));
            moves += &format!("OpStore %dst{k} %v{k}{}\n", aligned(*align));
        }
        let mut dynamic: Vec<u32> = self.chains.iter().flat_map(|(_, steps, _, _)| steps.iter().filter(|s| s.dynamic).filter_map(|s| s.operand.strip_prefix("%d").map(|n| n.parse().unwrap()))).collect();
        dynamic.sort_unstable();
        dynamic.dedup();
        let indices: String = dynamic.iter().map(|n| format!("%d{n} = OpUMod %u32 %gx %c{n}\n")).collect();
        let start = if self.physical { base(&[]) } else { Module::compute(64).spirv(5).gid() };
        let m = caps.iter().fold(start, |m, c| m.cap(c)).decorate(decl.decorations.trim_end()).globals(decl.globals.trim_end());
        let m = if self.physical { push_constants(m, &["%pbufR", "%pbufR"]) } else { m.buffer("src", "BufR", 0, 0).buffer("dst", "BufR", 0, 1) };
        compute(m, &format!("{indices}{code}{moves}"))
    }
}

/// A random chain into `root`: (the type reached, the steps, Aligned, how it is written).
/// Without `arith`, it stops at no struct or array holding an 8/16-bit scalar; without
/// `element`, it has no OpPtrAccessChain.
fn chain(rng: &mut Rng, root: &Ty, arith: bool, element: bool) -> (Ty, Vec<Step>, u32, Split) {
    let mut steps: Vec<Step> = vec![];
    let mut ty = root.clone();
    let mut layout: Option<(bool, u32)> = None;
    // Within a row-major matrix's column: the component stride is the MatrixStride.
    let mut component_stride: Option<u32> = None;
    loop {
        let movable = arith || matches!(ty, Ty::Scalar(_) | Ty::Vector(..) | Ty::Matrix { .. }) || {
            let mut s = vec![];
            ty.scalars(&mut s);
            s.iter().all(|s| s.bytes() >= 4)
        };
        if !steps.is_empty() && movable && rng.chance(1, 4) {
            break;
        }
        let (len, next, bytes_per) = match &ty {
            Ty::Scalar(_) => break,
            Ty::Struct { members, .. } => {
                let k = rng.below(members.len() as u64) as usize;
                let m = &members[k];
                steps.push(Step { operand: format!("%c{k}"), bytes: m.offset, dynamic: false, base: Some(m.ty.clone()), array_stride: None });
                layout = m.layout;
                ty = m.ty.clone();
                continue;
            }
            Ty::Array { elem, len, stride, .. } => (*len, (**elem).clone(), *stride),
            // A column: MatrixStride apart in a column-major matrix, one component apart in a
            // row-major one, whose column's components are then MatrixStride apart.
            Ty::Matrix { cols, rows } => {
                let (row_major, stride) = layout.expect("a matrix has a layout");
                component_stride = Some(if row_major { stride } else { 4 });
                (*cols, Ty::Vector(Scalar::F32, *rows), if row_major { 4 } else { stride })
            }
            Ty::Vector(s, n) => (*n, Ty::Scalar(*s), component_stride.take().unwrap_or(s.bytes())),
        };
        let row_major_column = matches!(ty, Ty::Matrix { .. }) && layout.is_some_and(|l| l.0);
        let base = (!row_major_column).then(|| next.clone());
        let array_stride = matches!(ty, Ty::Array { .. }).then_some(bytes_per);
        if rng.chance(1, 2) {
            let k = rng.below(len as u64) as u32;
            steps.push(Step { operand: format!("%c{k}"), bytes: k * bytes_per, dynamic: false, base, array_stride });
        } else {
            steps.push(Step { operand: format!("%d{len}"), bytes: bytes_per, dynamic: true, base, array_stride });
        }
        ty = next;
    }
    // The address: element base (a multiple of 16) + the steps; Aligned = the largest power of
    // two dividing every term, at most 16.
    let g = steps.iter().fold(16u32, |g, s| if s.bytes == 0 { g } else { g.min(1 << s.bytes.trailing_zeros()) });
    let arrays: Vec<usize> = (0..steps.len()).filter(|&k| steps[k].array_stride.is_some()).collect();
    let splits: Vec<usize> = (1..steps.len()).filter(|&k| steps[k - 1].base.is_some()).collect();
    let split = if element && !arrays.is_empty() && rng.chance(1, 3) {
        Split::Element(rng.pick(&arrays))
    } else if !splits.is_empty() && rng.chance(1, 2) {
        Split::After(rng.pick(&splits))
    } else {
        Split::None
    };
    (ty, steps, g, split)
}

/// The declarations of a case's types; `class`: its pointers' storage class.
#[derive(Default)]
struct Decls {
    class: &'static str,
    decorations: String,
    globals: String,
    declared: Vec<String>,
}

impl Decls {
    /// Declares `ty` (and what it is made of) once; the root struct is `%st_root`.
    fn ty(&mut self, ty: &Ty) -> String {
        let name = if matches!(ty, Ty::Struct { .. }) && self.declared.is_empty() { "st_root".to_string() } else { ty.name() };
        if self.declared.contains(&name) {
            return name;
        }
        match ty {
            Ty::Scalar(_) => return name,
            Ty::Vector(s, n) => {
                if s.standard_vector() {
                    return name;
                }
                self.globals += &format!("%{name} = OpTypeVector %{} {n}\n", s.name());
            }
            Ty::Matrix { cols, rows } => {
                self.globals += &format!("%{name} = OpTypeMatrix %v{rows}f {cols}\n");
            }
            Ty::Array { elem, len, stride, .. } => {
                let e = self.ty(elem);
                self.decorations += &format!("OpDecorate %{name} ArrayStride {stride}\n");
                self.globals += &format!("%{name} = OpTypeArray %{e} %c{len}\n");
            }
            Ty::Struct { members, .. } => {
                self.declared.push(name.clone());
                let ms: Vec<String> = members.iter().map(|m| self.ty(&m.ty)).collect();
                for (k, m) in members.iter().enumerate() {
                    self.decorations += &format!("OpMemberDecorate %{name} {k} Offset {}\n", m.offset);
                    if let Some((row_major, stride)) = m.layout {
                        self.decorations += &format!("OpMemberDecorate %{name} {k} {}\nOpMemberDecorate %{name} {k} MatrixStride {stride}\n", if row_major { "RowMajor" } else { "ColMajor" });
                    }
                }
                self.globals += &format!("%{name} = OpTypeStruct {}\n", ms.iter().map(|m| format!("%{m}")).collect::<Vec<_>>().join(" "));
                return name;
            }
        }
        self.declared.push(name.clone());
        name
    }

    /// A PhysicalStorageBuffer pointer type to `ty` decorated ArrayStride `stride`, for the
    /// base of an OpPtrAccessChain (declared once per stride).
    fn strided_pointer(&mut self, ty: &Ty, stride: u32) -> String {
        let name = format!("q_{}_s{stride}", ty.name());
        if !self.declared.contains(&name) {
            let pointee = self.ty(ty);
            self.decorations += &format!("OpDecorate %{name} ArrayStride {stride}\n");
            self.globals += &format!("%{name} = OpTypePointer PhysicalStorageBuffer %{pointee}\n");
            self.declared.push(name.clone());
        }
        format!("%{name}")
    }

    /// The PhysicalStorageBuffer pointer type to `ty` (declared once).
    fn pointer(&mut self, ty: &Ty) -> String {
        let name = ty.name();
        let ptr = format!("q_{name}");
        if !self.declared.contains(&ptr) {
            let pointee = self.ty(ty);
            self.globals += &format!("%{ptr} = OpTypePointer {} %{pointee}\n", self.class);
            self.declared.push(ptr.clone());
        }
        format!("%{ptr}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default cases (seeds 1 to 24) and a wider sample reach every shape the generator
    /// writes, so the differential test exercises them.
    #[test]
    fn cases_reach_every_shape() {
        let all: Vec<String> = (1..=200).map(|seed| Case::new(seed).describe()).collect();
        let first: Vec<&String> = all.iter().take(24).collect();
        for (what, needle) in [
            ("a row-major matrix", "(row, stride"),
            ("a column-major matrix", "(col, stride"),
            ("a dynamic index", "[i % n]"),
            ("an OpPtrAccessChain", "OpPtrAccessChain"),
            ("a chain on a chain", "split after"),
            ("a 64-bit scalar", "f64"),
            ("an 8-bit scalar", "u8"),
            ("a 16-bit scalar", "16"),
        ] {
            assert!(first.iter().any(|d| d.contains(needle)), "no case of seeds 1-24 has {what}");
            assert!(all.iter().filter(|d| d.contains(needle)).count() >= 10, "fewer than 10 of 200 cases have {what}");
        }
    }

    /// Some of the physical cases load neighbouring values through one place before storing
    /// them, or whole composites whose leaves lie side by side, so the lowering on lavapipe's
    /// options reads those as one unit (`physical_storage_buffer::combine`, `units`; 36 of the
    /// 200 on 2026-12-02) and the differential test checks that too.
    #[test]
    fn cases_reach_combined_loads() {
        let options = shader_rewrite::Options {
            target: shader_rewrite::Target::lavapipe(),
            bda: Some(shader_rewrite::BdaTable { set: 7, binding: 3, count: 65536 }),
            ..Default::default()
        };
        let combined = |seed: u64| shader_rewrite::rewrite(&Case::new(seed).shader(), &options).map_or(0, |r| r.stats.physical_combined_loads);
        let hits: Vec<u64> = (1..=200).filter(|&seed| combined(seed) > 0).collect();
        assert!(hits.len() >= 20, "{} of 200 random cases combine loads", hits.len());
        // (Seeds 1 to 24 are the default run's: 3 of them on 2026-12-02.)
        assert!(hits.iter().any(|&seed| seed <= 24), "no case of seeds 1-24 combines loads");
    }
}
