//! `debug_inject_panic=<hook>` makes that hook panic on purpose: the layer must catch it, log
//! it, and return an error — the application keeps running.

use polyfill_e2e::child;
use polyfill_e2e::layer::env_var_name;
use polyfill_e2e::{samples, Context, ContextOptions};

#[test]
fn panic_in_create_shader_module_becomes_error() {
    const NAME: &str = "panic_in_create_shader_module_becomes_error";
    let child_body = || {
        let ctx = Context::new(&ContextOptions::raw_access_chains()).unwrap();
        for s in [samples::plain(), samples::byte_address(None), samples::plain()] {
            let words = s.assemble().unwrap();
            match ctx.create_shader_module(&words) {
                Ok(_) => panic!("{}: vkCreateShaderModule succeeded despite debug_inject_panic", s.name),
                Err(e) => eprintln!("{}: vkCreateShaderModule -> {e}", s.name),
            }
        }
        // Still alive and usable.
        assert!(ctx.has_device_extension(polyfill_e2e::vk::RAW_ACCESS_CHAINS_EXT));
    };
    if child::run_child(NAME, child_body) {
        return;
    }
    let (out, text) = child::spawn_logged(NAME, "panic", &[(&env_var_name("debug_inject_panic"), "vkCreateShaderModule")]);
    out.assert_completed();
    assert!(text.contains("[polyfill]"), "nothing logged:\n{text}\nstderr:\n{}", out.stderr);
    let lower = text.to_lowercase();
    assert!(lower.contains("panic"), "log does not mention the panic:\n{text}");
    assert!(text.contains("vkCreateShaderModule"), "log does not name the hook:\n{text}");
}

/// Without the setting nothing panics (control).
#[test]
fn no_panic_without_setting() {
    let ctx = polyfill_e2e::vk::shared_layer_context();
    let m = ctx.create_shader_module(&samples::plain().assemble().unwrap()).unwrap();
    ctx.destroy_shader_module(m);
}
