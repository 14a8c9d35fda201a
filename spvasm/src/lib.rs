//! SPIR-V assembly text for the tests and benches of the workspace.
//!
//! A [`Module`] collects a shader's sections — capabilities, extensions, memory model, entry
//! point and execution modes, decorations, global declarations, functions — and writes them in
//! the order the SPIR-V logical layout requires (spec 2.4), so a test states only what its
//! shader adds: its buffers, its own types and constants, its body.
//!
//! **Standard names.** Any of these that the text refers to without declaring it is declared
//! by [`Module::text`], before the module's own globals (so those may use them):
//!
//! | name | declaration |
//! |---|---|
//! | `%void`, `%bool`, `%fn` | `OpTypeVoid`, `OpTypeBool`, `OpTypeFunction %void` |
//! | `%u8` `%u16` `%u32` `%u64`, `%i8` … `%i64` | `OpTypeInt N 0` / `OpTypeInt N 1` |
//! | `%f16` `%f32` `%f64` | `OpTypeFloat N` |
//! | `%v2u` `%v3i` `%v4f` `%v4h` … | `OpTypeVector` of `%u32` / `%i32` / `%f32` / `%f16`, 2 to 4 components |
//! | `%c7`, `%i7`, `%f7` | `OpConstant` 7 of `%u32` / `%i32` / `%f32` |
//! | `%ps_T` `%pin_T` `%pout_T` `%pp_T` `%pf_T` `%pg_T` `%pw_T` `%pun_T` `%puc_T` | `OpTypePointer` to the standard type `%T` in StorageBuffer / Input / Output / PushConstant / Function / PhysicalStorageBuffer / Workgroup / Uniform / UniformConstant |
//!
//! A module must not declare a standard name among its globals (the standard declarations come
//! first and could not refer to it); a body may use such a name for a value of its own.

use std::collections::HashSet;

/// A body's first lines: `%i` = `gl_GlobalInvocationID.x`, through an access chain into `%gid`.
pub const GID_X_CHAIN: &str = "%px = OpAccessChain %pin_u32 %gid %c0\n%i = OpLoad %u32 %px";
/// A body's first lines: `%i` = `gl_GlobalInvocationID.x`, from `%g`, the loaded `%gid`.
pub const GID_X: &str = "%g = OpLoad %v3u %gid\n%i = OpCompositeExtract %u32 %g 0";
/// A fragment shader body's first lines: `%px`, `%py` = the pixel's integer coordinates, from
/// `%fc` ([`Module::frag_coord`]).
pub const FRAG_XY: &str = "%f = OpLoad %v4f %fc
%fx = OpCompositeExtract %f32 %f 0
%fy = OpCompositeExtract %f32 %f 1
%px = OpConvertFToU %u32 %fx
%py = OpConvertFToU %u32 %fy";

/// `%img` (a 2D float image to sample, format Unknown), its sampled-image type `%simg` and the
/// sampler type `%smp`.
pub const IMAGE_TYPES: &str = "%img = OpTypeImage %f32 2D 0 0 0 1 Unknown\n%simg = OpTypeSampledImage %img\n%smp = OpTypeSampler";

/// A module with one entry point, `%main`, under construction.
#[derive(Debug, Clone)]
pub struct Module {
    minor: u32,
    caps: Vec<String>,
    exts: Vec<String>,
    imports: Vec<String>,
    addressing: String,
    memory: String,
    header: Vec<String>,
    model: String,
    modes: Vec<String>,
    debug: Vec<String>,
    decos: Vec<String>,
    globals: Vec<String>,
    /// Global variables in declaration order: (id, storage class).
    vars: Vec<(String, String)>,
    functions: Vec<String>,
    /// The entry point's interface where the caller names it.
    interface: Option<Vec<String>>,
}

impl Module {
    /// A `Shader` module, Logical GLSL450, with entry point `%main` of execution model `model`
    /// ("GLCompute", "Fragment", "Vertex", "RayGenerationKHR", ...), SPIR-V 1.3.
    pub fn new(model: &str) -> Module {
        Module {
            minor: 3,
            caps: vec!["Shader".into()],
            exts: vec![],
            imports: vec![],
            addressing: "Logical".into(),
            memory: "GLSL450".into(),
            header: vec![],
            model: model.into(),
            modes: vec![],
            debug: vec![],
            decos: vec![],
            globals: vec![],
            vars: vec![],
            functions: vec![],
            interface: None,
        }
    }

    /// A compute module with `LocalSize x 1 1`.
    pub fn compute(x: u32) -> Module {
        Module::new("GLCompute").mode(&format!("LocalSize {x} 1 1"))
    }

    /// The SPIR-V version 1.`minor` the module is meant for (default 3): from 1.4 on, the entry
    /// point lists every global variable, before only the Input and Output ones.
    pub fn spirv(mut self, minor: u32) -> Module {
        self.minor = minor;
        self
    }
    pub fn minor(&self) -> u32 {
        self.minor
    }
    /// The `--target-env` of spirv-as / spirv-val for the module's SPIR-V version.
    pub fn target_env(&self) -> &'static str {
        match self.minor {
            0..=3 => "vulkan1.1",
            4 => "spv1.4",
            5 => "vulkan1.2",
            _ => "vulkan1.3",
        }
    }

    /// Adds `OpCapability c` (once).
    pub fn cap(mut self, c: &str) -> Module {
        push_once(&mut self.caps, c);
        self
    }
    /// Adds `OpExtension "e"` (once).
    pub fn ext(mut self, e: &str) -> Module {
        push_once(&mut self.exts, e);
        self
    }
    /// `%id = OpExtInstImport "set"`.
    pub fn import(mut self, id: &str, set: &str) -> Module {
        self.imports.push(format!("{id} = OpExtInstImport \"{set}\""));
        self
    }
    /// `OpCapability RawAccessChainsNV` and `OpExtension "SPV_NV_raw_access_chains"`.
    pub fn raw_access_chains(self) -> Module {
        self.cap("RawAccessChainsNV").ext("SPV_NV_raw_access_chains")
    }
    /// `SPV_NV_bindless_texture` with `OpSamplerImageAddressingModeNV mode` (none: no
    /// instruction).
    pub fn bindless_textures(self, mode: Option<u32>) -> Module {
        let m = self.cap("BindlessTextureNV").ext("SPV_NV_bindless_texture");
        match mode {
            Some(mode) => m.header(&format!("OpSamplerImageAddressingModeNV {mode}")),
            None => m,
        }
    }
    /// `OpMemoryModel addressing memory`.
    pub fn memory_model(mut self, addressing: &str, memory: &str) -> Module {
        self.addressing = addressing.into();
        self.memory = memory.into();
        self
    }
    /// `PhysicalStorageBufferAddresses` and the PhysicalStorageBuffer64 addressing model (the
    /// extension, needed before SPIR-V 1.5, is the caller's to add).
    pub fn physical_addressing(self) -> Module {
        let memory = self.memory.clone();
        self.cap("PhysicalStorageBufferAddresses").memory_model("PhysicalStorageBuffer64", &memory)
    }
    /// A line after `OpMemoryModel` (e.g. `OpSamplerImageAddressingModeNV 64`).
    pub fn header(mut self, line: &str) -> Module {
        self.header.push(line.into());
        self
    }
    /// `OpExecutionMode %main mode`.
    pub fn mode(mut self, mode: &str) -> Module {
        self.modes.push(format!("OpExecutionMode %main {mode}"));
        self
    }
    /// Replaces the `LocalSize` mode.
    pub fn local_size(mut self, x: u32, y: u32, z: u32) -> Module {
        self.modes.retain(|m| !m.contains(" LocalSize "));
        self.mode(&format!("LocalSize {x} {y} {z}"))
    }
    /// Debug instructions (`OpString`, `OpSource`, `OpName`), one a line.
    pub fn debug(mut self, lines: &str) -> Module {
        self.debug.extend(lines_of(lines));
        self
    }
    /// Annotations (`OpDecorate`, `OpMemberDecorate`), one a line.
    pub fn decorate(mut self, lines: &str) -> Module {
        self.decos.extend(lines_of(lines));
        self
    }
    /// Types, constants and global variables, one a line, in order; every `OpVariable` joins
    /// the entry point's interface as its storage class and the SPIR-V version say.
    pub fn globals(mut self, lines: &str) -> Module {
        for l in lines_of(lines) {
            let words: Vec<&str> = l.split_whitespace().collect();
            if let [id, "=", "OpVariable", _, class, ..] = words[..] {
                if class != "Function" {
                    self.vars.push((id.into(), class.into()));
                }
            }
            if let Some(id) = words.first().filter(|_| words.get(1) == Some(&"=")) {
                assert!(standard(&id[1..]).is_none(), "{id} is a standard name: refer to it without declaring it");
            }
            self.globals.push(l);
        }
        self
    }

    /// A built-in variable `%id` of type `ty` in `class` (Input / Output).
    pub fn builtin(self, id: &str, builtin: &str, class: &str, ty: &str) -> Module {
        let ptr = if class == "Input" { "pin" } else { "pout" };
        self.decorate(&format!("OpDecorate {id} BuiltIn {builtin}")).globals(&format!("{id} = OpVariable %{ptr}_{} {class}", &ty[1..]))
    }
    /// `%gid`, the GlobalInvocationId (`%v3u`).
    pub fn gid(self) -> Module {
        self.builtin("%gid", "GlobalInvocationId", "Input", "%v3u")
    }
    /// A fragment shader's `OriginUpperLeft` (Vulkan's origin) and `%fc`, the FragCoord
    /// ([`FRAG_XY`]).
    pub fn frag_coord(self) -> Module {
        self.mode("OriginUpperLeft").builtin("%fc", "FragCoord", "Input", "%v4f")
    }

    /// [`IMAGE_TYPES`] (once).
    pub fn image_types(self) -> Module {
        if self.globals.iter().any(|g| g.starts_with("%img = ")) {
            return self;
        }
        self.globals(IMAGE_TYPES)
    }
    /// A texture `%tex` (`%img`) and a sampler `%sampler` (`%smp`) at set 0, bindings `tex` and
    /// `sampler` ([`IMAGE_TYPES`]; pointer types `%puc_img`, `%puc_smp`).
    pub fn texture_and_sampler(self, tex: u32, sampler: u32) -> Module {
        self.image_types()
            .decorate(&format!("OpDecorate %tex DescriptorSet 0\nOpDecorate %tex Binding {tex}\nOpDecorate %sampler DescriptorSet 0\nOpDecorate %sampler Binding {sampler}"))
            .globals("%puc_img = OpTypePointer UniformConstant %img\n%puc_smp = OpTypePointer UniformConstant %smp\n%tex = OpVariable %puc_img UniformConstant\n%sampler = OpVariable %puc_smp UniformConstant")
    }

    /// A block type `%name = { elem data[]; }` (ArrayStride `stride`, Block) with its runtime
    /// array `%name_rta`.
    pub fn block(self, name: &str, elem: &str, stride: u32) -> Module {
        self.decorate(&format!("OpDecorate %{name}_rta ArrayStride {stride}\nOpMemberDecorate %{name} 0 Offset 0\nOpDecorate %{name} Block"))
            .globals(&format!("%{name}_rta = OpTypeRuntimeArray {elem}\n%{name} = OpTypeStruct %{name}_rta"))
    }
    /// A storage buffer `%var` of block type `%block` at (`set`, `binding`); the pointer type
    /// `%ps_block` is declared with the first.
    pub fn buffer(self, var: &str, block: &str, set: u32, binding: u32) -> Module {
        let ptr = format!("%ps_{block}");
        let m = if self.globals.iter().any(|g| g.starts_with(&format!("{ptr} = "))) { self } else { self.globals(&format!("{ptr} = OpTypePointer StorageBuffer %{block}")) };
        m.decorate(&format!("OpDecorate %{var} DescriptorSet {set}\nOpDecorate %{var} Binding {binding}")).globals(&format!("%{var} = OpVariable {ptr} StorageBuffer"))
    }
    /// A block type `%block` of `elem` and storage buffers `vars` of it at set 0, bindings 0, 1, …
    pub fn buffers(self, block: &str, elem: &str, stride: u32, vars: &[&str]) -> Module {
        let m = self.block(block, elem, stride);
        vars.iter().enumerate().fold(m, |m, (b, v)| m.buffer(v, block, 0, b as u32))
    }
    /// Storage buffers `vars` of `uint[]` (block `%blk`) at set 0, bindings 0, 1, …
    pub fn word_buffers(self, vars: &[&str]) -> Module {
        self.buffers("blk", "%u32", 4, vars)
    }
    /// A push-constant block `%name` of `members` (type, offset): struct `%name_t`, pointer
    /// `%pp_name_t`.
    pub fn push_constants(self, name: &str, members: &[(&str, u32)]) -> Module {
        let mut d = String::new();
        for (i, (_, off)) in members.iter().enumerate() {
            d += &format!("OpMemberDecorate %{name}_t {i} Offset {off}\n");
        }
        d += &format!("OpDecorate %{name}_t Block");
        let tys: Vec<&str> = members.iter().map(|m| m.0).collect();
        self.decorate(&d).globals(&format!(
            "%{name}_t = OpTypeStruct {}\n%pp_{name}_t = OpTypePointer PushConstant %{name}_t\n%{name} = OpVariable %pp_{name}_t PushConstant",
            tys.join(" ")
        ))
    }

    /// A storage buffer `%var = { elem data[]; }` (ArrayStride `stride`) at (`set`, `binding`),
    /// with a block type of its own, `%var_blk`.
    pub fn ssbo(self, var: &str, elem: &str, stride: u32, set: u32, binding: u32) -> Module {
        let block = format!("{var}_blk");
        self.block(&block, elem, stride).buffer(var, &block, set, binding)
    }
    /// Names the entry point's interface instead of deriving it from the global variables.
    pub fn interface(mut self, ids: &[&str]) -> Module {
        self.interface = Some(ids.iter().map(|s| s.to_string()).collect());
        self
    }

    /// `%main`: its entry block `%entry` holds `body`, then `OpReturn`.
    pub fn main(self, body: &str) -> Module {
        self.function(&format!("%main = OpFunction %void None %fn\n%entry = OpLabel\n{}\nOpReturn\nOpFunctionEnd", body.trim()))
    }
    /// A whole function (`OpFunction` … `OpFunctionEnd`), after those added before.
    pub fn function(mut self, text: &str) -> Module {
        self.functions.push(text.trim().into());
        self
    }

    /// The module's text, standard names declared.
    pub fn text(&self) -> String {
        let mut head = String::new();
        for c in &self.caps {
            head += &format!("OpCapability {c}\n");
        }
        for e in &self.exts {
            head += &format!("OpExtension \"{e}\"\n");
        }
        for i in &self.imports {
            head += &format!("{i}\n");
        }
        head += &format!("OpMemoryModel {} {}\n", self.addressing, self.memory);
        for h in &self.header {
            head += &format!("{h}\n");
        }
        let derived = || self.vars.iter().filter(|(_, class)| self.minor >= 4 || class == "Input" || class == "Output").map(|(v, _)| v.as_str()).collect();
        let interface: Vec<&str> = self.interface.as_ref().map_or_else(derived, |i| i.iter().map(String::as_str).collect());
        head += &format!("OpEntryPoint {} %main \"main\"", self.model);
        for v in interface {
            head += &format!(" {v}");
        }
        head += "\n";
        let mut rest = String::new();
        for l in self.modes.iter().chain(&self.debug).chain(&self.decos) {
            rest += &format!("{l}\n");
        }
        let mut own = String::new();
        for l in &self.globals {
            own += &format!("{l}\n");
        }
        for f in &self.functions {
            own += &format!("{f}\n");
        }
        let declared = standard_declarations(&[&head, &rest, &own]);
        format!("{head}{rest}{declared}{own}")
    }
}

/// Global declarations made once each, by key, in the order they were first made: for the
/// generators that declare types and constants as they come to need them.
#[derive(Debug, Default, Clone)]
pub struct Declarations {
    keys: HashSet<String>,
    lines: Vec<String>,
}

impl Declarations {
    /// `%key` where it is declared already.
    pub fn get(&self, key: &str) -> Option<String> {
        self.keys.contains(key).then(|| format!("%{key}"))
    }
    /// Declares `%key = rhs`; returns `%key`.
    pub fn declare(&mut self, key: &str, rhs: &str) -> String {
        self.keys.insert(key.to_string());
        self.lines.push(format!("%{key} = {rhs}"));
        format!("%{key}")
    }
    /// The declarations, in order.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }
}

/// What a generator collects for its module besides the entry point: capabilities, extensions
/// and decorations (each once, in the order first asked for) and the globals ([`Declarations`]).
#[derive(Debug, Default, Clone)]
pub struct Collected {
    caps: Vec<String>,
    exts: Vec<String>,
    decos: Vec<String>,
    globals: Declarations,
}

impl Collected {
    pub fn has_cap(&self, c: &str) -> bool {
        self.caps.iter().any(|x| x == c)
    }
    /// The `OpCapability` and `OpExtension` lines.
    pub fn capabilities_and_extensions(&self) -> String {
        let caps = self.caps.iter().map(|c| format!("OpCapability {c}\n"));
        caps.chain(self.exts.iter().map(|e| format!("OpExtension \"{e}\"\n"))).collect()
    }
    /// The decoration lines, then the globals.
    pub fn decorations_and_globals(&self) -> String {
        self.decos.iter().chain(self.globals.lines()).map(|l| format!("{l}\n")).collect()
    }
}

/// A generator that collects its module's capabilities, extensions, decorations and globals
/// ([`Collected`]), declaring each global once as it comes to need it.
pub trait Declare: Sized {
    fn collected(&mut self) -> &mut Collected;

    fn cap(&mut self, c: &str) {
        push_once(&mut self.collected().caps, c);
    }
    fn ext(&mut self, e: &str) {
        push_once(&mut self.collected().exts, e);
    }
    fn deco(&mut self, line: impl Into<String>) {
        push_once(&mut self.collected().decos, &line.into());
    }
    /// Declares `%key = rhs(self)` once (`rhs` may declare what it uses first); returns `%key`.
    fn def(&mut self, key: &str, rhs: impl FnOnce(&mut Self) -> String) -> String {
        if let Some(full) = self.collected().globals.get(key) {
            return full;
        }
        let r = rhs(self);
        self.collected().globals.declare(key, &r)
    }
    fn void(&mut self) -> String {
        self.def("void", |_| "OpTypeVoid".into())
    }
    fn bool_t(&mut self) -> String {
        self.def("bool", |_| "OpTypeBool".into())
    }
}

/// Appends `s` to `v` unless it is there already (capability and extension lists).
pub fn push_once(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.into());
    }
}

fn lines_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from)
}

/// The ids in `text` (without `%`).
fn ids(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '%')).filter_map(|t| t.strip_prefix('%')).filter(|t| !t.is_empty())
}

/// The declaration of standard name `name` (without `%`): (order class, right-hand side).
fn standard(name: &str) -> Option<(u8, String)> {
    let scalar = |t: &str| -> Option<String> {
        let (kind, bits) = t.split_at(1);
        let bits: u32 = bits.parse().ok().filter(|b| [8, 16, 32, 64].contains(b))?;
        match kind {
            "u" => Some(format!("OpTypeInt {bits} 0")),
            "i" => Some(format!("OpTypeInt {bits} 1")),
            "f" if bits >= 16 => Some(format!("OpTypeFloat {bits}")),
            _ => None,
        }
    };
    match name {
        "void" => return Some((0, "OpTypeVoid".into())),
        "bool" => return Some((0, "OpTypeBool".into())),
        "fn" => return Some((1, "OpTypeFunction %void".into())),
        _ => {}
    }
    if let Some(s) = scalar(name) {
        return Some((0, s));
    }
    let b = name.as_bytes();
    if b.len() == 3 && b[0] == b'v' && (b'2'..=b'4').contains(&b[1]) {
        let elem = match b[2] {
            b'u' => "u32",
            b'i' => "i32",
            b'f' => "f32",
            b'h' => "f16",
            _ => return None,
        };
        return Some((1, format!("OpTypeVector %{elem} {}", b[1] - b'0')));
    }
    if let Some(value) = name.get(1..).filter(|v| !v.is_empty() && v.bytes().all(|c| c.is_ascii_digit())) {
        let ty = match &name[..1] {
            "c" => "u32",
            "i" => "i32",
            "f" => "f32",
            _ => return None,
        };
        return Some((2, format!("OpConstant %{ty} {value}")));
    }
    let (ptr, pointee) = name.split_once('_')?;
    let class = match ptr {
        "ps" => "StorageBuffer",
        "pin" => "Input",
        "pout" => "Output",
        "pp" => "PushConstant",
        "pf" => "Function",
        "pg" => "PhysicalStorageBuffer",
        "pw" => "Workgroup",
        "pun" => "Uniform",
        "puc" => "UniformConstant",
        _ => return None,
    };
    let (rank, _) = standard(pointee)?;
    (rank < 2).then(|| (3, format!("OpTypePointer {class} %{pointee}")))
}

/// Declarations of the standard names `texts` refer to and do not declare, in dependency order.
fn standard_declarations(texts: &[&str]) -> String {
    let mut declared: HashSet<&str> = HashSet::new();
    for t in texts {
        for l in t.lines() {
            let mut w = l.split_whitespace();
            if let (Some(id), Some("=")) = (w.next(), w.next()) {
                declared.insert(id.trim_start_matches('%'));
            }
        }
    }
    let mut wanted: Vec<(u8, String, String)> = Vec::new();
    let mut todo: Vec<String> = texts.iter().flat_map(|t| ids(t)).map(String::from).collect();
    let mut seen: HashSet<String> = HashSet::new();
    while let Some(id) = todo.pop() {
        if declared.contains(id.as_str()) || !seen.insert(id.clone()) {
            continue;
        }
        if let Some((rank, rhs)) = standard(&id) {
            todo.extend(ids(&rhs).map(String::from));
            wanted.push((rank, id, rhs));
        }
    }
    wanted.sort();
    wanted.iter().map(|(_, id, rhs)| format!("%{id} = {rhs}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_names_are_declared_in_dependency_order() {
        let m = Module::compute(64).gid().word_buffers(&["in", "out"]).main("%px = OpAccessChain %pin_u32 %gid %c0\n%i = OpLoad %u32 %px\n%p = OpAccessChain %ps_u32 %out %c0 %i\nOpStore %p %i");
        let t = m.text();
        let pos = |s: &str| t.find(s).unwrap_or_else(|| panic!("no {s} in\n{t}"));
        assert!(pos("%u32 = OpTypeInt 32 0") < pos("%v3u = OpTypeVector %u32 3"));
        assert!(pos("%v3u = OpTypeVector") < pos("%pin_v3u = OpTypePointer Input %v3u"));
        assert!(pos("%c0 = OpConstant %u32 0") < pos("%blk_rta = OpTypeRuntimeArray %u32"));
        assert!(t.contains("OpEntryPoint GLCompute %main \"main\" %gid\n"), "{t}");
        assert!(!t.contains("%i32"), "only what is referred to: {t}");
        let t15 = m.spirv(5).text();
        assert!(t15.contains("OpEntryPoint GLCompute %main \"main\" %gid %in %out\n"), "{t15}");
    }

    #[test]
    fn names_a_body_defines_are_not_declared() {
        let t = Module::compute(1).main("%i0 = OpCopyObject %u32 %c1\n%f2 = OpCopyObject %u32 %i0").text();
        assert!(!t.contains("%i0 = OpConstant") && !t.contains("%f2 = OpConstant") && t.contains("%c1 = OpConstant %u32 1"), "{t}");
        assert!(standard("fn").is_some() && standard("ps_blk").is_none() && standard("c").is_none() && standard("ps_c4").is_none());
        assert_eq!(standard("i32"), Some((0, "OpTypeInt 32 1".into())));
    }

    #[test]
    #[should_panic(expected = "standard name")]
    fn declaring_a_standard_name_is_refused() {
        let _ = Module::compute(1).globals("%u32 = OpTypeInt 32 0");
    }
}
