//! A small word-level SPIR-V IR: instructions keep their raw operand words, so everything the
//! passes do not touch is written back exactly as it came in. rspirv's grammar tables say
//! where an opcode keeps its result type and result id.
use rustc_hash::FxHashMap as HashMap;

use crate::error::RewriteError;
use rspirv::grammar::INSTRUCTION_TABLE;

pub(crate) mod opcode_table;

pub const MAGIC: u32 = 0x0723_0203;
pub const HEADER_WORDS: usize = 5;
/// Largest id bound a module may declare (SPIR-V spec 2.17 "Universal Limits"; spirv-val
/// rejects anything above it).
pub const MAX_ID_BOUND: u32 = 0x3f_ffff;

/// Opcodes the passes refer to by name (SPIR-V spec 3.52 "Instructions").
pub mod op {
    pub const NOP: u32 = 0;
    pub const SOURCE_CONTINUED: u32 = 2;
    pub const SOURCE: u32 = 3;
    pub const SOURCE_EXTENSION: u32 = 4;
    pub const NAME: u32 = 5;
    pub const MEMBER_NAME: u32 = 6;
    pub const STRING: u32 = 7;
    pub const LINE: u32 = 8;
    pub const NO_LINE: u32 = 317;
    pub const EXTENSION: u32 = 10;
    pub const EXT_INST_IMPORT: u32 = 11;
    pub const EXT_INST: u32 = 12;
    pub const MEMORY_MODEL: u32 = 14;
    pub const ENTRY_POINT: u32 = 15;
    pub const EXECUTION_MODE: u32 = 16;
    pub const CAPABILITY: u32 = 17;
    pub const TYPE_VOID: u32 = 19;
    pub const TYPE_BOOL: u32 = 20;
    pub const TYPE_INT: u32 = 21;
    pub const TYPE_FLOAT: u32 = 22;
    pub const TYPE_VECTOR: u32 = 23;
    pub const TYPE_MATRIX: u32 = 24;
    pub const TYPE_ARRAY: u32 = 28;
    pub const TYPE_RUNTIME_ARRAY: u32 = 29;
    pub const TYPE_STRUCT: u32 = 30;
    pub const TYPE_POINTER: u32 = 32;
    pub const TYPE_FUNCTION: u32 = 33;
    pub const TYPE_FORWARD_POINTER: u32 = 39;
    pub const CONSTANT_TRUE: u32 = 41;
    pub const CONSTANT_FALSE: u32 = 42;
    pub const CONSTANT: u32 = 43;
    pub const CONSTANT_COMPOSITE: u32 = 44;
    pub const CONSTANT_NULL: u32 = 46;
    pub const SPEC_CONSTANT: u32 = 50;
    pub const FUNCTION: u32 = 54;
    pub const FUNCTION_PARAMETER: u32 = 55;
    pub const FUNCTION_END: u32 = 56;
    pub const FUNCTION_CALL: u32 = 57;
    pub const VARIABLE: u32 = 59;
    pub const LOAD: u32 = 61;
    pub const COPY_MEMORY: u32 = 63;
    pub const STORE: u32 = 62;
    pub const ACCESS_CHAIN: u32 = 65;
    pub const IN_BOUNDS_ACCESS_CHAIN: u32 = 66;
    pub const PTR_ACCESS_CHAIN: u32 = 67;
    pub const ARRAY_LENGTH: u32 = 68;
    pub const IN_BOUNDS_PTR_ACCESS_CHAIN: u32 = 70;
    pub const DECORATE: u32 = 71;
    pub const MEMBER_DECORATE: u32 = 72;
    pub const DECORATION_GROUP: u32 = 73;
    pub const GROUP_DECORATE: u32 = 74;
    pub const GROUP_MEMBER_DECORATE: u32 = 75;
    pub const VECTOR_SHUFFLE: u32 = 79;
    pub const COMPOSITE_CONSTRUCT: u32 = 80;
    pub const COMPOSITE_EXTRACT: u32 = 81;
    pub const COPY_OBJECT: u32 = 83;
    pub const CONVERT_PTR_TO_U: u32 = 117;
    pub const U_CONVERT: u32 = 113;
    pub const S_CONVERT: u32 = 114;
    pub const F_CONVERT: u32 = 115;
    pub const CONVERT_U_TO_PTR: u32 = 120;
    pub const BITCAST: u32 = 124;
    pub const I_ADD: u32 = 128;
    pub const I_SUB: u32 = 130;
    pub const I_MUL: u32 = 132;
    pub const U_DIV: u32 = 134;
    pub const I_ADD_CARRY: u32 = 149;
    pub const LOGICAL_AND: u32 = 167;
    pub const SELECT: u32 = 169;
    pub const I_EQUAL: u32 = 170;
    pub const I_NOT_EQUAL: u32 = 171;
    pub const U_GREATER_THAN_EQUAL: u32 = 174;
    pub const U_LESS_THAN: u32 = 176;
    pub const SHIFT_RIGHT_LOGICAL: u32 = 194;
    pub const SHIFT_RIGHT_ARITHMETIC: u32 = 195;
    pub const SHIFT_LEFT_LOGICAL: u32 = 196;
    pub const BITWISE_OR: u32 = 197;
    pub const BITWISE_XOR: u32 = 198;
    pub const BITWISE_AND: u32 = 199;
    pub const PHI: u32 = 245;
    pub const LOOP_MERGE: u32 = 246;
    pub const SELECTION_MERGE: u32 = 247;
    pub const LABEL: u32 = 248;
    pub const BRANCH: u32 = 249;
    pub const BRANCH_CONDITIONAL: u32 = 250;
    pub const RETURN: u32 = 253;
    pub const RETURN_VALUE: u32 = 254;
    pub const ATOMIC_AND: u32 = 240;
    pub const ATOMIC_OR: u32 = 241;
    pub const ATOMIC_STORE: u32 = 228;
    pub const MODULE_PROCESSED: u32 = 330;
    pub const EXECUTION_MODE_ID: u32 = 331;
    pub const DECORATE_ID: u32 = 332;
    pub const DECORATE_STRING: u32 = 5632;
    pub const MEMBER_DECORATE_STRING: u32 = 5633;
    pub const RAW_ACCESS_CHAIN_NV: u32 = 5398;
    pub const UNDEF: u32 = 1;
    pub const TYPE_IMAGE: u32 = 25;
    pub const TYPE_SAMPLER: u32 = 26;
    pub const TYPE_SAMPLED_IMAGE: u32 = 27;
    pub const IMAGE_TEXEL_POINTER: u32 = 60;
    pub const COMPOSITE_INSERT: u32 = 82;
    pub const SAMPLED_IMAGE: u32 = 86;
    pub const IMAGE: u32 = 100;
    pub const COPY_LOGICAL: u32 = 400;
    /// SPV_NV_bindless_texture: belongs right after OpMemoryModel (its "Logical Layout" change).
    pub const SAMPLER_IMAGE_ADDRESSING_MODE_NV: u32 = 5397;
}

/// Operand words, stored inline up to 6 (almost every instruction a pass emits): the
/// per-instruction heap allocation dominated the rewrite time of large modules.
pub type Ops = smallvec::SmallVec<[u32; 6]>;

/// `ops![a, b, c]`: operand words without a heap allocation.
#[macro_export]
macro_rules! ops {
    ($($x:expr),* $(,)?) => { $crate::module::ops_from(&[$($x),*]) };
}

/// Operand words from a slice: up to 6 are copied inline with plain stores (`Ops::from_slice`
/// calls memcpy for any length).
#[inline]
pub fn ops_from(words: &[u32]) -> Ops {
    if words.len() <= 6 {
        let mut buf = [0u32; 6];
        for (d, &s) in buf.iter_mut().zip(words) {
            *d = s;
        }
        Ops::from_buf_and_len(buf, words.len())
    } else {
        Ops::from_slice(words)
    }
}

/// One instruction: opcode, optional result type and result id (0 = none), other operands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inst {
    pub op: u32,
    pub ty: u32,
    pub id: u32,
    pub ops: Ops,
}

impl Inst {
    pub fn new(op: u32, ty: u32, id: u32, ops: impl Into<Ops>) -> Self {
        Inst { op, ty, id, ops: ops.into() }
    }
    fn word_count(&self) -> usize {
        1 + (self.ty != 0) as usize + (self.id != 0) as usize + self.ops.len()
    }
    /// Appends the instruction's words to `out`, which has room for them (the caller reserved
    /// the module's exact size). Plain word stores: a memmove call per 1–6 word operand list,
    /// and the bounds checks of safe slice writes, were most of the time of `assemble`.
    #[inline]
    fn encode(&self, out: &mut Vec<u32>) {
        let ops = self.ops.as_slice();
        let n = 1 + (self.ty != 0) as usize + (self.id != 0) as usize + ops.len();
        assert!(out.capacity() - out.len() >= n, "assemble reserved too little");
        // SAFETY: the assert above: `n` words fit in the spare capacity; they are all written
        // before the length is raised.
        unsafe {
            let mut p = out.as_mut_ptr().add(out.len());
            *p = ((n as u32) << 16) | self.op;
            p = p.add(1);
            if self.ty != 0 {
                *p = self.ty;
                p = p.add(1);
            }
            if self.id != 0 {
                *p = self.id;
                p = p.add(1);
            }
            for (k, &w) in ops.iter().enumerate() {
                *p.add(k) = w;
            }
            out.set_len(out.len() + n);
        }
    }
}

/// How many operands (after the result type and result id) of an instruction with opcode `op`
/// are certainly ids: those before its first literal, enumerant or optional operand (all of them
/// when the rest are a list of ids). From rspirv's grammar, tabled at compile time.
#[inline]
pub const fn leading_id_operands(op: u32) -> usize {
    opcode_table::leading_ids(opcode_table::info(op))
}

/// `OpName` of an opcode, for error messages.
pub fn opcode_name(opcode: u32) -> String {
    INSTRUCTION_TABLE
        .iter()
        .find(|i| i.opcode as u32 == opcode)
        .map(|i| format!("Op{}", i.opname))
        .unwrap_or_else(|| format!("opcode {opcode}"))
}

/// Where the interface starts in an OpEntryPoint's operands: after the execution model, the
/// function and the name (a literal string, its last word holding the nul; SPIR-V spec 2.2.1).
pub fn interface_start(entry_point_ops: &[u32]) -> usize {
    let name_words = entry_point_ops.iter().skip(2).position(|w| w.to_le_bytes().contains(&0)).map_or(0, |n| n + 1);
    (2 + name_words).min(entry_point_ops.len())
}

/// Decodes a literal string operand (nul-terminated, packed little-endian into words).
pub fn decode_string(words: &[u32]) -> String {
    let mut bytes = Vec::new();
    'outer: for w in words {
        for b in w.to_le_bytes() {
            if b == 0 {
                break 'outer;
            }
            bytes.push(b);
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Does the literal string in `words` equal `s`? (No allocation, unlike [`decode_string`].)
pub fn string_is(words: &[u32], s: &str) -> bool {
    let mut bytes = words.iter().flat_map(|w| w.to_le_bytes()).take_while(|&b| b != 0);
    s.bytes().all(|c| bytes.next() == Some(c)) && bytes.next().is_none()
}

/// Encodes a literal string operand.
pub fn encode_string(s: &str) -> Vec<u32> {
    let mut bytes = s.as_bytes().to_vec();
    bytes.push(0);
    while !bytes.len().is_multiple_of(4) {
        bytes.push(0);
    }
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

#[derive(Debug, Clone)]
pub struct Block {
    pub label: u32,
    /// Instructions including the terminator (and merge instruction) at the end.
    pub insts: Vec<Inst>,
}

#[derive(Debug, Clone)]
pub struct Function {
    pub def: Inst,
    pub params: Vec<Inst>,
    pub blocks: Vec<Block>,
    /// The OpFunctionEnd and anything that stood between the last block and it.
    pub end: Vec<Inst>,
}

/// A module split into the sections of the logical layout (SPIR-V spec 2.4).
#[derive(Debug, Clone)]
pub struct Module {
    pub header: [u32; HEADER_WORDS],
    pub capabilities: Vec<Inst>,
    pub extensions: Vec<Inst>,
    pub ext_inst_imports: Vec<Inst>,
    pub memory_model: Vec<Inst>,
    pub entry_points: Vec<Inst>,
    pub execution_modes: Vec<Inst>,
    pub debug: Vec<Inst>,
    pub annotations: Vec<Inst>,
    /// Types, constants, global variables, undefs (and OpLine / non-semantic OpExtInst).
    pub globals: Vec<Inst>,
    pub functions: Vec<Function>,
}

impl Module {
    pub fn version(&self) -> (u32, u32) {
        ((self.header[1] >> 16) & 0xff, (self.header[1] >> 8) & 0xff)
    }

    pub fn parse(words: &[u32]) -> Result<Module, RewriteError> {
        if words.len() < HEADER_WORDS || words[0] != MAGIC {
            return Err(RewriteError::malformed(0, "not a SPIR-V module (bad header)"));
        }
        let bound = words[3];
        if bound == 0 || bound > MAX_ID_BOUND {
            return Err(RewriteError::malformed(3, format!("id bound {bound} is out of range")));
        }
        // Pass 1: check every instruction and count what each section holds, so every list is
        // allocated once at its size (growing lists a push at a time, and large guessed ones,
        // were a good part of a small module's rewrite).
        let mut counts = [0usize; SECTIONS];
        let mut functions = 0;
        validate(words, bound, |opcode| match section_of(opcode) {
            Some(s) => counts[s] += 1,
            None if opcode == op::FUNCTION => functions += 1,
            None => {}
        })?;
        // Room for what a lowering adds where it adds most.
        let list = |s: usize, room: usize| Vec::with_capacity(counts[s] + if counts[s] > 0 || room > 0 { room } else { 0 });
        let mut m = Module {
            header: [words[0], words[1], words[2], words[3], words[4]],
            capabilities: list(0, 2),
            extensions: list(1, 2),
            ext_inst_imports: list(2, 0),
            memory_model: list(3, 0),
            entry_points: list(4, 0),
            execution_modes: list(5, 0),
            debug: list(6, 0),
            annotations: list(7, 16),
            globals: list(8, 16),
            functions: Vec::with_capacity(functions),
        };
        // Pass 2: build. Every word count, opcode and id was checked above.
        let mut at = HEADER_WORDS;
        let mut func: Option<Function> = None;
        let mut block: Option<Block> = None;
        while at < words.len() {
            let count = (words[at] >> 16) as usize;
            let opcode = words[at] & 0xffff;
            let info = opcode_table::info(opcode);
            let mut k = at + 1;
            let ty = if info & opcode_table::TYPE != 0 {
                k += 1;
                words[k - 1]
            } else {
                0
            };
            let id = if info & opcode_table::RESULT != 0 {
                k += 1;
                words[k - 1]
            } else {
                0
            };
            let inst = Inst { op: opcode, ty, id, ops: ops_from(&words[k..at + count]) };
            at += count;
            if let Some(f) = func.as_mut() {
                match opcode {
                    op::FUNCTION_PARAMETER if block.is_none() && f.blocks.is_empty() => f.params.push(inst),
                    op::LABEL => {
                        if block.is_some() {
                            return Err(RewriteError::malformed(at, "block without a terminator"));
                        }
                        block = Some(Block { label: inst.id, insts: Vec::with_capacity(block_len(words, at)) });
                    }
                    op::FUNCTION_END => {
                        if block.is_some() {
                            return Err(RewriteError::malformed(at, "function ends inside a block"));
                        }
                        let mut f = func.take().unwrap();
                        f.end.push(inst);
                        m.functions.push(f);
                    }
                    _ => match block.as_mut() {
                        Some(b) => {
                            let terminates = is_terminator(opcode);
                            b.insts.push(inst);
                            if terminates {
                                f.blocks.push(block.take().unwrap());
                            }
                        }
                        None => return Err(RewriteError::malformed(at, format!("opcode {opcode} outside a block"))),
                    },
                }
                continue;
            }
            match section_of(opcode) {
                Some(s) => m.section_mut(s).push(inst),
                None if opcode == op::FUNCTION => {
                    let (params, blocks) = function_shape(words, at);
                    func = Some(Function { def: inst, params: Vec::with_capacity(params), blocks: Vec::with_capacity(blocks), end: Vec::with_capacity(1) })
                }
                None => m.globals.push(inst),
            }
        }
        if func.is_some() {
            return Err(RewriteError::malformed(words.len(), "module ends inside a function"));
        }
        // Capability Linkage (5) is the only way a module may have no entry point (SPIR-V 2.4).
        if m.entry_points.is_empty() && !m.has_capability(5) {
            return Err(RewriteError::malformed(0, "no OpEntryPoint (and no Linkage capability): truncated module?"));
        }
        // A module cut at an instruction boundary parses; its entry points then name functions
        // that are not there.
        for ep in &m.entry_points {
            let f = ep.ops.get(1).copied().unwrap_or(0);
            if !m.functions.iter().any(|x| x.def.id == f) {
                return Err(RewriteError::malformed(0, format!("entry point names function %{f}, which the module does not define")));
            }
        }
        Ok(m)
    }

    /// Section `s` of [`section_of`].
    fn section_mut(&mut self, s: usize) -> &mut Vec<Inst> {
        match s {
            0 => &mut self.capabilities,
            1 => &mut self.extensions,
            2 => &mut self.ext_inst_imports,
            3 => &mut self.memory_model,
            4 => &mut self.entry_points,
            5 => &mut self.execution_modes,
            6 => &mut self.debug,
            7 => &mut self.annotations,
            _ => &mut self.globals,
        }
    }

    fn sections(&self) -> [&Vec<Inst>; SECTIONS] {
        [
            &self.capabilities,
            &self.extensions,
            &self.ext_inst_imports,
            &self.memory_model,
            &self.entry_points,
            &self.execution_modes,
            &self.debug,
            &self.annotations,
            &self.globals,
        ]
    }

    /// The module's size in words, header included (what [`Module::assemble`] returns).
    pub fn word_count(&self) -> usize {
        let words = |list: &[Inst]| list.iter().map(Inst::word_count).sum::<usize>();
        HEADER_WORDS
            + self.sections().iter().map(|s| words(s)).sum::<usize>()
            + self
                .functions
                .iter()
                .map(|f| words(std::slice::from_ref(&f.def)) + words(&f.params) + words(&f.end) + f.blocks.iter().map(|b| 2 + words(&b.insts)).sum::<usize>())
                .sum::<usize>()
    }

    pub fn assemble(&self) -> Vec<u32> {
        let sections = self.sections();
        // Exact size first: a large rewritten module would otherwise be copied as it grows.
        let size = self.word_count();
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&self.header);
        for section in sections {
            for i in section.iter() {
                i.encode(&mut out);
            }
        }
        for f in &self.functions {
            f.def.encode(&mut out);
            for p in &f.params {
                p.encode(&mut out);
            }
            for b in &f.blocks {
                out.extend_from_slice(&[(2 << 16) | op::LABEL, b.label]);
                for i in &b.insts {
                    i.encode(&mut out);
                }
            }
            for e in &f.end {
                e.encode(&mut out);
            }
        }
        debug_assert_eq!(out.len(), size);
        out
    }

    /// Allocates a fresh id.
    pub fn next_id(&mut self) -> u32 {
        let id = self.header[3];
        self.header[3] += 1;
        id
    }

    /// Adds OpName / OpMemberName instructions where the logical layout has them (SPIR-V spec
    /// 2.4, section 7b): before the first OpModuleProcessed (7c; glslang's `-g` output ends its
    /// debug section with them), else at the end.
    pub fn add_names(&mut self, names: impl IntoIterator<Item = Inst>) {
        let at = self.debug.iter().position(|i| i.op == op::MODULE_PROCESSED).unwrap_or(self.debug.len());
        self.debug.splice(at..at, names);
    }

    pub fn has_capability(&self, cap: u32) -> bool {
        self.capabilities.iter().any(|c| c.ops.first() == Some(&cap))
    }
    pub fn add_capability(&mut self, cap: u32) {
        if !self.has_capability(cap) {
            self.capabilities.push(Inst::new(op::CAPABILITY, 0, 0, vec![cap]));
        }
    }
    pub fn remove_capability(&mut self, cap: u32) {
        self.capabilities.retain(|c| c.ops.first() != Some(&cap));
    }
    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.iter().any(|e| string_is(&e.ops, name))
    }
    pub fn add_extension(&mut self, name: &str) {
        if !self.has_extension(name) {
            self.extensions.push(Inst::new(op::EXTENSION, 0, 0, encode_string(name)));
        }
    }
    pub fn remove_extension(&mut self, name: &str) {
        self.extensions.retain(|e| !string_is(&e.ops, name));
    }

    /// Map of every global (type/constant/variable) result id to its index in `globals`.
    pub fn global_index(&self) -> HashMap<u32, usize> {
        let mut index = HashMap::with_capacity_and_hasher(self.globals.len(), Default::default());
        index.extend(self.globals.iter().enumerate().filter(|(_, i)| i.id != 0).map(|(n, i)| (i.id, n)));
        index
    }

    /// Decorations (decoration number + literal operands) on a target id.
    pub fn decorations_of(&self, target: u32) -> Vec<(u32, Vec<u32>)> {
        self.annotations
            .iter()
            .filter(|a| a.op == op::DECORATE && a.ops.first() == Some(&target))
            .map(|a| (a.ops[1], a.ops[2..].to_vec()))
            .collect()
    }
    pub fn decorate(&mut self, target: u32, decoration: u32, literals: &[u32]) {
        let mut ops = Ops::from_slice(&[target, decoration]);
        ops.extend_from_slice(literals);
        self.annotations.push(Inst::new(op::DECORATE, 0, 0, ops));
    }
    pub fn member_decorate(&mut self, target: u32, member: u32, decoration: u32, literals: &[u32]) {
        let mut ops = Ops::from_slice(&[target, member, decoration]);
        ops.extend_from_slice(literals);
        self.annotations.push(Inst::new(op::MEMBER_DECORATE, 0, 0, ops));
    }
}

/// Sections of the logical layout before the functions (SPIR-V spec 2.4), in order.
const SECTIONS: usize = 9;

/// The section (index into [`Module::section_mut`]) an instruction outside a function belongs
/// to; None for OpFunction (and anything inside a function).
fn section_of(opcode: u32) -> Option<usize> {
    Some(match opcode {
        op::CAPABILITY => 0,
        op::EXTENSION => 1,
        op::EXT_INST_IMPORT => 2,
        op::MEMORY_MODEL | op::SAMPLER_IMAGE_ADDRESSING_MODE_NV => 3,
        op::ENTRY_POINT => 4,
        op::EXECUTION_MODE | op::EXECUTION_MODE_ID => 5,
        op::SOURCE_CONTINUED | op::SOURCE | op::SOURCE_EXTENSION | op::NAME | op::MEMBER_NAME | op::STRING | op::MODULE_PROCESSED => 6,
        op::DECORATE | op::MEMBER_DECORATE | op::DECORATION_GROUP | op::GROUP_DECORATE | op::GROUP_MEMBER_DECORATE | op::DECORATE_ID | op::DECORATE_STRING
        | op::MEMBER_DECORATE_STRING => 7,
        op::FUNCTION | op::FUNCTION_PARAMETER | op::LABEL | op::FUNCTION_END => return None,
        _ => 8,
    })
}

/// Checks every instruction of `words` (past the header): word counts inside the module, known
/// opcodes with their required operands, result types and ids inside `bound`, no id defined
/// twice, vector component counts; `each(opcode)` sees every instruction. Whatever passes can
/// be decoded without further checks.
fn validate(words: &[u32], bound: u32, mut each: impl FnMut(u32)) -> Result<(), RewriteError> {
    // Result ids must be unique (SPIR-V spec 2.2.1 "Id"): one bit per id below the bound, on
    // the stack for the usual bounds.
    let mut small = [0u64; 64];
    let mut large = vec![];
    let defined: &mut [u64] = if bound as usize <= 64 * 64 {
        &mut small
    } else {
        large.resize((bound as usize).div_ceil(64), 0u64);
        &mut large
    };
    let mut at = HEADER_WORDS;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let opcode = words[at] & 0xffff;
        if count == 0 || at + count > words.len() {
            return Err(RewriteError::malformed(at, format!("instruction with opcode {opcode} has a bad word count {count}")));
        }
        let info = opcode_table::info(opcode);
        if info & opcode_table::KNOWN == 0 {
            return Err(RewriteError::malformed(at, format!("unknown opcode {opcode}")));
        }
        let (has_ty, has_id) = (info & opcode_table::TYPE != 0, info & opcode_table::RESULT != 0);
        if count < 1 + has_ty as usize + has_id as usize + opcode_table::min_operands(info) {
            return Err(RewriteError::malformed(at, format!("opcode {opcode} has {count} words, fewer than its required operands")));
        }
        let ty = if has_ty { words[at + 1] } else { 0 };
        let id = if has_id { words[at + 1 + has_ty as usize] } else { 0 };
        if (has_ty && (ty == 0 || ty >= bound)) || (has_id && (id == 0 || id >= bound)) {
            return Err(RewriteError::malformed(at, format!("opcode {opcode} has an id outside the bound")));
        }
        if has_id {
            let (w, bit) = ((id / 64) as usize, 1u64 << (id % 64));
            if defined[w] & bit != 0 {
                return Err(RewriteError::malformed(at, format!("id %{id} is defined twice")));
            }
            defined[w] |= bit;
        }
        // OpTypeVector: 2, 3 or 4 components, or 8/16 with Vector16 (SPIR-V spec 3.32.6).
        // The passes size, loop and multiply by component counts: a damaged one is an error.
        if opcode == op::TYPE_VECTOR && !matches!(words[at + 3], 2 | 3 | 4 | 8 | 16) {
            return Err(RewriteError::malformed(at, format!("OpTypeVector %{id} has {} components", words[at + 3])));
        }
        each(opcode);
        at += count;
    }
    Ok(())
}

/// Instructions of the block whose first instruction after its OpLabel is at word `at` (up to
/// and including its terminator).
fn block_len(words: &[u32], mut at: usize) -> usize {
    let mut n = 0;
    while at < words.len() {
        let opcode = words[at] & 0xffff;
        n += 1;
        if is_terminator(opcode) || opcode == op::LABEL || opcode == op::FUNCTION_END {
            break;
        }
        at += ((words[at] >> 16) as usize).max(1);
    }
    n
}

/// (parameters, blocks) of the function whose first instruction after OpFunction is at `at`.
fn function_shape(words: &[u32], mut at: usize) -> (usize, usize) {
    let (mut params, mut blocks) = (0, 0);
    while at < words.len() {
        match words[at] & 0xffff {
            op::FUNCTION_PARAMETER => params += 1,
            op::LABEL => blocks += 1,
            op::FUNCTION_END => break,
            _ => {}
        }
        at += ((words[at] >> 16) as usize).max(1);
    }
    (params, blocks)
}

pub fn is_terminator(opcode: u32) -> bool {
    // OpBranch, OpBranchConditional, OpSwitch, OpKill, OpReturn, OpReturnValue, OpUnreachable,
    // OpTerminateInvocation, OpIgnoreIntersectionKHR, OpTerminateRayKHR, OpEmitMeshTasksEXT
    matches!(opcode, 249..=255 | 4416 | 4448 | 4449 | 5294)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_is_matches_decode_string() {
        for s in ["", "a", "abc", "abcd", "abcde", "GLSL.std.450", "SPV_NV_raw_access_chains"] {
            let words = encode_string(s);
            assert!(string_is(&words, s), "{s}");
            assert_eq!(decode_string(&words), s);
            for other in ["", "a", "abcd", "GLSL.std.45", "GLSL.std.4500"] {
                assert_eq!(string_is(&words, other), s == other, "{s} vs {other}");
            }
        }
    }
}
