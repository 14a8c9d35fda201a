//! A tiny interpreter for the straight-line compute shaders of the dxil-spirv raw-access corpus:
//! it executes one invocation at a time on CPU buffers, with every `OpRawAccessChainNV` load and
//! store going through the reference [`super::model`]. It knows only the opcodes the corpus uses
//! and refuses anything else (so a new corpus module cannot be silently mis-modelled).

use super::model::{self, Access, Robustness};
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Debug, PartialEq)]
enum Ty {
    Void,
    Int { width: u32 },
    Float { width: u32 },
    Vector { elem: String, n: u32 },
    Struct,
    Array { elem: String, len: Option<u32> },
    Pointer { storage: String, pointee: String },
    Function,
}

/// A descriptor: (set, binding, array element).
pub type Key = (u32, u32, u32);

#[derive(Clone, Debug)]
enum Ptr {
    /// `GlobalInvocationId` (whole vector or one component).
    Gid(Option<u32>),
    /// A Block variable or one element of a descriptor array.
    Block(Key),
    /// A descriptor array (set, binding).
    BlockArray(u32, u32),
    /// A raw chain result.
    Raw(Key, Access),
}

#[derive(Clone, Debug)]
enum Val {
    Scalar(u64),
    Vector(Vec<u64>),
    Ptr(Ptr),
}

#[derive(Clone, Debug)]
struct Inst {
    result: Option<String>,
    op: String,
    args: Vec<String>,
    line: usize,
}

/// A parsed module.
#[derive(Clone, Debug)]
pub struct Shader {
    types: HashMap<String, Ty>,
    consts: HashMap<String, (String, u64)>,
    /// Variable id → (set, binding, is a descriptor array) for buffers.
    buffers: HashMap<String, (u32, u32, bool)>,
    gid_var: Option<String>,
    body: Vec<Inst>,
    pub local_size: [u32; 3],
    /// Declared array sizes of descriptor arrays: (set, binding) → count (1 for plain blocks).
    pub descriptor_counts: BTreeMap<(u32, u32), u32>,
}

/// One buffer in CPU memory.
#[derive(Clone, Debug)]
pub struct CpuBuffer {
    pub data: Vec<u8>,
    pub descriptor_offset: u64,
    /// Bound range in bytes.
    pub len: u64,
}

impl CpuBuffer {
    fn range(&self) -> &[u8] {
        &self.data[self.descriptor_offset as usize..(self.descriptor_offset + self.len) as usize]
    }
    fn range_mut(&mut self) -> &mut [u8] {
        &mut self.data
            [self.descriptor_offset as usize..(self.descriptor_offset + self.len) as usize]
    }
}

/// A component accessed by a raw chain (range-relative byte address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot {
    pub key: Key,
    pub addr: u32,
    pub width: u32,
}

/// What one invocation did.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Components loaded (in bounds), with "is float" of the loaded type.
    pub loads: Vec<(Slot, bool)>,
    /// Components stored (in bounds).
    pub stores: Vec<Slot>,
}

fn parse_err<T>(line: usize, msg: impl Into<String>) -> Result<T, String> {
    Err(format!("line {}: {}", line + 1, msg.into()))
}

/// Parses a SPIR-V hex float (`0x1p+2`, `0x1.8p-1`) or a decimal literal.
fn parse_float(s: &str) -> Option<f64> {
    if let Some(h) = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("-0x").map(|_| &s[3..]))
    {
        let neg = s.starts_with('-');
        let (mant, exp) = h.split_once('p')?;
        let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
        let mut v = u64::from_str_radix(if int.is_empty() { "0" } else { int }, 16).ok()? as f64;
        for (i, c) in frac.chars().enumerate() {
            v += c.to_digit(16)? as f64 / 16f64.powi(i as i32 + 1);
        }
        let e: i32 = exp.parse().ok()?;
        let v = v * 2f64.powi(e);
        Some(if neg { -v } else { v })
    } else {
        s.parse().ok()
    }
}

// --- half precision helpers (round to nearest even) -------------------------------------------

pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    let bits = if exp == 0 {
        if mant == 0 {
            sign
        } else {
            // subnormal
            let mut e = 127 - 15 + 1;
            let mut m = mant;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | (e << 23) | ((m & 0x3ff) << 13)
        }
    } else if exp == 31 {
        sign | 0x7f80_0000 | (mant << 13)
    } else {
        sign | ((exp + 127 - 15) << 23) | (mant << 13)
    };
    f32::from_bits(bits)
}

pub fn f32_to_f16(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let mant = x & 0x7f_ffff;
    if exp == 255 {
        return sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 31 {
        return sign | 0x7c00;
    }
    let (m, shift) = if e <= 0 {
        if e < -10 {
            return sign;
        }
        (mant | 0x80_0000, (14 - e) as u32)
    } else {
        (mant, 13)
    };
    let half_m = m >> shift;
    let rem = m & ((1 << shift) - 1);
    let halfway = 1 << (shift - 1);
    let mut r = if e <= 0 {
        half_m as u16
    } else {
        ((e as u16) << 10) | half_m as u16
    };
    if rem > halfway || (rem == halfway && (r & 1) == 1) {
        r += 1;
    }
    sign | r
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

impl Shader {
    /// Parses SPIR-V assembly (the subset the corpus uses).
    pub fn parse(text: &str) -> Result<Shader, String> {
        let mut sh = Shader {
            types: HashMap::new(),
            consts: HashMap::new(),
            buffers: HashMap::new(),
            gid_var: None,
            body: Vec::new(),
            local_size: [1, 1, 1],
            descriptor_counts: BTreeMap::new(),
        };
        let mut sets: HashMap<String, u32> = HashMap::new();
        let mut bindings: HashMap<String, u32> = HashMap::new();
        let mut builtin_gid: Option<String> = None;
        let mut in_function = false;
        let mut vars: Vec<(String, String, String, usize)> = Vec::new();
        for (ln, raw) in text.lines().enumerate() {
            let line = raw.split(';').next().unwrap().trim();
            if line.is_empty() {
                continue;
            }
            let toks: Vec<&str> = line.split_whitespace().collect();
            let (result, op, args) = if toks.len() >= 3 && toks[1] == "=" {
                (Some(toks[0].to_string()), toks[2], &toks[3..])
            } else {
                (None, toks[0], &toks[1..])
            };
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            let r = || {
                result
                    .clone()
                    .ok_or_else(|| format!("line {}: {op} without result", ln + 1))
            };
            match op {
                "OpCapability" | "OpExtension" | "OpMemoryModel" | "OpEntryPoint" | "OpName"
                | "OpMemberName" | "OpMemberDecorate" | "OpSource" | "OpSourceExtension"
                | "OpExtInstImport" => {}
                "OpExecutionMode" => {
                    if args.get(1).map(|s| s.as_str()) == Some("LocalSize") {
                        for k in 0..3 {
                            sh.local_size[k] = args[2 + k]
                                .parse()
                                .map_err(|_| format!("line {}: LocalSize", ln + 1))?;
                        }
                    }
                }
                "OpDecorate" => match args.get(1).map(|s| s.as_str()) {
                    Some("DescriptorSet") => {
                        sets.insert(args[0].clone(), args[2].parse().unwrap());
                    }
                    Some("Binding") => {
                        bindings.insert(args[0].clone(), args[2].parse().unwrap());
                    }
                    Some("BuiltIn") => {
                        if args[2] == "GlobalInvocationId" {
                            builtin_gid = Some(args[0].clone());
                        } else {
                            return parse_err(ln, format!("unsupported builtin {}", args[2]));
                        }
                    }
                    _ => {}
                },
                "OpTypeVoid" => {
                    sh.types.insert(r()?, Ty::Void);
                }
                "OpTypeBool" => return parse_err(ln, "bool not supported"),
                "OpTypeInt" => {
                    sh.types.insert(
                        r()?,
                        Ty::Int {
                            width: args[0].parse().unwrap(),
                        },
                    );
                }
                "OpTypeFloat" => {
                    sh.types.insert(
                        r()?,
                        Ty::Float {
                            width: args[0].parse().unwrap(),
                        },
                    );
                }
                "OpTypeVector" => {
                    sh.types.insert(
                        r()?,
                        Ty::Vector {
                            elem: args[0].clone(),
                            n: args[1].parse().unwrap(),
                        },
                    );
                }
                "OpTypeStruct" => {
                    sh.types.insert(r()?, Ty::Struct);
                }
                "OpTypeRuntimeArray" => {
                    sh.types.insert(
                        r()?,
                        Ty::Array {
                            elem: args[0].clone(),
                            len: None,
                        },
                    );
                }
                "OpTypeArray" => {
                    let len = sh.consts.get(&args[1]).map(|c| c.1 as u32);
                    sh.types.insert(
                        r()?,
                        Ty::Array {
                            elem: args[0].clone(),
                            len,
                        },
                    );
                }
                "OpTypePointer" => {
                    sh.types.insert(
                        r()?,
                        Ty::Pointer {
                            storage: args[0].clone(),
                            pointee: args[1].clone(),
                        },
                    );
                }
                "OpTypeFunction" => {
                    sh.types.insert(r()?, Ty::Function);
                }
                "OpConstant" => {
                    let ty = sh
                        .types
                        .get(&args[0])
                        .cloned()
                        .ok_or_else(|| format!("line {}: unknown type", ln + 1))?;
                    let bits = match ty {
                        Ty::Int { width } => {
                            let v: i128 = args[1]
                                .parse()
                                .map_err(|_| format!("line {}: bad int {}", ln + 1, args[1]))?;
                            (v as u64) & mask(width)
                        }
                        Ty::Float { width } => {
                            let v = parse_float(&args[1])
                                .ok_or_else(|| format!("line {}: bad float {}", ln + 1, args[1]))?;
                            match width {
                                16 => f32_to_f16(v as f32) as u64,
                                32 => (v as f32).to_bits() as u64,
                                64 => v.to_bits(),
                                _ => return parse_err(ln, "float width"),
                            }
                        }
                        _ => return parse_err(ln, "constant type"),
                    };
                    sh.consts.insert(r()?, (args[0].clone(), bits));
                }
                "OpVariable" => {
                    vars.push((r()?, args[0].clone(), args[1].clone(), ln));
                }
                "OpFunction" => {
                    if in_function || !sh.body.is_empty() {
                        return parse_err(ln, "only one function is supported");
                    }
                    in_function = true;
                }
                "OpFunctionEnd" => in_function = false,
                _ if in_function => sh.body.push(Inst {
                    result: result.clone(),
                    op: op.to_string(),
                    args,
                    line: ln,
                }),
                _ => return parse_err(ln, format!("unsupported global instruction {op}")),
            }
        }
        for (id, ptr_ty, storage, ln) in vars {
            if Some(&id) == builtin_gid.as_ref() {
                sh.gid_var = Some(id);
                continue;
            }
            if storage != "StorageBuffer" {
                return parse_err(ln, format!("unsupported variable storage {storage}"));
            }
            let set = *sets
                .get(&id)
                .ok_or_else(|| format!("{id}: no DescriptorSet"))?;
            let binding = *bindings
                .get(&id)
                .ok_or_else(|| format!("{id}: no Binding"))?;
            let (count, is_array) = match sh.types.get(&ptr_ty) {
                Some(Ty::Pointer { pointee, .. }) => match sh.types.get(pointee) {
                    Some(Ty::Array { len: Some(n), .. }) => (*n, true),
                    Some(Ty::Array { len: None, .. }) => {
                        return parse_err(ln, "runtime descriptor arrays not supported")
                    }
                    _ => (1, false),
                },
                _ => return parse_err(ln, "variable type"),
            };
            sh.descriptor_counts.insert((set, binding), count);
            sh.buffers.insert(id, (set, binding, is_array));
        }
        Ok(sh)
    }

    fn scalar_of(&self, ty: &str) -> Result<(bool, u32, u32), String> {
        // (is_float, width, components)
        match self.types.get(ty) {
            Some(Ty::Int { width }) => Ok((false, *width, 1)),
            Some(Ty::Float { width }) => Ok((true, *width, 1)),
            Some(Ty::Vector { elem, n }) => {
                let (f, w, _) = self.scalar_of(elem)?;
                Ok((f, w, *n))
            }
            other => Err(format!("{ty}: not a scalar/vector type ({other:?})")),
        }
    }

    fn value(&self, vals: &HashMap<String, Val>, id: &str) -> Result<Val, String> {
        if let Some(v) = vals.get(id) {
            return Ok(v.clone());
        }
        if let Some((_, bits)) = self.consts.get(id) {
            return Ok(Val::Scalar(*bits));
        }
        if let Some(&(set, binding, is_array)) = self.buffers.get(id) {
            return Ok(Val::Ptr(if is_array {
                Ptr::BlockArray(set, binding)
            } else {
                Ptr::Block((set, binding, 0))
            }));
        }
        if Some(id) == self.gid_var.as_deref() {
            return Ok(Val::Ptr(Ptr::Gid(None)));
        }
        Err(format!("unknown id {id}"))
    }

    fn scalar(&self, vals: &HashMap<String, Val>, id: &str) -> Result<u64, String> {
        match self.value(vals, id)? {
            Val::Scalar(v) => Ok(v),
            other => Err(format!("{id}: expected a scalar, got {other:?}")),
        }
    }

    /// Executes invocation `gid` on `mem` (every descriptor the shader uses must be in it),
    /// returning its trace.
    pub fn run_invocation(
        &self,
        gid: [u32; 3],
        mem: &mut BTreeMap<Key, CpuBuffer>,
    ) -> Result<Trace, String> {
        let mut vals: HashMap<String, Val> = HashMap::new();
        let mut trace = Trace::default();
        for inst in &self.body {
            let at = |m: String| format!("line {}: {} {}", inst.line + 1, inst.op, m);
            let a = &inst.args;
            let rty = || a.first().cloned().unwrap_or_default();
            let out: Option<Val> = match inst.op.as_str() {
                "OpLabel" | "OpBranch" | "OpReturn" => None,
                "OpAccessChain" => {
                    let base = self.value(&vals, &a[1]).map_err(at)?;
                    match base {
                        Val::Ptr(Ptr::Gid(None)) => {
                            let k = self.scalar(&vals, &a[2]).map_err(at)? as u32;
                            Some(Val::Ptr(Ptr::Gid(Some(k))))
                        }
                        Val::Ptr(Ptr::BlockArray(s, b)) => {
                            let k = self.scalar(&vals, &a[2]).map_err(at)? as u32;
                            if a.len() != 3 {
                                return Err(at("only block selection supported".into()));
                            }
                            Some(Val::Ptr(Ptr::Block((s, b, k))))
                        }
                        other => return Err(at(format!("unsupported base {other:?}"))),
                    }
                }
                "OpRawAccessChainNV" => {
                    let key = match self.value(&vals, &a[1]).map_err(at)? {
                        Val::Ptr(Ptr::Block(k)) => k,
                        other => return Err(at(format!("unsupported raw chain base {other:?}"))),
                    };
                    let stride = self.scalar(&vals, &a[2]).map_err(at)? as u32;
                    let index = self.scalar(&vals, &a[3]).map_err(at)? as u32;
                    let offset = self.scalar(&vals, &a[4]).map_err(at)? as u32;
                    let robustness = match a.get(5).map(|s| s.as_str()) {
                        None | Some("None") => Robustness::None,
                        Some("RobustnessPerComponentNV") => Robustness::PerComponent,
                        Some("RobustnessPerElementNV") => Robustness::PerElement,
                        Some(o) => return Err(at(format!("operand {o}"))),
                    };
                    let pointee = match self.types.get(&a[0]) {
                        Some(Ty::Pointer { pointee, .. }) => pointee.clone(),
                        _ => return Err(at("result type".into())),
                    };
                    let (_, w, n) = self.scalar_of(&pointee).map_err(at)?;
                    Some(Val::Ptr(Ptr::Raw(
                        key,
                        Access {
                            stride,
                            index,
                            offset,
                            comp_bytes: w / 8,
                            comps: n,
                            robustness,
                        },
                    )))
                }
                "OpLoad" => {
                    let (is_float, w, n) = self.scalar_of(&a[0]).map_err(at)?;
                    match self.value(&vals, &a[1]).map_err(at)? {
                        Val::Ptr(Ptr::Gid(Some(k))) => Some(Val::Scalar(gid[k as usize] as u64)),
                        Val::Ptr(Ptr::Raw(key, acc)) => {
                            let buf = mem
                                .get(&key)
                                .ok_or_else(|| at(format!("no buffer bound at {key:?}")))?;
                            let len = buf.len;
                            for ca in acc.component_addresses(len).into_iter().flatten() {
                                trace.loads.push((
                                    Slot {
                                        key,
                                        addr: ca,
                                        width: w / 8,
                                    },
                                    is_float,
                                ));
                            }
                            let bytes = model::load(&acc, buf.range(), None);
                            let c = (w / 8) as usize;
                            let comps: Vec<u64> = (0..n as usize)
                                .map(|k| {
                                    let mut b = [0u8; 8];
                                    b[..c].copy_from_slice(&bytes[k * c..(k + 1) * c]);
                                    u64::from_le_bytes(b)
                                })
                                .collect();
                            Some(if n == 1 {
                                Val::Scalar(comps[0])
                            } else {
                                Val::Vector(comps)
                            })
                        }
                        other => return Err(at(format!("unsupported load from {other:?}"))),
                    }
                }
                "OpStore" => {
                    let ptr = self.value(&vals, &a[0]).map_err(at)?;
                    let v = self.value(&vals, &a[1]).map_err(at)?;
                    match ptr {
                        Val::Ptr(Ptr::Raw(key, acc)) => {
                            let c = acc.comp_bytes as usize;
                            let comps = match v {
                                Val::Scalar(s) => vec![s],
                                Val::Vector(v) => v,
                                _ => return Err(at("storing a pointer".into())),
                            };
                            if comps.len() != acc.comps as usize {
                                return Err(at("component count mismatch".into()));
                            }
                            let bytes: Vec<u8> = comps
                                .iter()
                                .flat_map(|x| x.to_le_bytes()[..c].to_vec())
                                .collect();
                            let buf = mem
                                .get_mut(&key)
                                .ok_or_else(|| at(format!("no buffer bound at {key:?}")))?;
                            let len = buf.len;
                            for ca in acc.component_addresses(len).into_iter().flatten() {
                                trace.stores.push(Slot {
                                    key,
                                    addr: ca,
                                    width: acc.comp_bytes,
                                });
                            }
                            model::store(&acc, buf.range_mut(), &bytes);
                            None
                        }
                        other => return Err(at(format!("unsupported store to {other:?}"))),
                    }
                }
                "OpCompositeExtract" => match self.value(&vals, &a[1]).map_err(at)? {
                    Val::Vector(v) => {
                        let k: usize = a[2].parse().map_err(|_| at("index".into()))?;
                        if a.len() != 3 {
                            return Err(at("one index only".into()));
                        }
                        Some(Val::Scalar(v[k]))
                    }
                    other => return Err(at(format!("extract from {other:?}"))),
                },
                "OpCompositeConstruct" => {
                    let mut v = Vec::new();
                    for id in &a[1..] {
                        v.push(self.scalar(&vals, id).map_err(at)?);
                    }
                    Some(Val::Vector(v))
                }
                "OpIAdd" | "OpIMul" | "OpShiftLeftLogical" | "OpBitwiseOr" | "OpFAdd" => {
                    let (is_float, w, n) = self.scalar_of(&rty()).map_err(at)?;
                    if n != 1 {
                        return Err(at("vector arithmetic not supported".into()));
                    }
                    let x = self.scalar(&vals, &a[1]).map_err(at)?;
                    let y = self.scalar(&vals, &a[2]).map_err(at)?;
                    let r = match (inst.op.as_str(), is_float) {
                        ("OpIAdd", false) => x.wrapping_add(y) & mask(w),
                        ("OpIMul", false) => x.wrapping_mul(y) & mask(w),
                        ("OpShiftLeftLogical", false) => {
                            if y >= w as u64 {
                                0
                            } else {
                                (x << y) & mask(w)
                            }
                        }
                        ("OpBitwiseOr", false) => (x | y) & mask(w),
                        ("OpFAdd", true) => match w {
                            16 => f32_to_f16(f16_to_f32(x as u16) + f16_to_f32(y as u16)) as u64,
                            32 => (f32::from_bits(x as u32) + f32::from_bits(y as u32)).to_bits()
                                as u64,
                            64 => (f64::from_bits(x) + f64::from_bits(y)).to_bits(),
                            _ => return Err(at("float width".into())),
                        },
                        _ => return Err(at("operand types".into())),
                    };
                    Some(Val::Scalar(r))
                }
                "OpUConvert" => {
                    let (_, w, _) = self.scalar_of(&rty()).map_err(at)?;
                    Some(Val::Scalar(
                        self.scalar(&vals, &a[1]).map_err(at)? & mask(w),
                    ))
                }
                "OpFConvert" => {
                    let (_, w, _) = self.scalar_of(&rty()).map_err(at)?;
                    let src_ty = self.type_of(&vals, &a[1]);
                    let x = self.scalar(&vals, &a[1]).map_err(at)?;
                    let (_, sw, _) = self
                        .scalar_of(&src_ty.ok_or_else(|| at("source type unknown".into()))?)
                        .map_err(at)?;
                    let f = match sw {
                        16 => f16_to_f32(x as u16) as f64,
                        32 => f32::from_bits(x as u32) as f64,
                        64 => f64::from_bits(x),
                        _ => return Err(at("width".into())),
                    };
                    Some(Val::Scalar(match w {
                        16 => f32_to_f16(f as f32) as u64,
                        32 => (f as f32).to_bits() as u64,
                        64 => f.to_bits(),
                        _ => return Err(at("width".into())),
                    }))
                }
                other => return Err(at(format!("unsupported instruction {other}"))),
            };
            if let (Some(r), Some(v)) = (&inst.result, out) {
                vals.insert(r.clone(), v);
            }
        }
        Ok(trace)
    }

    /// The result type of an id defined in the body (or a constant).
    fn type_of(&self, _vals: &HashMap<String, Val>, id: &str) -> Option<String> {
        if let Some((t, _)) = self.consts.get(id) {
            return Some(t.clone());
        }
        self.body
            .iter()
            .find(|i| i.result.as_deref() == Some(id))
            .and_then(|i| i.args.first().cloned())
    }
}
