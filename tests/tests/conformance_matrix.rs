//! Generated conformance matrix for `OpRawAccessChainNV` through `VK_LAYER_POLYFILL_extensions`
//! on lavapipe. See `polyfill_e2e::matrix` for the dimensions, the reference model and the
//! generator.
//!
//! - `generated_modules_validate`: every generated input module assembles and passes spirv-val
//!   (validates the generator; no Vulkan).
//! - `rewritten_modules_validate`: `shader_rewrite::rewrite` succeeds on every generated module
//!   and its output passes spirv-val (no Vulkan).
//! - `slice_covers_all_pairs`: the default slice uses every value of every dimension and every
//!   pair of values that can occur together.
//! - `conformance_matrix`: runs the cases through the layer and compares every byte.
//! - `conformance_matrix_emulated_addresses`: the cases on physical bases with buffer device
//!   addresses emulated (`buffer_device_address=force`).
//! - `conformance_matrix_core_target`: the same cases with the layer setting `debug_target=core`
//!   (rewrite without 8/16-bit storage: word-granular bounds, atomic sub-word stores), checked
//!   against the model with word-granular bounds (ranges rounded down to a multiple of 4).
//!
//! Environment:
//! - `POLYFILL_FULL_SWEEP=1`: the full cartesian sweep instead of the default slice.
//! - `POLYFILL_MATRIX_FILTER=<substring>`: only cases whose slug contains it (e.g. `store-per-element`).
//! - `POLYFILL_MATRIX_THREADS=<n>` (default 2), `POLYFILL_MATRIX_VALIDATION=1` (Khronos
//!   validation below the layer; slow).
//!
//! Failing cases print their full description and dump their assembly to
//! `$TMPDIR/polyfill-matrix-failures/`.

use polyfill_e2e::matrix::{cases, gen, run, Case};
use std::collections::HashSet;
use polyfill_e2e::spvasm::Module;
use polyfill_e2e::sweep;

fn threads() -> usize {
    sweep::threads("POLYFILL_MATRIX_THREADS")
}

fn selected() -> Vec<Case> {
    sweep::select(cases::full_sweep, cases::slice, Case::slug, "POLYFILL_MATRIX_FILTER")
}

/// Runs `f` over `items` on a few threads; collects the error strings (in `items` order).
fn par_map<T: Sync>(items: &[T], f: impl Fn(&T) -> Option<String> + Sync) -> Vec<String> {
    sweep::par_map(items, threads(), f).into_iter().flatten().collect()
}

/// One plan per distinct shader text.
fn distinct_plans(cs: &[Case]) -> Vec<gen::Plan> {
    let mut seen = HashSet::new();
    cs.iter()
        .map(gen::plan)
        .filter(|p| seen.insert(p.asm.clone()))
        .collect()
}

#[test]
fn generated_modules_validate() {
    let cs = selected();
    let plans = distinct_plans(&cs);
    let errs = par_map(&plans, |p| {
        run::assemble_and_validate(p)
            .err()
            .map(|e| format!("{}\n  {e}", p.case))
    });
    println!(
        "{}: {} cases, {} distinct modules, {} fail spirv-val",
        sweep::mode(),
        cs.len(),
        plans.len(),
        errs.len()
    );
    sweep::print_errors(&errs, 3);
    assert!(
        errs.is_empty(),
        "{} generated modules fail assembly/validation (first shown above)",
        errs.len()
    );
}

#[test]
fn rewritten_modules_validate() {
    let cs = selected();
    let plans = distinct_plans(&cs);
    let errs = par_map(&plans, |p| {
        let words = match run::assemble_and_validate(p) {
            Ok(w) => w,
            Err(e) => return Some(format!("{}\n  generator: {e}", p.case)),
        };
        match run::check_rewrite(&words, &p.case) {
            run::RewriteCheck::Valid => None,
            run::RewriteCheck::RewriteError(e) => Some(format!("{}\n  rewrite error: {e}", p.case)),
            run::RewriteCheck::Invalid(e) => {
                Some(format!("{}\n  rewritten module invalid: {e}", p.case))
            }
        }
    });
    println!(
        "{}: {} modules rewritten, {} passed spirv-val",
        sweep::mode(),
        plans.len(),
        plans.len() - errs.len()
    );
    sweep::print_errors(&errs, 3);
    assert!(
        errs.is_empty(),
        "{} of {} modules fail rewrite/validation (first shown above)",
        errs.len(),
        plans.len()
    );
}

#[test]
fn slice_covers_all_pairs() {
    let s = cases::slice();
    for c in &s {
        assert!(c.is_valid(), "{c}");
    }
    let (vals, pairs) = cases::coverage(&s);
    println!(
        "default slice: {} cases; uncovered values {:?}; uncovered possible pairs {}",
        s.len(),
        vals,
        pairs.len()
    );
    assert!(vals.is_empty(), "values never used: {vals:?}");
    assert!(pairs.is_empty(), "pairs never used: {pairs:?}");
    // Every (robustness, addressing, op, type) combination that is valid is in the slice.
    let mut four = HashSet::new();
    for c in &s {
        four.insert((c.robustness, c.addressing, c.op, c.ty));
    }
    assert_eq!(four.len(), 2 * 7 * (11 + 9 + 9), "4-way combinations");
    let mut five = HashSet::new();
    for c in &s {
        five.insert((c.robustness, c.addressing, c.op, c.ty, c.comps));
    }
    assert_eq!(
        five.len(),
        4 * 2 * 7 * (11 + 9 + 9),
        "5-way combinations (with comps)"
    );
    let f = cases::full_sweep();
    println!("full sweep: {} cases", f.len());
    for c in &f {
        assert!(c.is_valid(), "{c}");
    }
}

#[test]
fn conformance_matrix() {
    let cs = selected();
    let summary = run::run_cases(&cs, threads())
        .unwrap_or_else(|e| panic!("cannot create the Vulkan context: {e}"));
    println!(
        "conformance matrix ({}): {} cases run, {} passed, {} failed, {:.1} s",
        sweep::mode(),
        summary.run,
        summary.passed,
        summary.failures.len(),
        summary.seconds
    );
    for f in &summary.failures {
        println!("{f}\n");
    }
    assert_eq!(
        summary.passed,
        summary.run,
        "{} of {} cases failed (descriptions above)",
        summary.run - summary.passed,
        summary.run
    );
}

/// The matrix with `debug_target=core`: the layer rewrites as if lavapipe had no 8/16-bit
/// storage, so 8/16-bit accesses go through the word view (sub-word stores as atomic and/or
/// pairs) and bounds are word-granular; the expected results come from the model with
/// `word_granular` bounds. Every case of the selection runs (the default slice takes about as
/// long as `conformance_matrix`).
#[test]
fn conformance_matrix_core_target() {
    let cs = selected();
    let summary = run::run_cases_for(&cs, threads(), run::RewriteTarget::Core)
        .unwrap_or_else(|e| panic!("cannot create the Vulkan context: {e}"));
    let word_granular = cs
        .iter()
        .filter(|c| c.robustness != polyfill_e2e::matrix::model::Robustness::None)
        .count();
    println!(
        "conformance matrix, debug_target=core ({}): {} cases run, {} passed, {} failed, {:.1} s \
         ({word_granular} with word-granular robustness checks; {} passed cases have {} bytes not compared: \
         unchecked 8/16-bit accesses to the last partial word of a range, undefined without 8/16-bit storage)",
        sweep::mode(),
        summary.run,
        summary.passed,
        summary.failures.len(),
        summary.seconds,
        summary.cases_with_undefined,
        summary.undefined_bytes
    );
    for f in &summary.failures {
        println!("{f}\n");
    }
    assert_eq!(
        summary.passed,
        summary.run,
        "{} of {} cases failed under debug_target=core (descriptions above)",
        summary.run - summary.passed,
        summary.run
    );
}

/// The cases on physical bases (`Psb`, `PsbScalar`) with buffer device addresses emulated
/// (`buffer_device_address=force`): the raw chain becomes address arithmetic and the access
/// goes through the layer's descriptor table, with the shader's own checks where the case sets
/// the poison byte (else bounds left to the driver's robustBufferAccess2). Under
/// `debug_target=core` the last 1–3 bytes of a range that is not whole words are out of the
/// emulation's reach (README, "How buffer device addresses are emulated"), so only the device
/// target runs here.
#[test]
fn conformance_matrix_emulated_addresses() {
    let cs: Vec<Case> = selected().into_iter().filter(|c| c.addressing.is_psb()).collect();
    let summary = run::run_cases_for(&cs, threads(), run::RewriteTarget::EmulatedAddresses)
        .unwrap_or_else(|e| panic!("cannot create the Vulkan context: {e}"));
    println!(
        "conformance matrix, buffer_device_address=force ({}): {} cases on physical bases run, {} passed, {:.1} s",
        sweep::mode(),
        summary.run,
        summary.passed,
        summary.seconds
    );
    for f in &summary.failures {
        println!("{f}\n");
    }
    assert_eq!(summary.passed, summary.run, "{} of {} cases failed with addresses emulated (descriptions above)", summary.run - summary.passed, summary.run);
}

/// Per-component vectors straddling the end of their range ([`cases::straddling`]): every type,
/// 2–4 components, loads and stores, with the device and the core rewrite targets.
#[test]
fn per_component_vectors_straddling_the_end() {
    let cs = cases::straddling();
    for target in [run::RewriteTarget::Device, run::RewriteTarget::Core] {
        let summary = run::run_cases_for(&cs, threads(), target)
            .unwrap_or_else(|e| panic!("cannot create the Vulkan context: {e}"));
        println!(
            "straddling per-component vectors ({target:?}): {} cases run, {} passed, {:.1} s",
            summary.run, summary.passed, summary.seconds
        );
        for f in &summary.failures {
            println!("{f}\n");
        }
        assert_eq!(summary.passed, summary.run, "{} of {} straddling cases failed ({target:?}, descriptions above)", summary.run - summary.passed, summary.run);
    }
}

/// Driver probe (no layer): `OpArrayLength` of a `NonUniform`-indexed runtime descriptor array
/// element. The layer's bounds checks rely on it giving each invocation its own descriptor's
/// length. Prints what the driver returns (informational: it never fails). Mesa 25.0 lavapipe
/// returns the first lane's length for the whole 8-wide SIMD group, so the layer must not rely
/// on it (e.g. a subgroup waterfall loop around the query).
#[test]
fn driver_probe_nonuniform_array_length() {
    let asm = Module::compute(32)
        .spirv(5)
        .cap("StorageBuffer8BitAccess")
        .cap("RuntimeDescriptorArray")
        .cap("ShaderNonUniform")
        .cap("StorageBufferArrayNonUniformIndexing")
        .gid()
        .block("B", "%u8", 1)
        .decorate("OpDecorate %arr DescriptorSet 0\nOpDecorate %arr Binding 0\nOpDecorate %sel NonUniform\nOpDecorate %p NonUniform\nOpDecorate %len NonUniform")
        .globals("%rtaB = OpTypeRuntimeArray %B\n%ps_B = OpTypePointer StorageBuffer %B\n%parr = OpTypePointer StorageBuffer %rtaB\n%arr = OpVariable %parr StorageBuffer")
        .ssbo("out", "%u32", 4, 0, 2)
        .main(
            "%gp = OpAccessChain %pin_u32 %gid %c0
%g = OpLoad %u32 %gp
%sel = OpUMod %u32 %g %c3
%p = OpAccessChain %ps_B %arr %sel
%len = OpArrayLength %u32 %p 0
%op = OpAccessChain %ps_u32 %out %c0 %g
OpStore %op %len",
        )
        .text();
    let words = polyfill_e2e::spirv_as(&asm, "vulkan1.2").unwrap();
    polyfill_e2e::spirv_val(&words, "vulkan1.2").unwrap();
    let ctx = polyfill_e2e::Context::new(&polyfill_e2e::ContextOptions::native())
        .expect("native context");
    let lens = [44u64, 32, 20];
    let mut buffers: Vec<polyfill_e2e::BufferSpec> = lens
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            polyfill_e2e::BufferSpec::storage(0, vec![0; 64])
                .element(i as u32)
                .window(0, Some(l))
        })
        .collect();
    buffers.push(polyfill_e2e::BufferSpec::storage(2, vec![0; 128 * 4]));
    let job = polyfill_e2e::ComputeJob {
        heap: None,
        buffers,
        push_constants: vec![],
        groups: [4, 1, 1],
        entry: "main",
    };
    let out = ctx.run_compute(&words, &job).expect("dispatch");
    let got = polyfill_e2e::bytes::to_u32s(&out[3]);
    let wrong: Vec<(usize, u32, u64)> = got
        .iter()
        .enumerate()
        .filter(|(g, &v)| v as u64 != lens[g % 3])
        .map(|(g, &v)| (g, v, lens[g % 3]))
        .collect();
    if wrong.is_empty() {
        println!("driver OK: OpArrayLength honours a NonUniform descriptor index");
    } else {
        // A driver bug, not ours: report it (the layer must not rely on this query).
        println!(
            "DRIVER BUG ({}): OpArrayLength of a NonUniform-indexed descriptor is wrong for {} of 128 invocations \
             (gid, got, expected): {:?}",
            ctx.device_name(),
            wrong.len(),
            &wrong[..wrong.len().min(16)]
        );
    }
}
