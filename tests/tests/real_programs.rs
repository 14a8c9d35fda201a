//! Real programs, loading Vulkan the ways users do — not through the harness's `dlopen`:
//!
//! - the layer library itself: no dynamic relocation against a symbol it defines (in a program
//!   linked with `-lvulkan`, libvulkan's exports are global and such a relocation binds the
//!   layer's own `vkGetInstanceProcAddr` to the loader's trampoline: the program hangs in
//!   `vkCreateInstance`), and it exports the loader-interface entry points and nothing else;
//! - `examples/c/raw_chain.c`, compiled here with the system compiler and linked `-lvulkan`: it
//!   reads `shaderRawAccessChains`/`storageInputOutput16`, dispatches an `OpRawAccessChainNV`
//!   shader and checks every output word. Run without the layer, with it enabled by
//!   `VK_INSTANCE_LAYERS`, `VK_LOADER_LAYERS_ENABLE`, `ppEnabledLayerNames` only, and as an
//!   implicit layer installed by `packaging/install-layer.sh --implicit` into a temporary HOME;
//!   with `VK_LAYER_KHRONOS_validation` above and below it; with and without Mesa's
//!   device_select (`NODEVICE_SELECT=1`);
//! - `vkcube` and `vkcubepp` (vulkan-tools) under `xvfb-run`, 30 frames.
//!
//! Every program runs in its own process group under a timeout, so a hang is a failure, never a
//! stuck test run. Each child gets a scrubbed environment (no inherited layer variables, an empty
//! HOME) so only what a case sets decides which layers load.

use polyfill_e2e::child::temp_dir;
use polyfill_e2e::layer;
use polyfill_e2e::programs::{check_validation_log, repo_root, run, validation_logging, CExample, Env, Run};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// What the layer may export: LoaderLayerInterface.md, "Layer Version Negotiation" and the
/// version-0 introspection entry points.
const LOADER_INTERFACE_EXPORTS: [&str; 7] = [
    "vkNegotiateLoaderLayerInterfaceVersion",
    "vkGetInstanceProcAddr",
    "vkGetDeviceProcAddr",
    "vkEnumerateInstanceLayerProperties",
    "vkEnumerateInstanceExtensionProperties",
    "vkEnumerateDeviceLayerProperties",
    "vkEnumerateDeviceExtensionProperties",
];

fn command_output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("cannot run {program} (binutils): {e}"));
    assert!(out.status.success(), "{program} {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn strip_version(sym: &str) -> &str {
    sym.split('@').next().unwrap_or(sym)
}

/// Names of the dynamic symbols the library defines (`nm -D --defined-only`).
fn defined_dynamic_symbols(lib: &Path) -> BTreeSet<String> {
    command_output("nm", &["-D", "--defined-only", &lib.display().to_string()])
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(|s| strip_version(s).to_string())
        .collect()
}

/// (relocation type, symbol) of every dynamic relocation that names a symbol (`readelf -rW`).
fn symbol_relocations(lib: &Path) -> Vec<(String, String)> {
    command_output("readelf", &["-rW", &lib.display().to_string()])
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            match cols.as_slice() {
                [_, _, ty, _, sym, ..] if ty.starts_with("R_") => Some((ty.to_string(), strip_version(sym).to_string())),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn layer_binds_its_own_symbols_and_exports_only_the_loader_interface() {
    let lib = layer::library_path();
    let defined = defined_dynamic_symbols(&lib);
    let expected: BTreeSet<String> = LOADER_INTERFACE_EXPORTS.iter().map(|s| s.to_string()).collect();
    assert_eq!(defined, expected, "{}: exported symbols differ from the loader interface", lib.display());

    let relocs = symbol_relocations(&lib);
    assert!(!relocs.is_empty(), "readelf found no symbol relocations at all in {}: parser broken?", lib.display());
    let interposable: Vec<_> = relocs.iter().filter(|(_, sym)| defined.contains(sym)).collect();
    assert!(
        interposable.is_empty(),
        "{} reaches its own exports through dynamic relocations, which a program linked with -lvulkan \
         binds to libvulkan's symbols of the same name (layer/build.rs must link with -Bsymbolic): {interposable:?}",
        lib.display()
    );
    // The layer never calls libvulkan (only the next-link pointers the loader hands it).
    let needed = command_output("readelf", &["-dW", &lib.display().to_string()]);
    assert!(!needed.contains("libvulkan"), "the layer links libvulkan:\n{needed}");
    assert!(!relocs.iter().any(|(_, s)| s.starts_with("vk")), "the layer imports a vk* symbol: {relocs:?}");
}

/// `examples/c/raw_chain.c` built with `cc ... -lvulkan`, and its shader assembled.
fn c_program() -> &'static CExample {
    static P: OnceLock<CExample> = OnceLock::new();
    P.get_or_init(|| CExample::build("raw_chain"))
}

/// What the C program must print.
enum Expect {
    /// The driver alone: lavapipe lacks the extension and storageInputOutput16.
    Native,
    /// Through the layer: both advertised, the dispatch gives the expected words.
    Emulated,
}

/// Checks a finished run of the C program; `validation_log` is read when validation was on.
fn check_c_run(r: &Run, expect: &Expect, validation_log: Option<&Path>) -> Result<(), String> {
    if !r.ok() {
        return Err(r.describe());
    }
    let want: &[&str] = match expect {
        Expect::Native => &["shaderRawAccessChains: 0", "storageInputOutput16: 0", "raw access chains: unsupported"],
        Expect::Emulated => &["shaderRawAccessChains: 1", "storageInputOutput16: 1", "dispatch: 256 words as expected"],
    };
    if let Some(missing) = want.iter().find(|w| !r.stdout.contains(**w)) {
        return Err(format!("output lacks '{missing}'\n{}", r.describe()));
    }
    validation_log.map_or(Ok(()), |log| check_validation_log(r, log))
}

/// One way of running the C program.
struct CCase {
    name: String,
    env: Env,
    /// `--enable-layer`: the layer named in `ppEnabledLayerNames`.
    enable_in_create_info: bool,
    /// Log the validation layer's messages (it must be in `env`'s layers) and require no error.
    validation: bool,
    /// HOME for the program (an implicit layer installed there), else an empty directory.
    home: Option<PathBuf>,
    expect: Expect,
}

fn case(name: &str, env: Env, expect: Expect) -> CCase {
    CCase { name: name.to_string(), env, enable_in_create_info: false, validation: false, home: None, expect }
}

/// Runs every case with Mesa's device_select (the default) and without it (`NODEVICE_SELECT=1`).
fn run_c_cases(cases: Vec<CCase>) {
    let p = c_program();
    let mut failures = Vec::new();
    for case in &cases {
        for device_select in [true, false] {
            let dir = temp_dir("real-program-case");
            let mut env = case.env.clone();
            let mut name = case.name.clone();
            if !device_select {
                env = env.no_device_select();
                name.push_str(", NODEVICE_SELECT=1");
            }
            let log = case.validation.then(|| {
                let (e, log) = validation_logging(env.clone(), &dir);
                env = e;
                log
            });
            let mut argv = vec![p.exe.to_str().unwrap()];
            if case.enable_in_create_info {
                argv.push("--enable-layer");
            }
            argv.push(p.spv.to_str().unwrap());
            let r = run(&name, &argv, &env, case.home.as_deref().unwrap_or(&dir));
            if let Err(e) = check_c_run(&r, &case.expect, log.as_deref()) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} runs failed:\n{}", failures.len(), 2 * cases.len(), failures.join("\n\n"));
}

const POLYFILL: &str = layer::LAYER_NAME;
const VALIDATION: &str = layer::VALIDATION_LAYER_NAME;

#[test]
fn c_program_linked_with_libvulkan_explicit_layer() {
    let validated = |name: &str, layers: &[&str], expect| CCase { validation: true, ..case(name, Env::default().instance_layers(layers), expect) };
    run_c_cases(vec![
        case("without the layer", Env::default(), Expect::Native),
        validated("validation alone (control)", &[VALIDATION], Expect::Native),
        case("VK_INSTANCE_LAYERS", Env::default().instance_layers(&[POLYFILL]), Expect::Emulated),
        validated("validation below the layer", &[POLYFILL, VALIDATION], Expect::Emulated),
        validated("validation above the layer", &[VALIDATION, POLYFILL], Expect::Emulated),
        case("VK_LOADER_LAYERS_ENABLE", Env::default().layer_path().set("VK_LOADER_LAYERS_ENABLE", "*polyfill*"), Expect::Emulated),
        CCase { enable_in_create_info: true, ..case("ppEnabledLayerNames only", Env::default().layer_path(), Expect::Emulated) },
    ]);
}

/// `packaging/install-layer.sh --implicit` into a temporary HOME: off by default, on with
/// `VK_POLYFILL_EXTENSIONS_ENABLE=1`, off again with `VK_POLYFILL_EXTENSIONS_DISABLE=1`.
#[test]
fn c_program_linked_with_libvulkan_implicit_layer() {
    let home = temp_dir("implicit-home");
    let out = Command::new("bash")
        .arg(repo_root().join("packaging/install-layer.sh"))
        .args(["--implicit", "--lib"])
        .arg(layer::library_path())
        .env("HOME", &*home)
        .env_remove("XDG_DATA_HOME")
        .output()
        .expect("run install-layer.sh");
    assert!(out.status.success(), "install-layer.sh --implicit failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let installed = home.join(".local/share/vulkan/implicit_layer.d").join(layer::MANIFEST_FILE);
    assert!(installed.is_file(), "{} not installed", installed.display());
    let implicit = |name: &str, env: Env, expect| CCase { home: Some(home.to_path_buf()), ..case(name, env, expect) };
    let enabled = || Env::default().set("VK_POLYFILL_EXTENSIONS_ENABLE", "1");
    run_c_cases(vec![
        implicit("implicit, not enabled", Env::default(), Expect::Native),
        implicit("implicit, VK_POLYFILL_EXTENSIONS_ENABLE=1", enabled(), Expect::Emulated),
        implicit("implicit, enabled and disabled", enabled().set("VK_POLYFILL_EXTENSIONS_DISABLE", "1"), Expect::Native),
        CCase {
            validation: true,
            ..implicit("implicit, enabled, validation explicit", enabled().set("VK_INSTANCE_LAYERS", VALIDATION), Expect::Emulated)
        },
    ]);
}

/// `vkcube` and `vkcubepp` (C and C++, linked with -lvulkan, WSI through Xvfb) render 30 frames
/// and exit 0, with and without the layer, next to device_select and the validation layer (which
/// reports no error for them alone, nor with the layer above or below it).
#[test]
fn vkcube_and_vkcubepp_under_xvfb() {
    let mut failures = Vec::new();
    let ways: [(&str, Env, bool); 6] = [
        ("without the layer", Env::default(), false),
        ("validation alone", Env::default().instance_layers(&[VALIDATION]), true),
        ("VK_INSTANCE_LAYERS", Env::default().instance_layers(&[POLYFILL]), false),
        ("VK_INSTANCE_LAYERS, NODEVICE_SELECT=1", Env::default().instance_layers(&[POLYFILL]).no_device_select(), false),
        ("validation below the layer", Env::default().instance_layers(&[POLYFILL, VALIDATION]), true),
        ("validation above the layer", Env::default().instance_layers(&[VALIDATION, POLYFILL]), true),
    ];
    for cube in ["vkcube", "vkcubepp"] {
        for (name, env, validation) in &ways {
            let dir = temp_dir("vkcube-case");
            let (env, log) = if *validation { validation_logging(env.clone(), &dir) } else { (env.clone(), PathBuf::new()) };
            let r = run(&format!("{cube}, {name}"), &["xvfb-run", "-a", cube, "--c", "30"], &env, &dir);
            let checked = if !r.ok() { Err(r.describe()) } else if *validation { check_validation_log(&r, &log) } else { Ok(()) };
            failures.extend(checked.err());
        }
    }
    assert!(failures.is_empty(), "{} of {} runs failed:\n{}", failures.len(), 2 * ways.len(), failures.join("\n\n"));
}
