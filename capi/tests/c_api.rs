//! The C tests (tests/c/test_capi.c), compiled with `cc` against the built libspirv_polyfill.so
//! and .a and the committed header, and run: the API's contract, the buffer-device-address
//! options and results, and the dxil-spirv, 8/16-bit storage, bindless and physical-storage-buffer
//! corpora rewritten through the C API byte-identical to the Rust API;
//! then again under valgrind and with AddressSanitizer, which must report no leak and no
//! invalid access.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use polyfill_e2e::tools::spirv_as;
use shader_rewrite::named_options::{self, Kind};
use shader_rewrite::{rewrite, Options, RewriteError, SmallStorage, Target};

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// Where cargo put the libspirv_polyfill.{so,a} this test was built with: next to the test in
/// `deps/` (`cargo test` does not copy them up to the profile directory; `cargo build` does, so
/// the copies there may be older).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    for lib in ["libspirv_polyfill.so", "libspirv_polyfill.a"] {
        assert!(dir.join(lib).is_file(), "{} not built next to {}", lib, exe.display());
    }
    dir.to_path_buf()
}

/// A scratch directory for this test run (under the target directory, removed first).
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = lib_dir().parent().unwrap().join("capi-c-tests");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{text}", out.status);
    text
}

/// Compiles test_capi.c into `name`, linked as `link` says, with `extra` flags.
fn compile(name: &str, extra: &[&str], link: &[String]) -> PathBuf {
    let exe = scratch().join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    run(Command::new(cc)
        .args(["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-g"])
        .args(extra)
        .arg("-I")
        .arg(Path::new(CRATE).join("include"))
        .arg(Path::new(CRATE).join("tests/c/test_capi.c"))
        .arg("-o")
        .arg(&exe)
        .args(link)
        .arg("-lpthread"));
    exe
}

/// The SONAME build.rs gives the library.
const SONAME: &str = "libspirv_polyfill.so.0";

/// The built library laid out as installed: `libspirv_polyfill.so.0` (a copy of cargo's
/// `libspirv_polyfill.so`, whose SONAME is that name) and the `libspirv_polyfill.so` link.
fn installed_layout() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch().join("lib");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(lib_dir().join("libspirv_polyfill.so"), dir.join(SONAME)).unwrap();
        std::os::unix::fs::symlink(SONAME, dir.join("libspirv_polyfill.so")).unwrap();
        dir
    })
}

fn shared_link() -> Vec<String> {
    let dir = installed_layout().display().to_string();
    // DT_RPATH, not DT_RUNPATH: cargo's LD_LIBRARY_PATH names the profile directory, whose copy
    // of the library may be older, and LD_LIBRARY_PATH goes before DT_RUNPATH.
    vec![format!("-L{dir}"), "-lspirv_polyfill".into(), format!("-Wl,--disable-new-dtags,-rpath,{dir}")]
}

/// The library's SONAME is `libspirv_polyfill.so.0`, and a program linked with
/// `-lspirv_polyfill` records that name (not the bare development name).
#[test]
fn shared_library_has_a_versioned_soname() {
    let dynamic = run(Command::new("readelf").arg("-dW").arg(lib_dir().join("libspirv_polyfill.so")));
    assert!(dynamic.contains(&format!("Library soname: [{SONAME}]")), "{dynamic}");
    let needed = run(Command::new("readelf").arg("-dW").arg(shared_build()));
    assert!(needed.contains(&format!("Shared library: [{SONAME}]")) && !needed.contains("[libspirv_polyfill.so]"), "{needed}");
}

fn shared_build() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| compile("test_capi_shared", &[], &shared_link()))
}

/// A target (`all` / `core`) and NAME=VALUE options.
type Config = (&'static str, &'static [&'static str]);

/// (corpus directory, spirv-as target environment, configurations).
const CORPORA: &[(&str, &str, &[Config])] = &[
    ("dxil-spirv-raw-access", "vulkan1.1", &[("all", &[]), ("core", &[])]),
    (
        "small-storage",
        "vulkan1.1",
        &[
            ("all", &["storage_input_output_16=0"]),
            ("all", &["storage_buffer_16bit=0", "uniform_and_storage_buffer_16bit=0", "storage_push_constant_16=0", "storage_input_output_16=0"]),
            ("core", &["oob_poison=0xAB"]),
        ],
    ),
    ("bindless", "vulkan1.3", &[("all", &["bindless_set=7"]), ("core", &["bindless_set=3", "bindless_samplers_count=16", "int64=1"])]),
    (
        "physical-storage-buffer",
        "vulkan1.1",
        &[("all", &["bda_set=5", "bda_binding=2"]), ("all", &["int64=0", "bda_set=7", "bda_count=1024"]), ("core", &["bda_set=0", "quirk_nonuniform_array_length=1"])],
    ),
];

/// Rewrites every corpus module in every configuration with the Rust API and writes the
/// manifest test_capi.c reads (see its header comment). Returns (manifest, case count).
fn corpus_manifest() -> &'static (PathBuf, usize) {
    static MANIFEST: OnceLock<(PathBuf, usize)> = OnceLock::new();
    MANIFEST.get_or_init(|| {
        let dir = scratch().join("corpus");
        std::fs::create_dir_all(&dir).unwrap();
        let mut lines = Vec::new();
        for (corpus, env, configs) in CORPORA {
            let src = Path::new(CRATE).join("../tests/corpus").join(corpus);
            let mut files: Vec<PathBuf> = std::fs::read_dir(&src)
                .unwrap_or_else(|e| panic!("{}: {e}", src.display()))
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "spvasm"))
                .collect();
            files.sort();
            assert!(!files.is_empty(), "no modules in {}", src.display());
            for file in files {
                let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
                let input = spirv_as(&std::fs::read_to_string(&file).unwrap(), env).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                let input_path = dir.join(format!("{corpus}.{stem}.spv"));
                std::fs::write(&input_path, bytes(&input)).unwrap();
                for (k, (target, assignments)) in configs.iter().enumerate() {
                    let mut options = Options { target: if *target == "core" { Target::core() } else { Target::all() }, ..Options::default() };
                    for a in *assignments {
                        named_options::set_from_str(&mut options, a).unwrap();
                    }
                    options.emulate_storage = SmallStorage::missing_from(&options.target);
                    let base = dir.join(format!("{corpus}.{stem}.{k}")).display().to_string();
                    let (status, expected, text) = match rewrite(&input, &options) {
                        Ok(r) => {
                            std::fs::write(format!("{base}.expected.spv"), bytes(&r.words)).unwrap();
                            (0, format!("{base}.expected.spv"), r.stats.to_string())
                        }
                        Err(e @ RewriteError::Malformed { .. }) => (3, "-".into(), e.to_string()),
                        Err(e @ RewriteError::Unsupported { .. }) => (4, "-".into(), e.to_string()),
                    };
                    std::fs::write(format!("{base}.txt"), text).unwrap();
                    let c_options: Vec<String> = assignments
                        .iter()
                        .map(|a| {
                            let kind = named_options::find(a.split('=').next().unwrap()).unwrap().kind;
                            format!("{}:{a}", if kind == Kind::Bool { 'b' } else { 'u' })
                        })
                        .collect();
                    let c_options = if c_options.is_empty() { "-".into() } else { c_options.join(",") };
                    lines.push(format!("{target} {c_options} {} {status} {expected} {base}.txt", input_path.display()));
                }
            }
        }
        let manifest = dir.join("manifest.txt");
        std::fs::write(&manifest, lines.join("\n") + "\n").unwrap();
        (manifest, lines.len())
    })
}

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn assert_all_passed(output: &str) {
    let summary = output.lines().find(|l| l.ends_with("failures")).unwrap_or_else(|| panic!("no summary:\n{output}"));
    assert!(summary.ends_with(" 0 failures"), "{output}");
}

#[test]
fn c_api_contract() {
    let out = run(Command::new(shared_build()).arg("api"));
    println!("{out}");
    assert_all_passed(&out);
}

/// `test_capi bda` on mixed.spvasm (PhysicalStorageBuffer pointers, no Int64): the bda_* options,
/// the declared bit, the module unchanged without a table and lowered onto the named one with it,
/// and the features each output needs.
fn bda_module() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let src = Path::new(CRATE).join("../tests/corpus/physical-storage-buffer/mixed.spvasm");
        let words = spirv_as(&std::fs::read_to_string(&src).unwrap(), "vulkan1.1").unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        let path = scratch().join("bda-mixed.spv");
        std::fs::write(&path, bytes(&words)).unwrap();
        path
    })
}

#[test]
fn c_buffer_device_address_options_and_results() {
    let out = run(Command::new(shared_build()).arg("bda").arg(bda_module()));
    println!("{out}");
    assert_all_passed(&out);
}

#[test]
fn c_corpus_matches_rust_api_shared_library() {
    let (manifest, cases) = corpus_manifest();
    let out = run(Command::new(shared_build()).arg("corpus").arg(manifest));
    println!("{out}");
    assert_all_passed(&out);
    assert!(out.contains(&format!("corpus: {cases}/{cases} cases identical")), "{out}");
    assert!(*cases >= 23 * 2 + 5 * 3 + 7 * 2 + 2 * 3, "{cases} cases");
    // The bindless lowering refuses mixed-phi.spvasm naming the OpPhi; the C API finds it in the
    // input and says where.
    let refused = out.lines().find(|l| l.starts_with("error case") && l.contains("mixed-phi")).unwrap_or_else(|| panic!("{out}"));
    assert!(refused.contains("OpPhi") && refused.contains(", OpPhi)") && refused.contains("instruction "), "{refused}");
}

#[test]
fn c_corpus_matches_rust_api_static_library() {
    let mut link = vec![lib_dir().join("libspirv_polyfill.a").display().to_string()];
    // What a Rust staticlib needs from the system on Linux (rustc --print native-static-libs).
    link.extend(["-lgcc_s", "-lutil", "-lrt", "-lm", "-ldl", "-lc"].map(String::from));
    let exe = compile("test_capi_static", &[], &link);
    let (manifest, cases) = corpus_manifest();
    let out = run(Command::new(&exe).arg("corpus").arg(manifest));
    assert_all_passed(&out);
    assert!(out.contains(&format!("corpus: {cases}/{cases} cases identical")), "{out}");
    assert_all_passed(&run(Command::new(&exe).arg("api")));
}

#[test]
fn header_compiles_as_cpp() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    run(Command::new(cxx).args(["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", "c++"]).arg(Path::new(CRATE).join("include/spirv_polyfill.h")));
}

/// valgrind over both C test modes: no leak (definite, indirect or possible) and no invalid
/// access, or the run exits 99.
#[test]
fn c_tests_under_valgrind() {
    let (manifest, _) = corpus_manifest();
    for args in [vec!["api".to_string()], vec!["corpus".into(), manifest.display().to_string()], vec!["bda".into(), bda_module().display().to_string()]] {
        let out = run(Command::new("valgrind")
            .args(["--error-exitcode=99", "--leak-check=full", "--show-leak-kinds=definite,indirect,possible"])
            .args(["--errors-for-leak-kinds=definite,indirect,possible"])
            .arg(shared_build())
            .args(&args));
        assert_all_passed(&out);
        let summary: Vec<&str> = out.lines().filter(|l| l.contains("ERROR SUMMARY") || l.contains("lost:")).collect();
        println!("valgrind {}:\n{}", args[0], summary.join("\n"));
        assert!(out.contains("ERROR SUMMARY: 0 errors"), "{out}");
    }
}

/// The C tests built with AddressSanitizer (+ LeakSanitizer) and UndefinedBehaviorSanitizer.
#[test]
fn c_tests_under_asan() {
    let exe = compile("test_capi_asan", &["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all"], &shared_link());
    let (manifest, _) = corpus_manifest();
    for args in [vec!["api".to_string()], vec!["corpus".into(), manifest.display().to_string()], vec!["bda".into(), bda_module().display().to_string()]] {
        let out = run(Command::new(&exe).args(&args).env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1"));
        assert_all_passed(&out);
    }
}

/// packaging/install-capi.sh into a temporary prefix; examples/rewrite.c (the README's example)
/// built with `pkg-config --cflags --libs spirv_polyfill` rewrites a 16-bit I/O module as the
/// Rust API does.
#[test]
fn installed_library_builds_the_example_with_pkg_config() {
    let prefix = scratch().join("prefix");
    run(Command::new("bash").arg(Path::new(CRATE).join("../packaging/install-capi.sh")).arg("--prefix").arg(&prefix).arg("--built").arg(lib_dir()));
    let pkgconfig = prefix.join("lib/pkgconfig");
    let flags = run(Command::new("pkg-config").args(["--cflags", "--libs", "spirv_polyfill"]).env("PKG_CONFIG_PATH", &pkgconfig));
    assert!(flags.contains("-lspirv_polyfill"), "{flags}");
    let exe = scratch().join("rewrite_example");
    run(Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
        .arg(Path::new(CRATE).join("examples/rewrite.c"))
        .arg("-o")
        .arg(&exe)
        .args(flags.split_whitespace()));
    corpus_manifest();
    let corpus = scratch().join("corpus");
    let out = scratch().join("io16.out.spv");
    let printed = run(Command::new(&exe).arg(corpus.join("small-storage.io16-fragment.spv")).arg(&out).env("LD_LIBRARY_PATH", prefix.join("lib")));
    assert!(printed.contains("I/O variables widened"), "{printed}");
    // Configuration 0 of small-storage is the example's target (no storageInputOutput16).
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(corpus.join("small-storage.io16-fragment.0.expected.spv")).unwrap());
}
