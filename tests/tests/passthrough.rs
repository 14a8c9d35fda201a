//! Modules and commands the layer has no business with go straight to the driver.

use polyfill_e2e::child;
use polyfill_e2e::layer;
use polyfill_e2e::vk::shared_layer_context;
use polyfill_e2e::{samples, Context, ContextOptions};

#[test]
fn plain_compute_through_layer() {
    let ctx = shared_layer_context();
    samples::plain().run_checked(ctx).unwrap();
}

#[test]
fn plain_compute_same_with_and_without_layer() {
    let s = samples::plain();
    let words = s.assemble().unwrap();
    let native = Context::new(&ContextOptions::native()).unwrap();
    let a = native.run_compute(&words, &s.job).unwrap();
    let b = shared_layer_context().run_compute(&words, &s.job).unwrap();
    assert_eq!(a, b);
}

#[test]
fn unneeded_commands_not_intercepted() {
    let ctx = shared_layer_context();
    let lib = layer::library_path();
    for name in ["vkCmdDispatch", "vkCmdBindPipeline", "vkCmdCopyBuffer", "vkCmdPipelineBarrier"] {
        let f = ctx.get_device_proc_addr(name).unwrap_or_else(|| panic!("{name}: NULL"));
        let obj = layer::object_of(f as usize);
        assert!(obj.is_some(), "{name}: dladdr failed");
        assert_ne!(obj.as_deref(), Some(lib.as_path()), "{name} is intercepted by the layer (should return the next pointer)");
    }
    let f = ctx.get_device_proc_addr("vkCreateShaderModule").expect("vkCreateShaderModule: NULL");
    assert_eq!(layer::object_of(f as usize).as_deref(), Some(lib.as_path()), "vkCreateShaderModule must be the layer's");
}

/// A module without RawAccessChainsNV is not rewritten (nothing dumped) and works.
#[test]
fn plain_module_not_dumped() {
    const NAME: &str = "plain_module_not_dumped";
    if child::is_child(NAME) {
        let ctx = Context::new(&ContextOptions::raw_access_chains()).unwrap();
        samples::plain().run_checked(&ctx).unwrap();
        return;
    }
    let dir = child::temp_dir("dump-plain");
    let dump = dir.join("dumps");
    std::fs::create_dir_all(&dump).unwrap();
    let log = dir.join("layer.log");
    child::spawn(
        NAME,
        &[
            (&layer::env_var_name("dump_shaders_dir"), dump.to_str().unwrap()),
            (&layer::env_var_name("log_file"), log.to_str().unwrap()),
            (&layer::env_var_name("log_level"), "debug"),
        ],
        None,
    )
    .assert_success();
    let files: Vec<_> = std::fs::read_dir(&dump).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(files.is_empty(), "plain module was dumped: {files:?}");
    let text = child::read_log(&log);
    assert!(!text.contains("ERROR"), "errors logged for a plain module:\n{text}");
}
