//! The rewriter's fallbacks for devices without 8/16-bit storage, executed on lavapipe through
//! the layer with `debug_target=core` (which makes the layer rewrite with `Target::core()` even
//! though lavapipe has the features):
//!
//! - sub-word (8/16-bit) stores are atomic and + or pairs on the containing 32-bit word: many
//!   invocations storing neighbouring bytes of the same words at once must lose no update;
//! - bounds are word-granular: `len` = `OpArrayLength` of the word view × 4, i.e. the bound range
//!   rounded down to a multiple of 4 — with a 43-byte range, bytes 40..43 are out of bounds
//!   (loads read 0 / the `debug_oob_poison` pattern, stores write nothing), bytes < 40 are not.

use polyfill_e2e::child;
use polyfill_e2e::spvasm::{Module, GID_X_CHAIN};
use polyfill_e2e::tools::bytes_to_words;
use polyfill_e2e::vk::shared_layer_context;
use polyfill_e2e::{bytes, spirv_as, spirv_dis, BufferSpec, ComputeJob, Context, ContextOptions};
use std::sync::OnceLock;

const TARGET_SETTING: &str = "debug_target";
const POISON: u8 = 0xAB;

/// Contexts with `debug_target=core`, without and with `debug_oob_poison` (created once per
/// test process).
fn core_context(poison: bool) -> &'static Context {
    static PLAIN: OnceLock<Context> = OnceLock::new();
    static POISONED: OnceLock<Context> = OnceLock::new();
    let (cell, opts) = if poison {
        (
            &POISONED,
            ContextOptions::raw_access_chains()
                .setting(TARGET_SETTING, "core")
                .setting("debug_oob_poison", &format!("{POISON:#x}")),
        )
    } else {
        (
            &PLAIN,
            ContextOptions::raw_access_chains().setting(TARGET_SETTING, "core"),
        )
    };
    cell.get_or_init(|| Context::new(&opts).unwrap_or_else(|e| panic!("core-target context: {e}")))
}

fn robustness_operand(per_component: bool) -> &'static str {
    if per_component {
        " RobustnessPerComponentNV"
    } else {
        ""
    }
}

/// A compute module (`LocalSize local 1 1`) with raw access chains and 8- or 16-bit storage
/// (`bits` = 8, 16 or 32).
/// `%cshift` = log2 of the element size in bytes, `%golden` the hash multiplier.
fn storage_module(bits: u32, local: u32) -> Module {
    let m = match bits {
        8 => Module::compute(local).cap("StorageBuffer8BitAccess").ext("SPV_KHR_8bit_storage"),
        16 => Module::compute(local).cap("StorageBuffer16BitAccess").ext("SPV_KHR_16bit_storage"),
        _ => Module::compute(local),
    };
    m.raw_access_chains().globals(&format!("%cshift = OpConstant %u32 {}\n%golden = OpConstant %u32 2654435761", (bits / 8).trailing_zeros()))
}

/// `val` = the `bits`-bit integer (`%u8`, `%u16`, `%u32`) of the u32 `from`.
fn narrow(bits: u32, val: &str, from: &str) -> String {
    match bits {
        32 => format!("{val} = OpCopyObject %u32 {from}"),
        _ => format!("{val} = OpUConvert %u{bits} {from}"),
    }
}

/// Assembles one of this file's modules and runs spirv-val on it (`target_env`: vulkan1.1 for
/// SPIR-V 1.3, vulkan1.2 for the Vulkan memory model modules).
fn assemble(src: &str, target_env: &str) -> Vec<u32> {
    let words = spirv_as(src, target_env).unwrap_or_else(|e| panic!("{e}\n{src}"));
    polyfill_e2e::spirv_val(&words, target_env).unwrap_or_else(|e| panic!("{e}\n{src}"));
    words
}

// ---------------------------------------------------------------------------------------------
// Race: sub-word stores from many invocations into the same words.

const RACE_GROUPS: u32 = 4;
const RACE_LOCAL: u32 = 64;
const RACE_INVOCATIONS: usize = (RACE_GROUPS * RACE_LOCAL) as usize;
const RACE_TAIL: usize = 64;
const RACE_DISPATCHES: usize = 20;

/// One race module: element width, robustness, memory model.
#[derive(Clone, Copy, Debug)]
struct Race {
    bits: u32,
    per_component: bool,
    /// `OpMemoryModel Logical Vulkan` (SPIR-V 1.5): the sub-word atomics use QueueFamily scope.
    vulkan_mm: bool,
}

impl Race {
    fn all(bits: u32) -> Vec<Race> {
        let mut v = Vec::new();
        for vulkan_mm in [false, true] {
            for per_component in [false, true] {
                v.push(Race {
                    bits,
                    per_component,
                    vulkan_mm,
                });
            }
        }
        v
    }
    fn target_env(self) -> &'static str {
        if self.vulkan_mm {
            "vulkan1.2"
        } else {
            "vulkan1.1"
        }
    }
    fn words(self) -> Vec<u32> {
        assemble(&race_source(self), self.target_env())
    }
}

/// Invocation (`wg`, `lid`) stores `value(e)` = low bits of `e * 0x9E3779B1 >> 7` (a distinct
/// value per element for 16 bits) as a `bits`-bit element through a stride-0 raw chain with
/// Offset = `e * bytes`, into two buffers:
/// - binding 0: element `e = gid` (neighbouring SIMD lanes of one workgroup share each word: on
///   lavapipe a plain word read-modify-write loses 3 of every 4 bytes here, every time — checked
///   with a hand-written non-atomic variant),
/// - binding 1: element `e = lid * 4 + wg` (the 4 workgroups, which lavapipe may run on
///   different threads, share each word).
fn race_source(r: Race) -> String {
    let Race {
        bits,
        per_component,
        vulkan_mm,
    } = r;
    let rob = robustness_operand(per_component);
    let m = storage_module(bits, RACE_LOCAL);
    // SPIR-V 1.5 under the Vulkan memory model: the interface lists every global variable.
    let m = if vulkan_mm { m.cap("VulkanMemoryModel").memory_model("Logical", "Vulkan").spirv(5) } else { m };
    m.gid()
        .builtin("%lid", "LocalInvocationId", "Input", "%v3u")
        .builtin("%wg", "WorkgroupId", "Input", "%v3u")
        .word_buffers(&["a", "b"])
        .main(&format!(
            r#"%pg = OpAccessChain %pin_u32 %gid %c0
%g = OpLoad %u32 %pg
%pl = OpAccessChain %pin_u32 %lid %c0
%li = OpLoad %u32 %pl
%pw = OpAccessChain %pin_u32 %wg %c0
%w = OpLoad %u32 %pw
%l4 = OpShiftLeftLogical %u32 %li %c2
%e2 = OpIAdd %u32 %l4 %w
%offa = OpShiftLeftLogical %u32 %g %cshift
%offb = OpShiftLeftLogical %u32 %e2 %cshift
%ma = OpIMul %u32 %g %golden
%va = OpShiftRightLogical %u32 %ma %c7
%mb = OpIMul %u32 %e2 %golden
%vb = OpShiftRightLogical %u32 %mb %c7
%pa = OpRawAccessChainNV %ps_u{bits} %a %c0 %c0 %offa{rob}
%pb = OpRawAccessChainNV %ps_u{bits} %b %c0 %c0 %offb{rob}
{}
{}
OpStore %pa %vala Aligned {align}
OpStore %pb %valb Aligned {align}"#,
            narrow(bits, "%vala", "%va"),
            narrow(bits, "%valb", "%vb"),
            align = bits / 8,
        ))
        .text()
}

fn race_value(e: usize, bits: u32) -> u32 {
    let v = (e as u32).wrapping_mul(2654435761) >> 7;
    v & ((1u64 << bits) - 1) as u32
}

/// Expected contents of one race buffer: `values` over the written area, 0xCC after it.
fn race_expected(bits: u32) -> Vec<u8> {
    let e_bytes = (bits / 8) as usize;
    let mut out = Vec::with_capacity(RACE_INVOCATIONS * e_bytes + RACE_TAIL);
    for e in 0..RACE_INVOCATIONS {
        out.extend_from_slice(&race_value(e, bits).to_le_bytes()[..e_bytes]);
    }
    out.extend(std::iter::repeat_n(0xCC, RACE_TAIL));
    out
}

fn race_job(bits: u32, per_component: bool) -> ComputeJob {
    let e_bytes = (bits / 8) as usize;
    let written = RACE_INVOCATIONS * e_bytes;
    // The written area starts as the complement of the expected bytes (every byte must change,
    // so a lost update always shows), the tail as 0xCC (must not change).
    let mut data: Vec<u8> = race_expected(bits).iter().map(|b| !b).collect();
    data[written..].fill(0xCC);
    let range = if per_component {
        Some(written as u64)
    } else {
        None
    };
    ComputeJob {
        buffers: vec![
            BufferSpec::storage(0, data.clone()).window(0, range),
            BufferSpec::storage(1, data).window(0, range),
        ],
        groups: [RACE_GROUPS, 1, 1],
        ..Default::default()
    }
}

fn run_race(bits: u32) {
    let ctx = core_context(false);
    let want = race_expected(bits);
    let mut failures = Vec::new();
    for r in Race::all(bits) {
        if r.vulkan_mm && !ctx.features().vulkan_memory_model {
            eprintln!("{r:?}: device lacks vulkanMemoryModel; skipped");
            continue;
        }
        let job = race_job(bits, r.per_component);
        let module = ctx
            .create_shader_module(&r.words())
            .unwrap_or_else(|e| panic!("{r:?}: vkCreateShaderModule: {e:?}"));
        for run in 0..RACE_DISPATCHES {
            let out = ctx
                .run_compute_module(module, &job)
                .unwrap_or_else(|e| panic!("{r:?}: dispatch: {e}"));
            for (bi, got) in out.iter().enumerate() {
                if let Some(i) = bytes::first_difference(got, &want) {
                    let bad = got.iter().zip(&want).filter(|(a, b)| a != b).count();
                    let w = i / 4 * 4;
                    failures.push(format!(
                        "{r:?} dispatch {run} buffer {bi} ({}): {bad} bytes wrong, first at byte {i}: word at {w} got {:02x?} expected {:02x?}",
                        if bi == 0 { "lanes share words" } else { "workgroups share words" },
                        &got[w..w + 4],
                        &want[w..w + 4]
                    ));
                }
            }
        }
        ctx.destroy_shader_module(module);
    }
    assert!(
        failures.is_empty(),
        "lost or stray sub-word stores:\n{}",
        failures.join("\n")
    );
    // Control: the same modules with the device's real features (8/16-bit views).
    let dev = shared_layer_context();
    for r in Race::all(bits) {
        if r.vulkan_mm && !dev.features().vulkan_memory_model {
            continue;
        }
        let out = dev
            .run_compute(&r.words(), &race_job(bits, r.per_component))
            .unwrap();
        for got in &out {
            assert_eq!(
                bytes::first_difference(got, &want),
                None,
                "device target, {r:?}"
            );
        }
    }
}

#[test]
fn subword_u8_stores_race_free() {
    run_race(8);
}

#[test]
fn subword_u16_stores_race_free() {
    run_race(16);
}

/// The rewritten modules really take the fallbacks: atomic and/or pairs, and no 8/16-bit alias
/// view or 8/16-bit storage capability added (the application's own 8/16-bit value type stays:
/// the stored value has it). Checked on the layer's `dump_shaders_dir` output.
#[test]
fn core_target_rewrite_uses_atomics_and_word_views() {
    let dir = child::temp_dir("core-target-dumps");
    let ctx = Context::new(
        &ContextOptions::raw_access_chains()
            .setting(TARGET_SETTING, "core")
            .setting("dump_shaders_dir", dir.to_str().unwrap()),
    )
    .unwrap();
    for r in Race::all(8).into_iter().chain(Race::all(16)) {
        let Race { bits, .. } = r;
        let words = r.words();
        let m = ctx
            .create_shader_module(&words)
            .unwrap_or_else(|e| panic!("vkCreateShaderModule: {e:?}"));
        ctx.destroy_shader_module(m);
        let hash = fnv1a64(&polyfill_e2e::tools::words_to_bytes(&words));
        let after = dir.join(format!("{hash:016x}.after.spv"));
        let after = bytes_to_words(
            &std::fs::read(&after).unwrap_or_else(|e| panic!("{}: {e}", after.display())),
        );
        let dis = spirv_dis(&after);
        let what = format!("{r:?}");
        assert!(
            dis.contains("OpAtomicAnd"),
            "{what}: no OpAtomicAnd in the core-target rewrite:\n{dis}"
        );
        assert!(
            dis.contains("OpAtomicOr"),
            "{what}: no OpAtomicOr in the core-target rewrite:\n{dis}"
        );
        // The only 8/16-bit type is the application's own value type (declared once, before the
        // rewrite); no runtime array (alias view) of 8/16-bit elements, no ArrayStride 1/2.
        let small_types: Vec<&str> = dis
            .lines()
            .filter(|l| l.contains(&format!("OpTypeInt {bits} 0")))
            .collect();
        assert_eq!(small_types.len(), 1, "{what}: {small_types:?}");
        let small = small_types[0].split('=').next().unwrap().trim();
        assert!(
            !dis.lines()
                .any(|l| l.contains("OpTypeRuntimeArray") && l.trim_end().ends_with(small)),
            "{what}: an alias view of {bits}-bit elements was declared:\n{dis}"
        );
        assert!(
            !dis.contains("ArrayStride 1\n") && !dis.contains("ArrayStride 2\n"),
            "{what}: 8/16-bit array stride:\n{dis}"
        );
        let caps = |d: &str, c: &str| {
            d.lines()
                .filter(|l| l.trim() == format!("OpCapability {c}"))
                .count()
        };
        let before = spirv_dis(&words);
        for c in [
            "StorageBuffer8BitAccess",
            "StorageBuffer16BitAccess",
            "Int8",
            "Int16",
            "Int64",
        ] {
            assert!(
                caps(&dis, c) <= caps(&before, c),
                "{what}: the rewrite added capability {c}"
            );
        }
        assert!(!dis.contains("RawAccessChainsNV"), "{what}: {dis}");
        // Scope of the atomics: QueueFamily (5) under the Vulkan memory model (Device scope
        // would need VulkanMemoryModelDeviceScope), else Device (1).
        let want_scope = if r.vulkan_mm { "5" } else { "1" };
        for l in dis
            .lines()
            .filter(|l| l.contains("OpAtomicAnd") || l.contains("OpAtomicOr"))
        {
            // %r = OpAtomicAnd %type %pointer %scope %semantics %value
            let scope = l
                .split_whitespace()
                .nth(5)
                .unwrap_or_else(|| panic!("{what}: {l}"));
            let def = dis
                .lines()
                .find(|d| {
                    d.trim_start()
                        .starts_with(&format!("{scope} = OpConstant "))
                })
                .unwrap_or_else(|| panic!("{what}: scope {scope} is not a constant: {l}"));
            assert_eq!(
                def.split_whitespace().last(),
                Some(want_scope),
                "{what}: atomic scope: {l} / {def}"
            );
        }
        polyfill_e2e::spirv_val(&after, r.target_env()).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

/// FNV-1a 64 (the dump file name).
fn fnv1a64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

// ---------------------------------------------------------------------------------------------
// Word-granular bounds.

const BOUND: u64 = 43;
const BOUND_INVOCATIONS: u32 = 64;

/// Invocation `i`, element size `E` = bits/8: per-component (scalar) load of the `bits`-bit
/// element at byte `i·E` of binding 0 (43-byte range), zero-extended to `out[i]` (binding 1,
/// whole); per-component store of `value(i)` at byte `i·E` of binding 2 (43-byte range).
fn bounds_source(bits: u32) -> String {
    storage_module(bits, BOUND_INVOCATIONS)
        .gid()
        .word_buffers(&["in", "out", "st"])
        .main(&format!(
            r#"{GID_X_CHAIN}
%off = OpShiftLeftLogical %u32 %i %cshift
%p = OpRawAccessChainNV %ps_u{bits} %in %c0 %c0 %off RobustnessPerComponentNV
%h = OpLoad %u{bits} %p Aligned {align}
{}
%po = OpAccessChain %ps_u32 %out %c0 %i
OpStore %po %wide
%m = OpIMul %u32 %i %golden
%v32 = OpShiftRightLogical %u32 %m %c7
{}
%q = OpRawAccessChainNV %ps_u{bits} %st %c0 %c0 %off RobustnessPerComponentNV
OpStore %q %val Aligned {align}"#,
            if bits == 32 { "%wide = OpCopyObject %u32 %h" } else { "%wide = OpUConvert %u32 %h" },
            narrow(bits, "%val", "%v32"),
            align = bits / 8,
        ))
        .text()
}

/// Inputs, and the expected (out, st) contents when the bound range is treated as `len` bytes.
fn bounds_case(bits: u32, len: u64, poison: Option<u8>) -> (ComputeJob, Vec<u8>, Vec<u8>) {
    let e = (bits / 8) as u64;
    let input = bytes::pattern(256, 43 + bits);
    let out = vec![0xEE; BOUND_INVOCATIONS as usize * 4];
    let st = vec![0xCC; 256];
    let (mut want_out, mut want_st) = (out.clone(), st.clone());
    for i in 0..BOUND_INVOCATIONS as u64 {
        let a = i * e;
        let inb = a + e <= len;
        let mut v = [0u8; 4];
        for k in 0..e as usize {
            v[k] = if inb {
                input[a as usize + k]
            } else {
                poison.unwrap_or(0)
            };
        }
        want_out[4 * i as usize..][..4].copy_from_slice(&v);
        if inb {
            let val = race_value(i as usize, bits).to_le_bytes();
            want_st[a as usize..][..e as usize].copy_from_slice(&val[..e as usize]);
        }
    }
    let job = ComputeJob {
        buffers: vec![
            BufferSpec::storage(0, input).window(0, Some(BOUND)),
            BufferSpec::storage(1, out),
            BufferSpec::storage(2, st).window(0, Some(BOUND)),
        ],
        ..Default::default()
    };
    (job, want_out, want_st)
}

fn check_bounds(ctx: &Context, bits: u32, len: u64, poison: Option<u8>, what: &str) -> Vec<String> {
    let words = assemble(&bounds_source(bits), "vulkan1.1");
    let (job, want_out, want_st) = bounds_case(bits, len, poison);
    let got = ctx
        .run_compute(&words, &job)
        .unwrap_or_else(|e| panic!("{what} u{bits}: {e}"));
    let mut errs = Vec::new();
    let out = bytes::to_u32s(&got[1]);
    let want = bytes::to_u32s(&want_out);
    for (i, (g, w)) in out.iter().zip(&want).enumerate() {
        if g != w {
            errs.push(format!(
                "{what} u{bits}: load at byte {} (invocation {i}) got {g:#x} expected {w:#x}",
                i as u32 * bits / 8
            ));
        }
    }
    for (a, (g, w)) in got[2].iter().zip(&want_st).enumerate() {
        if g != w {
            errs.push(format!(
                "{what} u{bits}: store target byte {a} got {g:#04x} expected {w:#04x}"
            ));
        }
    }
    errs
}

/// With `debug_target=core` a 43-byte range counts as 40 bytes (word-granular `len`): the
/// components at bytes 40..43 are out of bounds — loads read 0 (or the poison pattern), stores
/// write nothing — and everything below 40 behaves as usual. Control: with the device's features
/// (`debug_target=device`, exact byte length) the same modules see all 43 bytes.
#[test]
fn word_granular_bounds_round_range_down() {
    let mut errs = Vec::new();
    for bits in [8, 16, 32] {
        errs.extend(check_bounds(
            core_context(false),
            bits,
            BOUND / 4 * 4,
            None,
            "core",
        ));
        errs.extend(check_bounds(
            core_context(true),
            bits,
            BOUND / 4 * 4,
            Some(POISON),
            "core+poison",
        ));
        errs.extend(check_bounds(
            shared_layer_context(),
            bits,
            BOUND,
            None,
            "device",
        ));
    }
    assert!(
        errs.is_empty(),
        "{} mismatches:\n{}",
        errs.len(),
        errs.join("\n")
    );
}

/// The same 43-byte range really differs between the targets for 8/16-bit components (so the
/// test above observes the word granularity, not just the model): under `core` the u8 load at
/// byte 40 reads 0, under `device` it reads the input byte.
#[test]
fn word_granularity_is_observable() {
    let words = assemble(&bounds_source(8), "vulkan1.1");
    let (job, _, _) = bounds_case(8, BOUND, None);
    let input = job.buffers[0].data.clone();
    assert_ne!(input[40], 0, "pick a pattern seed with a nonzero byte 40");
    let core = bytes::to_u32s(&core_context(false).run_compute(&words, &job).unwrap()[1]);
    let dev = bytes::to_u32s(&shared_layer_context().run_compute(&words, &job).unwrap()[1]);
    assert_eq!(
        core[40], 0,
        "core target: byte 40 of a 43-byte range must be out of bounds"
    );
    assert_eq!(
        dev[40], input[40] as u32,
        "device target: byte 40 of a 43-byte range is in bounds"
    );
    assert_eq!(core[39], input[39] as u32);
}

/// The setting from the environment (`VK_POLYFILL_EXTENSIONS_DEBUG_TARGET=core`) selects the
/// core target too, and says so in the log at `info`; an unknown value is ignored with a warning
/// (the device target stays).
#[test]
fn environment_selects_core_target() {
    const NAME: &str = "environment_selects_core_target";
    if child::is_child(NAME) {
        let ctx = Context::new(&ContextOptions::raw_access_chains()).unwrap();
        let words = assemble(&bounds_source(8), "vulkan1.1");
        let (job, _, _) = bounds_case(8, BOUND, None);
        let out = bytes::to_u32s(&ctx.run_compute(&words, &job).unwrap()[1]);
        println!(
            "LOAD40={:#x} INPUT40={:#x}",
            out[40], job.buffers[0].data[40]
        );
        return;
    }
    let env = polyfill_e2e::layer::env_var_name(TARGET_SETTING);
    let dir = child::temp_dir("core-target-env");
    let input40 = bounds_case(8, BOUND, None).0.buffers[0].data[40];
    for (value, load40, log_line) in [
        ("core", 0u32, "debug_target=core"),
        ("device", input40 as u32, ""),
        (
            "minimal",
            input40 as u32,
            "bad value `minimal` for `debug_target`",
        ),
    ] {
        let log = dir.join(format!("{value}.log"));
        let out = child::spawn(
            NAME,
            &[
                (&env, value),
                (&polyfill_e2e::layer::env_var_name("log_level"), "info"),
                (
                    &polyfill_e2e::layer::env_var_name("log_file"),
                    log.to_str().unwrap(),
                ),
            ],
            None,
        );
        out.assert_success();
        assert!(
            out.stdout.contains(&format!("LOAD40={load40:#x} ")),
            "{env}={value}: {}",
            out.stdout
        );
        let text = child::read_log(&log);
        if log_line.is_empty() {
            assert!(
                !text.contains("debug_target=core"),
                "{env}={value}:\n{text}"
            );
        } else {
            assert!(
                text.contains(log_line),
                "{env}={value}: no `{log_line}` in the log:\n{text}"
            );
        }
    }
}
