//! A small SPIR-V assembly text builder: deduplicated types/constants in definition order,
//! capability/extension sets, decorations, and fresh result ids.

pub use spvasm::Declare;

#[derive(Default)]
pub struct Asm {
    /// SPIR-V minor version (3, 5, 6).
    pub minor: u32,
    pub physical_storage_buffer: bool,
    sections: spvasm::Collected,
    /// Global variables for the entry point interface.
    iface: Vec<String>,
    /// Interface variables that are listed in every version (Input builtins).
    iface_always: Vec<String>,
    n: u32,
}

impl Declare for Asm {
    fn collected(&mut self) -> &mut spvasm::Collected {
        &mut self.sections
    }
}

impl Asm {
    pub fn new(minor: u32) -> Self {
        let mut a = Asm {
            minor,
            ..Default::default()
        };
        a.cap("Shader");
        a
    }

    /// A fresh temporary id.
    pub fn tmp(&mut self, hint: &str) -> String {
        self.n += 1;
        format!("%{hint}{}", self.n)
    }

    /// Appends to `body` the load of a `pointee` through an access chain `indices` (ids, spaced)
    /// into `base` in storage class `sc`: fresh ids `%{hints.0}N` (the pointer) and
    /// `%{hints.1}N` (the value, returned).
    pub fn load_through(&mut self, body: &mut Vec<String>, sc: &str, pointee: &str, base: &str, indices: &str, hints: (&str, &str)) -> String {
        let ptr_t = self.ptr(sc, pointee);
        let p = self.tmp(hints.0);
        let v = self.tmp(hints.1);
        body.push(format!("{p} = OpAccessChain {ptr_t} {base} {indices}"));
        body.push(format!("{v} = OpLoad {pointee} {p}"));
        v
    }

    /// Unsigned integer type.
    pub fn uint(&mut self, bits: u32) -> String {
        match bits {
            8 => self.cap("Int8"),
            16 => self.cap("Int16"),
            64 => self.cap("Int64"),
            _ => {}
        }
        self.def(&format!("u{bits}"), |_| format!("OpTypeInt {bits} 0"))
    }
    pub fn float(&mut self, bits: u32) -> String {
        match bits {
            16 => self.cap("Float16"),
            64 => self.cap("Float64"),
            _ => {}
        }
        self.def(&format!("f{bits}"), |_| format!("OpTypeFloat {bits}"))
    }
    pub fn vec(&mut self, comp: &str, n: u32) -> String {
        if n == 1 {
            return comp.to_string();
        }
        let c = comp.to_string();
        self.def(&format!("v{n}{}", &comp[1..]), |_| {
            format!("OpTypeVector {c} {n}")
        })
    }
    pub fn ptr(&mut self, sc: &str, pointee: &str) -> String {
        let short = match sc {
            "StorageBuffer" => "sb",
            "Uniform" => "un",
            "PhysicalStorageBuffer" => "psb",
            "Input" => "in",
            "PushConstant" => "pc",
            "Function" => "fn",
            other => other,
        };
        let p = pointee.to_string();
        let sc = sc.to_string();
        self.def(&format!("p{short}_{}", &pointee[1..]), |_| {
            format!("OpTypePointer {sc} {p}")
        })
    }
    pub fn c_u32(&mut self, v: u32) -> String {
        let u = self.uint(32);
        self.def(&format!("c{v}"), |_| format!("OpConstant {u} {v}"))
    }
    pub fn fn_type(&mut self, ret: &str, params: &[&str]) -> String {
        let id = format!(
            "fn_{}{}",
            &ret[1..],
            params
                .iter()
                .map(|p| format!("_{}", &p[1..]))
                .collect::<String>()
        );
        let r = ret.to_string();
        let ps = params.join(" ");
        self.def(&id, |_| {
            format!("OpTypeFunction {r} {ps}").trim_end().to_string()
        })
    }
    /// `struct { elem data[]; }` decorated Block (or BufferBlock), ArrayStride `stride`.
    pub fn block_rta(&mut self, name: &str, elem: &str, stride: u32, buffer_block: bool) -> String {
        let rta = {
            let e = elem.to_string();
            let id = format!("rta_{}", &elem[1..]);
            let full = self.def(&id, |_| format!("OpTypeRuntimeArray {e}"));
            self.deco(format!("OpDecorate {full} ArrayStride {stride}"));
            full
        };
        let s = self.def(name, |_| format!("OpTypeStruct {rta}"));
        self.deco(format!("OpMemberDecorate {s} 0 Offset 0"));
        self.deco(format!(
            "OpDecorate {s} {}",
            if buffer_block { "BufferBlock" } else { "Block" }
        ));
        s
    }
    /// A descriptor-set variable.
    pub fn buffer_var(
        &mut self,
        name: &str,
        ptr_ty: &str,
        sc: &str,
        set: u32,
        binding: u32,
    ) -> String {
        let p = ptr_ty.to_string();
        let sc2 = sc.to_string();
        let v = self.def(name, |_| format!("OpVariable {p} {sc2}"));
        self.deco(format!("OpDecorate {v} DescriptorSet {set}"));
        self.deco(format!("OpDecorate {v} Binding {binding}"));
        self.add_iface(&v, false);
        v
    }
    pub fn add_iface(&mut self, v: &str, always: bool) {
        let list = if always {
            &mut self.iface_always
        } else {
            &mut self.iface
        };
        if !list.iter().any(|x| x == v) {
            list.push(v.to_string());
        }
    }
    /// A builtin Input variable of type `ty`.
    pub fn builtin(&mut self, name: &str, builtin: &str, ty: &str) -> String {
        let p = self.ptr("Input", ty);
        let v = self.def(name, |_| format!("OpVariable {p} Input"));
        self.deco(format!("OpDecorate {v} BuiltIn {builtin}"));
        self.add_iface(&v, true);
        v
    }

    /// The whole module text. `functions` are complete function bodies (text).
    pub fn finish(&self, main: &str, local_size: u32, functions: &[String]) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "; SPIR-V\n; Version: 1.{}\n; generated by polyfill_e2e::matrix\n",
            self.minor
        ));
        s.push_str(&self.sections.capabilities_and_extensions());
        if self.physical_storage_buffer {
            s.push_str("OpMemoryModel PhysicalStorageBuffer64 GLSL450\n");
        } else {
            s.push_str("OpMemoryModel Logical GLSL450\n");
        }
        let mut iface = self.iface_always.clone();
        if self.minor >= 4 {
            iface.extend(self.iface.iter().cloned());
        }
        s.push_str(&format!(
            "OpEntryPoint GLCompute {main} \"main\" {}\n",
            iface.join(" ")
        ));
        s.push_str(&format!(
            "OpExecutionMode {main} LocalSize {local_size} 1 1\n"
        ));
        s.push_str(&self.sections.decorations_and_globals());
        for f in functions {
            s.push_str(f);
        }
        s
    }
}
