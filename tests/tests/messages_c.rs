//! The layer's messages heard by a real C program (real-program tier): `examples/c/messages.c`,
//! built with `cc -std=c99 -Wall -Wextra -Werror ... -lvulkan`, run with the layer enabled by
//! `VK_INSTANCE_LAYERS` (own process group, timeout, scrubbed environment: crate::programs).
//! The program registers debug-utils messengers (one chained in `VkInstanceCreateInfo`, one for
//! everything, three whose masks exclude the layer's messages) and debug-report callbacks, sets
//! `log_level` / `duplicate_message_limit` through `VkLayerSettingsCreateInfoEXT` without
//! enabling the `VK_EXT_layer_settings` name, lists the tools, creates a good raw-chain module
//! and 12 truncated ones, and checks what arrives (its header comment lists the checks). Here:
//! every setting combination, and the validation layer below the layer.
//!
//! The validation layer of Debian 12 (1.3.239, like every one before header 1.3.272) does not
//! know `VkLayerSettingsCreateInfoEXT` and reports the application's structure as
//! `VUID-VkInstanceCreateInfo-pNext-pNext` (control below, without this layer). The layer takes
//! a structure that carries only its own settings out of the chain it hands down, so below the
//! layer the validation layer reports nothing, whether the settings come from the environment
//! or from the structure.

use polyfill_e2e::child::temp_dir;
use polyfill_e2e::layer::{self, env_var_name};
use polyfill_e2e::programs::{run, validation_errors, validation_logging, CExample, Env, Run};
use std::sync::OnceLock;

/// `messageIdNumber` of a `pMessageIdName`: FNV-1a 32, computed here independently of the
/// layer and of the C program.
fn fnv1a32(name: &str) -> i32 {
    name.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ b as u32).wrapping_mul(0x0100_0193)) as i32
}

fn program() -> &'static CExample {
    static P: OnceLock<CExample> = OnceLock::new();
    P.get_or_init(|| CExample::build("messages"))
}

const POLYFILL: &str = layer::LAYER_NAME;
const VALIDATION: &str = layer::VALIDATION_LAYER_NAME;

/// A finished run and, when the validation layer was loaded, its errors.
struct Case {
    run: Run,
    validation_errors: Vec<String>,
}

/// Runs the program with `args`, `env` and the layers `layers` (logging the validation layer's
/// messages when it is among them).
fn run_messages(name: &str, args: &[&str], env: Env, layers: &[&str]) -> Result<Case, String> {
    let p = program();
    let dir = temp_dir("messages-c-case");
    let mut env = env.instance_layers(layers);
    let log = layers.contains(&VALIDATION).then(|| {
        let (e, log) = validation_logging(env.clone(), &dir);
        env = e;
        log
    });
    let mut argv = vec![p.exe.to_str().unwrap()];
    argv.extend(args);
    argv.push(p.spv.to_str().unwrap());
    let run = run(name, &argv, &env, &dir);
    let validation_errors = match &log {
        Some(log) => validation_errors(&run, log)?,
        None => Vec::new(),
    };
    Ok(Case { run, validation_errors })
}

/// The program passed all its checks and printed `lines`.
fn passed(c: &Case, lines: &[String]) -> Result<(), String> {
    let r = &c.run;
    if !r.ok() || !r.stdout.contains("messages: all checks passed") {
        return Err(r.describe());
    }
    match lines.iter().find(|l| !r.stdout.contains(l.as_str())) {
        Some(l) => Err(format!("output lacks {l:?}\n{}", r.describe())),
        None => Ok(()),
    }
}

fn no_validation_error(c: &Case) -> Result<(), String> {
    if c.validation_errors.is_empty() {
        Ok(())
    } else {
        Err(format!("validation errors:\n{}\n{}", c.validation_errors.join("\n"), c.run.describe()))
    }
}

/// A validation layer before header 1.3.272 reporting the application's
/// `VkLayerSettingsCreateInfoEXT` (sType 1000496000) as unknown in `VkInstanceCreateInfo`.
fn is_unknown_layer_settings_struct(error: &str) -> bool {
    let header = error
        .split("for version ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|v| v.parse::<u32>().ok());
    error.contains("VUID-VkInstanceCreateInfo-pNext-pNext")
        && error.contains("unknown VkStructureType (1000496000)")
        && header.is_some_and(|h| h < 272)
}

/// What `--level info --limit 3` prints (besides the program's own checks).
fn info_limit_3_lines() -> Vec<String> {
    vec![
        "layer-active at vkCreateInstance: 1 (debug utils), 1 (debug report)".into(),
        "shader-rewritten: 1".into(),
        format!("messageIdNumber {}", fnv1a32("POLYFILL-shader-refused")),
        "device: 0x".into(),
        "'messages-device'".into(),
        "module: 0x0 'module ".into(),
        "shader-refused delivered: 3 of 12 (duplicate_message_limit 3)".into(),
        "last: ".into(),
        "chained channels during vkDestroyInstance: 0".into(),
    ]
}

/// Both tool lists end with the layer's entry (the program checks it is there once).
fn tools_end_with_the_layer(c: &Case) -> Result<(), String> {
    for command in ["tool ", "tool (EXT alias) "] {
        let last = c.run.stdout.lines().rfind(|l| l.strip_prefix(command).is_some_and(|n| n.starts_with(|d: char| d.is_ascii_digit())));
        let ours = format!("vkpolyfill {} (layer '{POLYFILL}', purposes 0x18)", env!("CARGO_PKG_VERSION"));
        if !last.is_some_and(|l| l.contains(&ours)) {
            return Err(format!("{command}: the last tool is not the layer: {last:?}\n{}", c.run.describe()));
        }
    }
    Ok(())
}

/// `--level info --limit 3` through `VkLayerSettingsCreateInfoEXT`: the layer's messages, INFO
/// included, a limit of 3 (the last says so), tooling info, debug names.
#[test]
fn c_program_hears_the_layer() {
    let c = run_messages("--level info --limit 3", &["--level", "info", "--limit", "3"], Env::default(), &[POLYFILL]).unwrap_or_else(|e| panic!("{e}"));
    passed(&c, &info_limit_3_lines()).and_then(|_| tools_end_with_the_layer(&c)).unwrap_or_else(|e| panic!("{e}"));
}

/// The same with the validation layer below: no validation error, with the settings from the
/// environment or from the structure (which the layer takes out of the chain it hands down);
/// without this layer the old validation layer complains about the structure (control). The validation layer lists itself
/// among the tools (1.3.239: for the EXT alias only) before the layer.
#[test]
fn c_program_with_validation_below() {
    let args = ["--level", "info", "--limit", "3"];
    let env = Env::default().set(&env_var_name("log_level"), "info").set(&env_var_name("duplicate_message_limit"), "3");
    let mut failures = Vec::new();
    let c = run_messages("validation below, settings from the environment", &[&args[..], &["--no-settings-struct"]].concat(), env, &[POLYFILL, VALIDATION]);
    failures.extend(c.and_then(|c| {
        passed(&c, &info_limit_3_lines())?;
        tools_end_with_the_layer(&c)?;
        if !c.run.stdout.lines().any(|l| l.starts_with("tool") && l.contains(&format!("(layer '{VALIDATION}'"))) {
            return Err(format!("the validation layer's tool entry is missing\n{}", c.run.describe()));
        }
        no_validation_error(&c)
    }).err());

    // The layer takes its own settings structure out of the chain it hands down: nothing to
    // complain about below it.
    let c = run_messages("validation below, settings chained", &args, Env::default(), &[POLYFILL, VALIDATION]);
    failures.extend(c.and_then(|c| {
        passed(&c, &info_limit_3_lines())?;
        no_validation_error(&c)
    }).err());

    // Control: the validation layer alone says the same of the structure (the program then
    // fails: no VK_NV_raw_access_chains without the layer).
    let c = run_messages("validation alone, settings chained (control)", &args, Env::default(), &[VALIDATION]);
    failures.extend(c.and_then(|c| {
        let unknown = c.validation_errors.iter().filter(|e| is_unknown_layer_settings_struct(e)).count();
        let old_validation_layer = c.validation_errors.iter().any(|e| e.contains("unknown VkStructureType (1000496000)"));
        match (c.run.status, old_validation_layer, unknown) {
            (Some(1), false, _) => Ok(()),
            (Some(1), true, n) if n == c.validation_errors.len() => Ok(()),
            _ => Err(format!("control: {:?}\n{}", c.validation_errors, c.run.describe())),
        }
    }).err());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The defaults: no INFO message (log_level warn), the refusal still arrives, 10 of 12 (the
/// default duplicate_message_limit); `--level info` alone: 10 of 12 with the rewrite; `--level
/// debug --limit 0`: all 12, and the chained messenger hears vkDestroyInstance.
#[test]
fn c_program_with_default_and_unlimited_settings() {
    let cases: [(&str, &[&str], &[&str]); 3] = [
        ("no settings", &[], &["layer-active at vkCreateInstance: 0", "shader-rewritten: 0", "shader-refused delivered: 10 of 12 (duplicate_message_limit 10)"]),
        ("--level info", &["--level", "info"], &["layer-active at vkCreateInstance: 1", "shader-rewritten: 1", "shader-refused delivered: 10 of 12"]),
        ("--level debug --limit 0", &["--level", "debug", "--limit", "0"], &["shader-refused delivered: 12 of 12 (duplicate_message_limit 0)"]),
    ];
    let mut failures = Vec::new();
    for (name, args, want) in cases {
        let checked = run_messages(name, args, Env::default(), &[POLYFILL]).and_then(|c| {
            passed(&c, &want.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
            if args.contains(&"debug") && c.run.stdout.contains("chained channels during vkDestroyInstance: 0") {
                return Err(format!("the chained messenger did not hear vkDestroyInstance\n{}", c.run.describe()));
            }
            Ok(())
        });
        failures.extend(checked.err());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Control: without the layer the program fails (no device has VK_NV_raw_access_chains), so a
/// run that passes did go through the layer.
#[test]
fn c_program_fails_without_the_layer() {
    let p = program();
    let dir = temp_dir("messages-c-native");
    let r = run("without the layer", &[p.exe.to_str().unwrap(), p.spv.to_str().unwrap()], &Env::default(), &dir);
    assert!(!r.timed_out && r.status == Some(1) && r.stderr.contains("is the layer enabled?"), "{}", r.describe());
}
