//! VK_LAYER_KHRONOS_validation placed below our layer sees only valid usage.

use polyfill_e2e::ash::vk;
use polyfill_e2e::{samples, Context, ContextOptions};

fn layer_with_validation() -> Context {
    Context::new(&ContextOptions::raw_access_chains().validation(true)).unwrap_or_else(|e| panic!("{e}"))
}

/// Control: the message collection works (an invalid call is reported).
#[test]
fn validation_reports_errors() {
    let ctx = Context::new(&ContextOptions::native().validation(true)).unwrap();
    let info = vk::BufferCreateInfo::default().size(0).usage(vk::BufferUsageFlags::STORAGE_BUFFER);
    if let Ok(b) = unsafe { ctx.device().create_buffer(&info, None) } {
        unsafe { ctx.device().destroy_buffer(b, None) };
    }
    assert!(!ctx.validation_errors().is_empty(), "a zero-size buffer was not reported");
}

#[test]
fn plain_dispatch_through_layer_is_clean() {
    let ctx = layer_with_validation();
    samples::plain().run_checked(&ctx).unwrap();
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}

#[test]
fn raw_chain_dispatches_through_layer_are_clean() {
    let ctx = layer_with_validation();
    let mut failures = Vec::new();
    for s in samples::raw_access_chain_samples(None) {
        ctx.clear_validation_messages();
        match ctx.run_compute(&s.assemble().unwrap(), &s.job) {
            Err(e) => failures.push(format!("{}: {e}", s.name)),
            Ok(out) => {
                if let Err(e) = s.check(&out) {
                    failures.push(e);
                }
            }
        }
        let errs = ctx.validation_errors();
        if !errs.is_empty() {
            failures.push(format!("{}: validation errors:\n  {}", s.name, errs.join("\n  ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
