//! Compute shaders (SPIR-V assembly) with CPU references, shared by the tests and the demo.
//!
//! Every sample's `expected` is the full contents of every buffer after the dispatch, computed
//! on the CPU from `SPV_NV_raw_access_chains` semantics and the design's out-of-bounds rules
//! (OOB loads read 0 — or the `debug_oob_poison` byte pattern — and OOB stores write nothing,
//! checked per component / per element as the access chain says, to the byte).

use crate::bytes;
use crate::vk::{BufferSpec, ComputeJob, Context};
use spvasm::{Module, GID_X_CHAIN};

/// A compute shader with inputs and CPU-computed expected outputs.
#[derive(Debug, Clone)]
pub struct Sample {
    pub name: &'static str,
    pub description: &'static str,
    /// SPIR-V assembly.
    pub source: String,
    /// `--target-env` for spirv-as / spirv-val.
    pub target_env: &'static str,
    pub job: ComputeJob,
    /// Expected contents of every buffer after the dispatch (same order as `job.buffers`).
    pub expected: Vec<Vec<u8>>,
    /// Whether the module uses `OpRawAccessChainNV`.
    pub uses_raw_access_chains: bool,
    /// Needs Int16 + storageBuffer16BitAccess.
    pub needs_16bit: bool,
}

impl Sample {
    /// Assembles [`source`](Self::source).
    pub fn assemble(&self) -> Result<Vec<u32>, String> {
        crate::tools::spirv_as(&self.source, self.target_env)
    }

    /// Assembles, dispatches on `ctx` and [`check`](Self::check)s every buffer.
    pub fn run_checked(&self, ctx: &Context) -> Result<(), String> {
        self.check(&ctx.run_compute(&self.assemble()?, &self.job)?)
    }

    /// Compares dispatch results with `expected`; the error names the buffer, the first
    /// differing word and both values.
    pub fn check(&self, results: &[Vec<u8>]) -> Result<(), String> {
        if results.len() != self.expected.len() {
            return Err(format!("{}: got {} buffers, expected {}", self.name, results.len(), self.expected.len()));
        }
        for (b, (got, want)) in results.iter().zip(&self.expected).enumerate() {
            if let Some(i) = bytes::first_difference(got, want) {
                let w = i / 4 * 4;
                let word = |v: &[u8]| v.get(w..w + 4).map(|s| format!("{:02x?}", s)).unwrap_or_default();
                let mismatches = got.iter().zip(want).filter(|(a, b)| a != b).count();
                return Err(format!(
                    "{}: buffer {b} differs at byte {i} ({mismatches} bytes differ): got {} expected {} (word at {w})",
                    self.name,
                    word(got),
                    word(want)
                ));
            }
        }
        Ok(())
    }
}

const ALIGN: u64 = 256; // a descriptor offset valid on every device (spec max of minStorageBufferOffsetAlignment)

fn u32_at(data: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(data[off..off + 4].try_into().unwrap())
}
fn put_u32(data: &mut [u8], off: usize, v: u32) {
    data[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn poison_word(p: u8) -> u32 {
    u32::from_le_bytes([p; 4])
}

/// The samples' modules: compute, `LocalSize local 1 1`, `%gid`, `uint[]` storage buffers
/// `buffers` at bindings 0, 1, …, and raw access chains.
fn raw_chain_module(local: u32, buffers: &[&str]) -> Module {
    Module::compute(local).raw_access_chains().gid().word_buffers(buffers)
}

/// A shader without raw access chains: `out[i] = in[i] * 3 + 1` over 64 words (binding 0 in,
/// binding 1 out). For pass-through and plumbing tests.
pub fn plain() -> Sample {
    let source = Module::compute(64)
        .gid()
        .word_buffers(&["in", "out"])
        .main(&format!(
            "{GID_X_CHAIN}
%pi = OpAccessChain %ps_u32 %in %c0 %i
%v = OpLoad %u32 %pi
%m = OpIMul %u32 %v %c3
%r = OpIAdd %u32 %m %c1
%po = OpAccessChain %ps_u32 %out %c0 %i
OpStore %po %r"
        ))
        .text();
    let input: Vec<u32> = (0..64).map(|i| i * 1000 + 7).collect();
    let output = vec![0u32; 64];
    let expected_out: Vec<u32> = input.iter().map(|v| v.wrapping_mul(3).wrapping_add(1)).collect();
    Sample {
        name: "plain",
        description: "no raw access chains: out[i] = in[i]*3+1",
        source,
        target_env: "vulkan1.1",
        job: ComputeJob {
            buffers: vec![BufferSpec::storage(0, bytes::from_u32s(&input)), BufferSpec::storage(1, bytes::from_u32s(&output))],
            ..Default::default()
        },
        expected: vec![bytes::from_u32s(&input), bytes::from_u32s(&expected_out)],
        uses_raw_access_chains: false,
        needs_16bit: false,
    }
}

/// Byte-address buffer: stride 0 + `RobustnessPerComponentNV`. Invocation `i` loads a uvec2
/// (`Aligned 4`) at byte `4*i` of a 256-byte window (descriptor offset 256) and stores
/// `(x+y, x^y)` at byte `8*i` of an output window of 508 bytes: invocation 63's `.y` load is
/// out of bounds (reads `oob`), and its `.y` store is dropped while `.x` is written.
pub fn byte_address(oob: Option<u8>) -> Sample {
    let source = raw_chain_module(64, &["in", "out"])
        .main(&format!(
            "{GID_X_CHAIN}
%off = OpShiftLeftLogical %u32 %i %c2
%p = OpRawAccessChainNV %ps_v2u %in %c0 %c0 %off RobustnessPerComponentNV
%v = OpLoad %v2u %p Aligned 4
%x = OpCompositeExtract %u32 %v 0
%y = OpCompositeExtract %u32 %v 1
%s = OpIAdd %u32 %x %y
%r = OpBitwiseXor %u32 %x %y
%w = OpCompositeConstruct %v2u %s %r
%off8 = OpShiftLeftLogical %u32 %i %c3
%q = OpRawAccessChainNV %ps_v2u %out %c0 %c0 %off8 RobustnessPerComponentNV
OpStore %q %w Aligned 8"
        ))
        .text();
    let oobw = poison_word(oob.unwrap_or(0));
    // Input buffer: 256 bytes before the window, 256-byte window, 16 bytes after (nonzero).
    let mut input = bytes::pattern(ALIGN as usize + 256 + 16, 1);
    put_u32(&mut input, ALIGN as usize + 256, 0x1234_5678);
    let sentinel = 0xEEEE_EEEEu32;
    let output = bytes::from_u32s(&[sentinel; 128]);
    let mut expected_out = output.clone();
    for i in 0..64usize {
        let word = |k: usize| if k < 64 { u32_at(&input, ALIGN as usize + 4 * k) } else { oobw };
        let (x, y) = (word(i), word(i + 1));
        // Output window: 508 bytes: component .y of invocation 63 (bytes 508..512) is OOB.
        put_u32(&mut expected_out, 8 * i, x.wrapping_add(y));
        if 8 * i + 8 <= 508 {
            put_u32(&mut expected_out, 8 * i + 4, x ^ y);
        }
    }
    Sample {
        name: "byte-address",
        description: "stride 0, RobustnessPerComponentNV, uvec2 load/store, descriptor offset 256, ranges 256/508",
        source,
        target_env: "vulkan1.1",
        job: ComputeJob {
            buffers: vec![
                BufferSpec::storage(0, input.clone()).window(ALIGN, Some(256)),
                BufferSpec::storage(1, output).window(0, Some(508)),
            ],
            ..Default::default()
        },
        expected: vec![input, expected_out],
        uses_raw_access_chains: true,
        needs_16bit: false,
    }
}

/// Structured buffer: stride 12 + `RobustnessPerElementNV`, uvec3 elements. The input window is
/// 126 bytes (10.5 elements): element 10 straddles the end and must read entirely as `oob`
/// (lavapipe alone would return its in-range `.x`). Output 1 gets `(a+1, b*2, c^0xffff)` for all
/// 16 elements (whole range); output 2 (window 126 bytes) gets the raw copy, so element 10+ is
/// not written at all.
pub fn structured(oob: Option<u8>) -> Sample {
    let source = raw_chain_module(16, &["in", "out1", "out2"])
        .globals("%cffff = OpConstant %u32 65535\n%k = OpConstantComposite %v3u %c1 %c2 %cffff")
        .main(&format!(
            "{GID_X_CHAIN}
%p = OpRawAccessChainNV %ps_v3u %in %c12 %i %c0 RobustnessPerElementNV
%v = OpLoad %v3u %p Aligned 4
%a = OpCompositeExtract %u32 %v 0
%b = OpCompositeExtract %u32 %v 1
%c = OpCompositeExtract %u32 %v 2
%a1 = OpIAdd %u32 %a %c1
%b1 = OpIMul %u32 %b %c2
%c1x = OpBitwiseXor %u32 %c %cffff
%w = OpCompositeConstruct %v3u %a1 %b1 %c1x
%q1 = OpRawAccessChainNV %ps_v3u %out1 %c12 %i %c0 RobustnessPerElementNV
OpStore %q1 %w Aligned 4
%q2 = OpRawAccessChainNV %ps_v3u %out2 %c12 %i %c0 RobustnessPerElementNV
OpStore %q2 %v Aligned 4"
        ))
        .text();
    let oobw = poison_word(oob.unwrap_or(0));
    let input = bytes::pattern(192, 2);
    let sentinel = bytes::from_u32s(&[0xDEAD_BEEF; 48]);
    let (mut e1, mut e2) = (sentinel.clone(), sentinel.clone());
    for i in 0..16usize {
        let inb = 12 * i + 12 <= 126;
        let comp = |j: usize| if inb { u32_at(&input, 12 * i + 4 * j) } else { oobw };
        let (a, b, c) = (comp(0), comp(1), comp(2));
        put_u32(&mut e1, 12 * i, a.wrapping_add(1));
        put_u32(&mut e1, 12 * i + 4, b.wrapping_mul(2));
        put_u32(&mut e1, 12 * i + 8, c ^ 0xffff);
        if inb {
            put_u32(&mut e2, 12 * i, a);
            put_u32(&mut e2, 12 * i + 4, b);
            put_u32(&mut e2, 12 * i + 8, c);
        }
    }
    Sample {
        name: "structured",
        description: "stride 12, RobustnessPerElementNV, uvec3, window of 126 bytes ends mid-element",
        source,
        target_env: "vulkan1.1",
        job: ComputeJob {
            buffers: vec![
                BufferSpec::storage(0, input.clone()).window(0, Some(126)),
                BufferSpec::storage(1, sentinel.clone()),
                BufferSpec::storage(2, sentinel).window(0, Some(126)),
            ],
            ..Default::default()
        },
        expected: vec![input, e1, e2],
        uses_raw_access_chains: true,
        needs_16bit: false,
    }
}

/// float4 with `Aligned 16`: stride 16 + `RobustnessPerElementNV`, in-place `v += 4.0` over 64
/// elements in a window of 968 bytes (60.5 elements): elements 60..63 are left untouched
/// (element 60 straddles the end: neither its in-range half may be written).
pub fn float4_aligned16() -> Sample {
    let source = raw_chain_module(64, &["buf"])
        .globals("%k = OpConstantComposite %v4f %f4 %f4 %f4 %f4")
        .main(&format!(
            "{GID_X_CHAIN}
%p = OpRawAccessChainNV %ps_v4f %buf %c16 %i %c0 RobustnessPerElementNV
%v = OpLoad %v4f %p Aligned 16
%w = OpFAdd %v4f %v %k
%q = OpRawAccessChainNV %ps_v4f %buf %c16 %i %c0 RobustnessPerElementNV
OpStore %q %w Aligned 16"
        ))
        .text();
    let vals: Vec<f32> = (0..256).map(|i| i as f32 * 0.5 - 17.25).collect();
    let data = bytes::from_f32s(&vals);
    let mut exp = vals.clone();
    for i in 0..64usize {
        if 16 * i + 16 <= 968 {
            for j in 0..4 {
                exp[4 * i + j] += 4.0;
            }
        }
    }
    Sample {
        name: "float4-aligned16",
        description: "stride 16, RobustnessPerElementNV, vec4 Aligned 16 in-place, window 968 bytes",
        source,
        target_env: "vulkan1.1",
        job: ComputeJob { buffers: vec![BufferSpec::storage(0, data.clone()).window(0, Some(968))], ..Default::default() },
        expected: vec![bytes::from_f32s(&exp)],
        uses_raw_access_chains: true,
        needs_16bit: false,
    }
}

/// 16-bit sub-word accesses: stride 0 + `RobustnessPerComponentNV`, u16 loads at byte `2*i`
/// (`Aligned 2`) from a 43-byte window (i = 21 straddles the end → `oob`), widened and stored as
/// u32 to output 1, and `value + 1` stored as u16 at byte `2*i` of output 2 (43-byte window:
/// byte 42 must stay untouched; neighbouring invocations share words).
pub fn sub_word_16bit(oob: Option<u8>) -> Sample {
    let source = raw_chain_module(32, &["in", "out1", "out2"])
        .cap("Int16")
        .cap("StorageBuffer16BitAccess")
        .ext("SPV_KHR_16bit_storage")
        .globals("%h1 = OpConstant %u16 1")
        .main(&format!(
            "{GID_X_CHAIN}
%off = OpShiftLeftLogical %u32 %i %c1
%p = OpRawAccessChainNV %ps_u16 %in %c0 %c0 %off RobustnessPerComponentNV
%h = OpLoad %u16 %p Aligned 2
%wide = OpUConvert %u32 %h
%off4 = OpShiftLeftLogical %u32 %i %c2
%q1 = OpRawAccessChainNV %ps_u32 %out1 %c0 %c0 %off4 RobustnessPerComponentNV
OpStore %q1 %wide Aligned 4
%h2 = OpIAdd %u16 %h %h1
%q2 = OpRawAccessChainNV %ps_u16 %out2 %c0 %c0 %off RobustnessPerComponentNV
OpStore %q2 %h2 Aligned 2"
        ))
        .text();
    let oobh = u16::from_le_bytes([oob.unwrap_or(0); 2]);
    let input = bytes::pattern(64, 3);
    let out1 = bytes::from_u32s(&[0xEEEE_EEEE; 32]);
    let out2 = vec![0xEEu8; 64];
    let (mut e1, mut e2) = (out1.clone(), out2.clone());
    for i in 0..32usize {
        let inb = 2 * i + 2 <= 43;
        let h = if inb { u16::from_le_bytes([input[2 * i], input[2 * i + 1]]) } else { oobh };
        put_u32(&mut e1, 4 * i, h as u32);
        if inb {
            e2[2 * i..2 * i + 2].copy_from_slice(&h.wrapping_add(1).to_le_bytes());
        }
    }
    Sample {
        name: "sub-word-16bit",
        description: "stride 0, RobustnessPerComponentNV, u16 load/store, 43-byte windows",
        source,
        target_env: "vulkan1.1",
        job: ComputeJob {
            buffers: vec![
                BufferSpec::storage(0, input.clone()).window(0, Some(43)),
                BufferSpec::storage(1, out1),
                BufferSpec::storage(2, out2).window(0, Some(43)),
            ],
            ..Default::default()
        },
        expected: vec![input, e1, e2],
        uses_raw_access_chains: true,
        needs_16bit: true,
    }
}

/// A raw-chain load in a loop header, as dxil-spirv writes `while (buf.Load(4 * n) != 0) n++;`:
/// invocation `i` counts the non-zero words from word `i` on (`RobustnessPerComponentNV`,
/// byte addresses), in a window of 40 of the 64 words (loads past it read 0 and end the scan),
/// and stores the count in `out[i]`. Where the lowering checks bounds itself the check branches,
/// so the header is split around it (the loop's merge instruction stays in the header).
/// `single_block`: the loop is one block, its own continue target (the split's last piece then
/// becomes the continue target: SPIR-V 2.11, the back edge must leave the continue construct).
pub fn loop_header_scan(single_block: bool) -> Sample {
    let (back, step, branch) = if single_block {
        ("%header", "%n1 = OpIAdd %u32 %n %c1\n", "OpLoopMerge %merge %header None\nOpBranchConditional %go %header %merge")
    } else {
        ("%cont", "", "OpLoopMerge %merge %cont None\nOpBranchConditional %go %body %merge\n%body = OpLabel\n%n1 = OpIAdd %u32 %n %c1\nOpBranch %cont\n%cont = OpLabel\nOpBranch %header")
    };
    let source = raw_chain_module(32, &["in", "out"])
        .main(&format!(
            "{GID_X_CHAIN}
OpBranch %header
%header = OpLabel
%n = OpPhi %u32 %i %entry %n1 {back}
%off = OpShiftLeftLogical %u32 %n %c2
%p = OpRawAccessChainNV %ps_u32 %in %c0 %c0 %off RobustnessPerComponentNV
%v = OpLoad %u32 %p Aligned 4
%nz = OpINotEqual %bool %v %c0
%lim = OpULessThan %bool %n %c64
%go = OpLogicalAnd %bool %nz %lim
{step}{branch}
%merge = OpLabel
%count = OpISub %u32 %n %i
%po = OpAccessChain %ps_u32 %out %c0 %i
OpStore %po %count"
        ))
        .text();
    const WINDOW: usize = 40;
    let words: Vec<u32> = (0..64u32).map(|k| if k % 7 == 6 { 0 } else { k + 1 }).collect();
    let counts: Vec<u32> = (0..32usize).map(|i| (i..64).take_while(|&k| k < WINDOW && words[k] != 0).count() as u32).collect();
    let input = bytes::from_u32s(&words);
    Sample {
        name: if single_block { "loop_header_scan (one-block loop)" } else { "loop_header_scan" },
        description: "a RobustnessPerComponentNV load in a loop header, scanning past a 40-word window",
        source,
        target_env: "vulkan1.1",
        job: ComputeJob {
            buffers: vec![BufferSpec::storage(0, input.clone()).window(0, Some(4 * WINDOW as u64)), BufferSpec::storage(1, vec![0xEE; 128])],
            ..Default::default()
        },
        expected: vec![input, bytes::from_u32s(&counts)],
        uses_raw_access_chains: true,
        needs_16bit: false,
    }
}

/// The raw-access-chain samples (OOB loads read `oob`, default 0).
pub fn raw_access_chain_samples(oob: Option<u8>) -> Vec<Sample> {
    vec![byte_address(oob), structured(oob), float4_aligned16(), sub_word_16bit(oob)]
}
