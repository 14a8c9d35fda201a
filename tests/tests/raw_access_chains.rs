//! OpRawAccessChainNV compute shaders on lavapipe through the layer, checked against the CPU.

use polyfill_e2e::child;
use polyfill_e2e::layer::env_var_name;
use polyfill_e2e::samples::{self, Sample};
use polyfill_e2e::vk::shared_layer_context;
use polyfill_e2e::{Context, ContextOptions};

fn run(s: Sample) {
    let ctx = shared_layer_context();
    if s.needs_16bit && !(ctx.features().shader_int16 && ctx.features().storage_buffer_16bit) {
        eprintln!("{}: device lacks 16-bit storage; skipped", s.name);
        return;
    }
    let words = s.assemble().unwrap();
    let out = ctx.run_compute(&words, &s.job).unwrap_or_else(|e| panic!("{}: {e}", s.name));
    s.check(&out).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn byte_address_per_component() {
    run(samples::byte_address(None));
}

#[test]
fn structured_per_element_range_ends_mid_element() {
    run(samples::structured(None));
}

#[test]
fn float4_aligned16_per_element() {
    run(samples::float4_aligned16());
}

#[test]
fn sub_word_16bit_per_component() {
    run(samples::sub_word_16bit(None));
}

/// A raw chain in a loop header (a loop of blocks, and a one-block loop), with the driver's
/// checks (the device target) and with the lowering's own (`debug_target=core`: the header is
/// split around the branching check).
#[test]
fn load_in_a_loop_header() {
    let core = Context::new(&ContextOptions::raw_access_chains().setting("debug_target", "core")).unwrap();
    for single_block in [false, true] {
        run(samples::loop_header_scan(single_block));
        samples::loop_header_scan(single_block).run_checked(&core).unwrap_or_else(|e| panic!("core target: {e}"));
    }
}

/// A raw chain between an OpSampledImage and the sample that uses it
/// (`bindless::cases::raw_chain_between_sampled_image_and_use`), with the driver's checks and
/// with the lowering's own (`debug_target=core`: the block is split there and the sampled image
/// made again in the piece that uses it).
#[test]
fn load_between_a_sampled_image_and_its_use() {
    for target in ["device", "core"] {
        let ctx = Context::new(&ContextOptions::raw_access_chains().setting("debug_target", target)).unwrap();
        polyfill_e2e::bindless::cases::raw_chain_between_sampled_image_and_use(&ctx).unwrap_or_else(|e| panic!("{target}: {e}"));
    }
}

#[test]
fn module_creation_succeeds() {
    let ctx = shared_layer_context();
    for s in samples::raw_access_chain_samples(None) {
        let m = ctx.create_shader_module(&s.assemble().unwrap()).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        ctx.destroy_shader_module(m);
    }
}

/// `debug_oob_poison=0xAB`: out-of-bounds loads the *layer* catches read 0xABAB...
#[test]
fn oob_poison_is_observable() {
    const NAME: &str = "oob_poison_is_observable";
    if child::is_child(NAME) {
        let ctx = Context::new(&ContextOptions::raw_access_chains()).unwrap();
        let mut failures = Vec::new();
        for s in [samples::byte_address(Some(0xAB)), samples::structured(Some(0xAB)), samples::sub_word_16bit(Some(0xAB))] {
            match ctx.run_compute(&s.assemble().unwrap(), &s.job) {
                Err(e) => failures.push(format!("{}: {e}", s.name)),
                Ok(out) => {
                    if let Err(e) = s.check(&out) {
                        failures.push(e)
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        return;
    }
    child::spawn(NAME, &[(&env_var_name("debug_oob_poison"), "0xAB")], None).assert_success();
}

/// Where the device checks storage buffers as robustBufferAccess2 says, to the byte, with no
/// robustness feature enabled (lavapipe), per-component accesses made of one access per
/// component are left unchecked (the sample's vec2 load, Aligned 4: no OpArrayLength; its store,
/// Aligned 8, keeps the whole-vector check and its edge path leaves each component to the
/// driver), and the outputs still match the spec's per-component model. An application that
/// enables pipelineRobustness (a pipeline may opt out) or robustBufferAccess alone,
/// `debug_target=core` and a poison byte keep the lowering's own checks; the device log says
/// which.
#[test]
fn per_component_checks_follow_the_devices_robustness() {
    const NAME: &str = "per_component_checks_follow_the_devices_robustness";
    let (by_driver, vectors_by_driver) = polyfill_e2e::vk::storage_robustness_per_component();
    if child::is_child(NAME) {
        // The store's uvec2 (Aligned 8) keeps its whole-vector check unless the driver checks
        // each component of a vector access (lavapipe).
        let device_lengths = if vectors_by_driver { 0 } else if by_driver { 1 } else { 3 };
        for (what, o, poison, array_lengths) in [
            ("device", ContextOptions::raw_access_chains(), None, device_lengths),
            ("pipelineRobustness", ContextOptions::raw_access_chains().pipeline_robustness(true), None, 3),
            // robustBufferAccess alone: the device's default no longer applies, and
            // robustBufferAccess may read any value of the buffer for an access outside it.
            ("robustBufferAccess", ContextOptions { robust_buffer_access: true, ..ContextOptions::raw_access_chains() }, None, 3),
            ("core", ContextOptions::raw_access_chains().setting("debug_target", "core"), None, 3),
            ("poison", ContextOptions::raw_access_chains().setting("debug_oob_poison", "0xAB"), Some(0xAB), 3),
        ] {
            let s = samples::byte_address(poison);
            let (out, words) = polyfill_e2e::rewritten::run_rewritten(&format!("{NAME}-{what}"), &s.assemble().unwrap(), &s.job, o);
            s.check(&out).unwrap_or_else(|e| panic!("{what}: {e}"));
            let text = polyfill_e2e::tools::spirv_dis(&words);
            assert_eq!(text.matches("OpArrayLength").count(), array_lengths, "{what}: OpArrayLength\n{text}");
        }
        return;
    }
    let (_, text) = child::spawn_logged(NAME, "per_component_log", &[(&env_var_name("log_level"), "info")]);
    let said = text.matches("per-component raw-chain accesses made of one access per component leave their checks to it").count();
    assert_eq!(said, by_driver as usize, "{text}");
    let said = text.matches("the driver checks each component of a vector access on its own").count();
    assert_eq!(said, vectors_by_driver as usize, "{text}");
}

/// Control: without the layer, lavapipe cannot run these modules (so the tests above really
/// exercise the layer). Runs in a child: the driver may abort on the unknown capability.
#[test]
fn driver_alone_rejects_raw_chains() {
    const NAME: &str = "driver_alone_rejects_raw_chains";
    if child::is_child(NAME) {
        let ctx = Context::new(&ContextOptions::native()).unwrap();
        let s = samples::structured(None);
        match ctx.run_compute(&s.assemble().unwrap(), &s.job) {
            Ok(out) => println!("NATIVE-RAN match={}", s.check(&out).is_ok()),
            Err(e) => println!("NATIVE-ERROR {e}"),
        }
        return;
    }
    let out = child::spawn(NAME, &[], None);
    assert!(
        !out.success() || out.stdout.contains("NATIVE-ERROR") || out.stdout.contains("NATIVE-RAN match=false"),
        "lavapipe ran a raw-access-chain module correctly without the layer?\n{}",
        out.stdout
    );
}
