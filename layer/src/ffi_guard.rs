//! Panic firewall: every exported or hooked function body runs inside [`guard`]. Unwinding out
//! of an `extern "system"` function aborts the process (Rust >= 1.81), so a bug in the layer
//! becomes a logged error and an error `VkResult` instead of taking the application down.
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `body`; on panic logs `hook` + the panic message and returns `on_panic`.
/// The message scope (crate::messages) is restored when the hook returns: what the hook's handle
/// lookups entered concerns this call only.
pub fn guard<R: std::fmt::Debug>(hook: &'static str, on_panic: R, body: impl FnOnce() -> R) -> R {
    let scope = crate::messages::save();
    let r = match catch_unwind(AssertUnwindSafe(|| {
        maybe_inject_panic(hook);
        body()
    })) {
        Ok(r) => r,
        Err(payload) => {
            crate::log_error!(INTERNAL_ERROR, "{hook}: internal error (panic: {}); returning {on_panic:?}", panic_message(&payload));
            on_panic
        }
    };
    crate::messages::restore(scope);
    r
}

/// Setting `debug_inject_panic=<hook name>` makes that hook panic, to prove the guard works.
/// Every hook passes here: without the setting this is one relaxed atomic load.
fn maybe_inject_panic(hook: &str) {
    if !crate::settings::panic_injection_armed() {
        return;
    }
    let settings = crate::settings::current();
    if settings.debug_inject_panic.as_deref() == Some(hook) {
        panic!("debug_inject_panic: deliberate panic in {hook}");
    }
}

fn panic_message(payload: &Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk;

    #[test]
    fn panic_becomes_error_result() {
        let r = guard("test_hook", vk::Result::ERROR_UNKNOWN, || -> vk::Result { panic!("boom") });
        assert_eq!(r, vk::Result::ERROR_UNKNOWN);
        let r = guard("test_hook", vk::Result::ERROR_UNKNOWN, || vk::Result::SUCCESS);
        assert_eq!(r, vk::Result::SUCCESS);
        guard("test_void", (), || panic!("void hooks just log"));
    }
}
