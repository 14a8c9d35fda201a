//! Log file and shader dumps for a module the layer rewrites.

use polyfill_e2e::child;
use polyfill_e2e::layer::env_var_name;
use polyfill_e2e::tools::{self, bytes_to_words, has_capability, CAP_RAW_ACCESS_CHAINS_NV};
use polyfill_e2e::{samples, Context, ContextOptions};

#[test]
fn rewritten_module_is_dumped_and_logged() {
    const NAME: &str = "rewritten_module_is_dumped_and_logged";
    if child::is_child(NAME) {
        let ctx = Context::new(&ContextOptions::raw_access_chains()).unwrap();
        for s in [samples::structured(None), samples::plain()] {
            let m = ctx.create_shader_module(&s.assemble().unwrap()).unwrap_or_else(|e| panic!("{}: vkCreateShaderModule: {e}", s.name));
            ctx.destroy_shader_module(m);
        }
        return;
    }
    let dump = child::temp_dir("dumps");
    let (_, text) = child::spawn_logged(NAME, "dumps-log", &[(&env_var_name("dump_shaders_dir"), dump.to_str().unwrap()), (&env_var_name("log_level"), "info")]);
    assert!(text.contains("[polyfill]"), "no log lines:\n{text}");

    let mut names: Vec<String> = std::fs::read_dir(&dump).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names.len(), 2, "expected one before/after pair (plain module not dumped), got {names:?}");
    let hash = names[0].strip_suffix(".after.spv").expect("<hash>.after.spv");
    assert_eq!(names[1], format!("{hash}.before.spv"));

    let original = samples::structured(None).assemble().unwrap();
    let before = bytes_to_words(&std::fs::read(dump.join(&names[1])).unwrap());
    assert_eq!(before, original, "before.spv is not the application's module");
    let after = bytes_to_words(&std::fs::read(dump.join(&names[0])).unwrap());
    assert!(!has_capability(&after, CAP_RAW_ACCESS_CHAINS_NV), "after.spv still declares RawAccessChainsNV");
    tools::spirv_val(&after, "vulkan1.1").unwrap_or_else(|e| panic!("after.spv: {e}"));
}

/// A module that declares RawAccessChainsNV but cannot be rewritten (here: truncated, the last
/// instruction cut short) gets an error result and a logged reason — never a crash, never a
/// module handed to the driver. The device keeps working afterwards.
#[test]
fn unrewritable_module_fails_cleanly() {
    const NAME: &str = "unrewritable_module_fails_cleanly";
    if child::is_child(NAME) {
        let ctx = Context::new(&ContextOptions::raw_access_chains()).unwrap();
        let mut words = samples::structured(None).assemble().unwrap();
        // Drop OpFunctionEnd, OpReturn and the last word of the final OpStore: the word stream
        // ends inside an instruction.
        words.truncate(words.len() - 3);
        match ctx.create_shader_module(&words) {
            Ok(_) => panic!("a truncated module was accepted"),
            Err(e) => println!("CREATE-ERROR {e:?}"),
        }
        samples::plain().run_checked(&ctx).unwrap();
        return;
    }
    let (out, text) = child::spawn_logged(NAME, "unrewritable", &[]);
    assert!(out.stdout.contains("CREATE-ERROR"), "{}", out.stdout);
    assert!(text.contains("[polyfill] ERROR"), "no error logged (default log_level is error):\n{text}");
}

/// The same code three times on one device (rewrite_cache_mb, layer/src/rewrite_cache.rs): one
/// rewrite, then two repeats from the cache, and each pipeline still computes what the CPU
/// says; with the cache off (0), three rewrites. Another module in between does not disturb it.
#[test]
fn repeated_code_is_rewritten_once() {
    const NAME: &str = "repeated_code_is_rewritten_once";
    if child::is_child(NAME) {
        let ctx = Context::new(&ContextOptions::raw_access_chains()).unwrap();
        let (a, b) = (samples::structured(None), samples::float4_aligned16());
        for s in [&a, &b, &a, &a] {
            s.run_checked(&ctx).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        }
        return;
    }
    let count = |text: &str, what: &str| text.lines().filter(|l| l.contains("rewrote module") && l.contains(what)).count();
    let hash = shader_rewrite::module_hash(&samples::structured(None).assemble().unwrap());
    for (cache, fresh, cached) in [(None, 1, 2), (Some("0"), 3, 0)] {
        let env: Vec<(String, &str)> = [(env_var_name("log_level"), "info")].into_iter().chain(cache.map(|v| (env_var_name("rewrite_cache_mb"), v))).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let (_, text) = child::spawn_logged(NAME, "rewrite-cache", &env);
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(&format!("rewrote module {hash} "))).collect();
        assert_eq!(lines.len(), 3, "rewrite_cache_mb={cache:?}: three creations of module {hash}:\n{text}");
        assert_eq!(lines.iter().filter(|l| !l.contains("(from the rewrite cache)")).count(), fresh, "rewrite_cache_mb={cache:?}:\n{text}");
        assert_eq!(lines.iter().filter(|l| l.contains("(from the rewrite cache)")).count(), cached, "rewrite_cache_mb={cache:?}:\n{text}");
        assert_eq!(count(&text, "(from the rewrite cache)"), cached, "only module {hash} repeats:\n{text}");
    }
}
