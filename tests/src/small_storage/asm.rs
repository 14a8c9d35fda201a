//! A SPIR-V assembly text builder for the 8/16-bit storage tests. Unlike `matrix::asm` it never
//! adds capabilities on its own: a module declares exactly the storage capabilities (and, when
//! asked, the arithmetic ones) the generator chooses, so "storage only" modules really have no
//! Int8/Int16/Float16.

pub use spvasm::Declare;

#[derive(Default)]
pub struct Asm {
    /// SPIR-V minor version (0, 3, 5, 6).
    pub minor: u32,
    sections: spvasm::Collected,
    /// (id, always listed in the interface (Input/Output)).
    vars: Vec<(String, bool)>,
    body: Vec<String>,
    n: u32,
}

impl Declare for Asm {
    fn collected(&mut self) -> &mut spvasm::Collected {
        &mut self.sections
    }
}

impl Asm {
    pub fn new(minor: u32) -> Self {
        let mut a = Asm { minor, ..Default::default() };
        a.cap("Shader");
        a
    }

    pub fn has_cap(&self, c: &str) -> bool {
        self.sections.has_cap(c)
    }
    /// A fresh id.
    pub fn tmp(&mut self) -> String {
        self.n += 1;
        format!("%t{}", self.n)
    }
    /// Appends one instruction to the entry point's body.
    pub fn op(&mut self, line: impl Into<String>) {
        self.body.push(line.into());
    }
    /// `%t = <rhs>` in the body; returns `%t`.
    pub fn val(&mut self, rhs: impl AsRef<str>) -> String {
        let t = self.tmp();
        self.body.push(format!("{t} = {}", rhs.as_ref()));
        t
    }
    /// A fresh label (not emitted).
    pub fn label(&mut self) -> String {
        self.n += 1;
        format!("%L{}", self.n)
    }

    pub fn u32(&mut self) -> String {
        self.def("u32", |_| "OpTypeInt 32 0".into())
    }
    pub fn i32(&mut self) -> String {
        self.def("i32", |_| "OpTypeInt 32 1".into())
    }
    pub fn f32(&mut self) -> String {
        self.def("f32", |_| "OpTypeFloat 32".into())
    }
    /// `OpTypeInt bits signed` / `OpTypeFloat bits` (no capability added).
    pub fn int(&mut self, bits: u32, signed: bool) -> String {
        let key = format!("{}{bits}", if signed { "i" } else { "u" });
        self.def(&key, |_| format!("OpTypeInt {bits} {}", signed as u32))
    }
    pub fn float(&mut self, bits: u32) -> String {
        self.def(&format!("f{bits}"), |_| format!("OpTypeFloat {bits}"))
    }
    /// Vector of `n` (the element itself for n = 1).
    pub fn vec(&mut self, elem: &str, n: u32) -> String {
        if n == 1 {
            return elem.to_string();
        }
        let key = format!("{}v{n}", &elem[1..]);
        let elem = elem.to_string();
        self.def(&key, |_| format!("OpTypeVector {elem} {n}"))
    }
    pub fn ptr(&mut self, sc: &str, pointee: &str) -> String {
        let key = format!("p{sc}_{}", &pointee[1..]);
        let pointee = pointee.to_string();
        let sc = sc.to_string();
        self.def(&key, |_| format!("OpTypePointer {sc} {pointee}"))
    }
    pub fn c_u32(&mut self, v: u32) -> String {
        let u = self.u32();
        self.def(&format!("cu{v}"), |_| format!("OpConstant {u} {v}"))
    }
    /// A constant of any scalar type, keyed by its text.
    pub fn constant(&mut self, ty: &str, literal: &str) -> String {
        let key = format!("c_{}_{}", &ty[1..], literal.replace(['-', '.', '+'], "_"));
        let (ty, literal) = (ty.to_string(), literal.to_string());
        self.def(&key, |_| format!("OpConstant {ty} {literal}"))
    }
    /// A composite constant of `n` copies of `scalar` (the scalar for n = 1).
    pub fn splat(&mut self, vec_ty: &str, scalar: &str, n: u32) -> String {
        if n == 1 {
            return scalar.to_string();
        }
        let key = format!("s_{}_{}", &vec_ty[1..], &scalar[1..]);
        let parts = vec![scalar.to_string(); n as usize].join(" ");
        let vec_ty = vec_ty.to_string();
        self.def(&key, |_| format!("OpConstantComposite {vec_ty} {parts}"))
    }
    /// `OpTypeArray elem len` with `ArrayStride stride`.
    pub fn array(&mut self, elem: &str, len: u32, stride: u32) -> String {
        let c = self.c_u32(len);
        let key = format!("a_{}_{len}_s{stride}", &elem[1..]);
        self.deco(format!("OpDecorate %{key} ArrayStride {stride}"));
        let elem = elem.to_string();
        self.def(&key, |_| format!("OpTypeArray {elem} {c}"))
    }
    /// `OpTypeRuntimeArray elem` with `ArrayStride stride`.
    pub fn runtime_array(&mut self, elem: &str, stride: u32) -> String {
        let key = format!("r_{}_s{stride}", &elem[1..]);
        self.deco(format!("OpDecorate %{key} ArrayStride {stride}"));
        let elem = elem.to_string();
        self.def(&key, |_| format!("OpTypeRuntimeArray {elem}"))
    }
    /// A new struct type `%name` with members at offsets; `block`: "Block" / "BufferBlock".
    pub fn struct_t(&mut self, name: &str, members: &[(String, u32)], block: Option<&str>) -> String {
        for (i, (_, off)) in members.iter().enumerate() {
            self.deco(format!("OpMemberDecorate %{name} {i} Offset {off}"));
        }
        if let Some(b) = block {
            self.deco(format!("OpDecorate %{name} {b}"));
        }
        let tys: Vec<String> = members.iter().map(|(t, _)| t.clone()).collect();
        self.def(name, |_| format!("OpTypeStruct {}", tys.join(" ")))
    }
    /// A global variable `%name` of pointer type `ptr` in `sc`.
    pub fn var(&mut self, name: &str, ptr: &str, sc: &str) -> String {
        let (ptr, sc2) = (ptr.to_string(), sc.to_string());
        let id = self.def(name, |_| format!("OpVariable {ptr} {sc2}"));
        self.vars.push((id.clone(), matches!(sc, "Input" | "Output")));
        id
    }
    /// A descriptor: DescriptorSet 0, `binding`.
    pub fn binding(&mut self, var: &str, binding: u32) {
        self.deco(format!("OpDecorate {var} DescriptorSet 0"));
        self.deco(format!("OpDecorate {var} Binding {binding}"));
    }
    /// An `Input` builtin variable.
    pub fn builtin_input(&mut self, name: &str, builtin: &str, ty: &str) -> String {
        let p = self.ptr("Input", ty);
        let v = self.var(name, &p, "Input");
        self.deco(format!("OpDecorate {v} BuiltIn {builtin}"));
        v
    }

    /// The interface list of the entry point: Input/Output variables (SPIR-V ≤ 1.3) or every
    /// global variable (1.4+).
    pub fn interface(&self) -> String {
        self.vars
            .iter()
            .filter(|(_, io)| *io || self.minor >= 4)
            .map(|(v, _)| v.clone())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The whole module with one entry point `main` whose body is what was emitted.
    /// `model`: "GLCompute" / "Vertex" / "Fragment"; `modes`: execution mode lines' tails.
    pub fn finish(&mut self, model: &str, modes: &[String]) -> String {
        let void = self.void();
        let fnty = self.def("fn_void", |_| format!("OpTypeFunction {void}"));
        let mut s = String::new();
        s += &self.sections.capabilities_and_extensions();
        s += "OpMemoryModel Logical GLSL450\n";
        s += &format!("OpEntryPoint {model} %main \"main\" {}\n", self.interface());
        for m in modes {
            s += &format!("OpExecutionMode %main {m}\n");
        }
        s += &self.sections.decorations_and_globals();
        s += &format!("%main = OpFunction {void} None {fnty}\n%entry = OpLabel\n");
        for l in &self.body {
            s += l;
            s.push('\n');
        }
        s += "OpReturn\nOpFunctionEnd\n";
        s
    }
}
