//! The `spirv-polyfill` binary run as a process, as a user or a script runs it: every documented
//! exit status (0, 1, 2), `--help`/`--version` on standard output, `-` for standard input and
//! output, errors that name the file and the instruction, PhysicalStorageBuffer modules lowered
//! with the buffer-device-address options (valid under spirv-val, the same words as the
//! library), `scan` and `targets` reports, and a full, closed or broken standard output without
//! a panic.
mod common;
use common::{assemble, disassemble, validate};
use shader_rewrite::bda::BdaTable;
use shader_rewrite::{rewrite, BindlessTable, Options, Target};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_spirv-polyfill");

fn corpus(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus").join(dir)
}

/// A scratch directory of its own for each test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("spirv-polyfill-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs the CLI with `args` and `stdin` (none: an empty standard input).
fn cli(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(BIN).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The run exited `code`, never by a panic (101, or a "panicked" message).
#[track_caller]
fn assert_exit(out: &Output, code: i32, what: &str) {
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{what}: panicked:\n{stderr}");
    assert_eq!(out.status.code(), Some(code), "{what}: stdout:\n{}\nstderr:\n{stderr}", text(&out.stdout));
}

fn words_of(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn bytes_of(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The PhysicalStorageBuffer corpus, assembled (SPIR-V 1.3, as the pass's own tests do).
fn psb_modules() -> Vec<(String, Vec<u32>)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(corpus("physical-storage-buffer")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "spvasm")).collect();
    paths.sort();
    assert!(paths.len() >= 2, "{paths:?}");
    paths.iter().map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), assemble(&std::fs::read_to_string(p).unwrap(), "vulkan1.1"))).collect()
}

#[test]
fn help_and_version_go_to_standard_output_with_exit_0() {
    for args in [&["--help"][..], &["-h"], &["rewrite", "--help"], &["scan", "-h"], &["targets", "--help"], &["help", "rewrite"], &["help"]] {
        let out = cli(args, None);
        assert_exit(&out, 0, &format!("{args:?}"));
        assert!(out.stderr.is_empty(), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("Usage: spirv-polyfill"), "{args:?}: {}", text(&out.stdout));
    }
    let out = cli(&["--version"], None);
    assert_exit(&out, 0, "--version");
    assert_eq!(text(&out.stdout), format!("spirv-polyfill {}\n", env!("CARGO_PKG_VERSION")));
    // The exit statuses the tests below check are the documented ones.
    let help = text(&cli(&["--help"], None).stdout);
    for line in ["0  success", "1  a module cannot be rewritten or is not valid SPIR-V", "2  usage error"] {
        assert!(help.contains(line), "--help does not document `{line}`:\n{help}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let dir = scratch("usage");
    let spv = dir.join("m.spv");
    std::fs::write(&spv, bytes_of(&psb_modules()[0].1)).unwrap();
    let m = spv.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &[],
        &["frobnicate"],
        &["rewrite", m],
        &["rewrite", m, m, "-o", "x.spv"],
        &["rewrite", "--bogus", m, "-o", "x.spv"],
        &["scan", "-o", "x.spv", m],
        &["scan"],
        &["scan", "-", "-"],
        &["rewrite", m, "-o", "x.spv", "--target", "fast"],
        &["rewrite", m, "-o", "x.spv", "--bda-count", "0"],
        &["rewrite", m, "-o", "x.spv", "--bda-count", "16777217"],
        &["rewrite", m, "-o", "x.spv", "--bda-set", "x"],
        &["rewrite", m, "-o", "x.spv", "--oob-poison", "256"],
        &["rewrite", m, "-o", "x.spv", "--bindless-counts", "1,2"],
        &["rewrite", m, "-o", "x.spv", "--set", "nope=1"],
        &["rewrite", m, "-o", "x.spv", "--set", "int64=2"],
        &["rewrite", m, "-o", "x.spv", "--set", "int64"],
        &["completions", "tcsh"],
    ];
    for args in cases {
        let out = cli(args, None);
        assert_exit(&out, 2, &format!("{args:?}"));
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
        assert!(!out.stderr.is_empty(), "{args:?}: no message");
    }
    assert!(!Path::new("x.spv").exists(), "a usage error wrote its output");
    let out = cli(&["scan", "-o", "x.spv", m], None);
    assert!(text(&out.stderr).contains("'-o'"), "{}", text(&out.stderr));
}

#[test]
fn failures_exit_1_naming_the_file_and_the_instruction() {
    let dir = scratch("failures");
    let missing = dir.join("missing.spv");
    let out = cli(&["rewrite", missing.to_str().unwrap(), "-o", dir.join("o.spv").to_str().unwrap()], None);
    assert_exit(&out, 1, "missing input");
    assert!(text(&out.stderr).starts_with(&format!("spirv-polyfill: {}: ", missing.display())), "{}", text(&out.stderr));

    // Not SPIR-V: exit 1 from both commands, naming the file.
    let junk = dir.join("junk.spv");
    std::fs::write(&junk, b"not a SPIR-V module!").unwrap();
    for args in [&["rewrite", junk.to_str().unwrap(), "-o", "-"][..], &["scan", junk.to_str().unwrap()]] {
        let out = cli(args, None);
        assert_exit(&out, 1, &format!("{args:?}"));
        assert!(text(&out.stderr).contains(&format!("{}: ", junk.display())) && text(&out.stderr).contains("magic"), "{}", text(&out.stderr));
    }
    // A module the bindless lowering refuses: the message names the OpPhi, and where it is.
    let mixed = dir.join("mixed-phi.spv");
    std::fs::write(&mixed, bytes_of(&assemble(&std::fs::read_to_string(corpus("bindless").join("mixed-phi.spvasm")).unwrap(), "vulkan1.3"))).unwrap();
    let out_path = dir.join("mixed-out.spv");
    let out = cli(&["rewrite", mixed.to_str().unwrap(), "--bindless-set", "2", "-o", out_path.to_str().unwrap()], None);
    assert_exit(&out, 1, "mixed-phi");
    let stderr = text(&out.stderr);
    let words = words_of(&std::fs::read(&mixed).unwrap());
    let e = rewrite(&words, &Options { bindless: Some(BindlessTable::with_defaults(2)), ..Options::default() }).unwrap_err();
    let (expected, at) = shader_rewrite::location::describe(&words, &e);
    let at = at.expect("the C API locates this error");
    assert_eq!(stderr, format!("spirv-polyfill: {}: {expected}\n", mixed.display()));
    assert!(stderr.contains(&format!("(instruction {} at word {}, OpPhi)", at.instruction_index, at.word_offset)), "{stderr}");
    assert!(!out_path.exists(), "a failed rewrite wrote {}", out_path.display());
    // scan goes on with the next file, and exits 1 for the one that failed.
    let out = cli(&["scan", "--bindless-set", "2", mixed.to_str().unwrap(), junk.to_str().unwrap()], None);
    assert_exit(&out, 1, "scan of a refused and a junk module");
    assert!(text(&out.stdout).contains("mixed-phi.spv: BindlessTextureNV: yes"), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("cannot be rewritten") && text(&out.stderr).contains("junk.spv"), "{}", text(&out.stderr));
}

/// Both address types (a target with and without Int64): the CLI's output is the library's,
/// valid, and uses the table it was told about; `-` works for input and output.
#[test]
fn physical_storage_buffer_modules_lowered_with_the_bda_options() {
    let dir = scratch("psb");
    for (name, words) in psb_modules() {
        let input = dir.join(format!("{name}.spv"));
        std::fs::write(&input, bytes_of(&words)).unwrap();
        for int64 in [true, false] {
            let table = BdaTable { set: 5, binding: 2, count: 1024 };
            let options = Options { target: Target { int64, ..Target::all() }, bda: Some(table), ..Options::default() };
            let expected = rewrite(&words, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut args = vec!["rewrite", "-", "-o", "-", "--bda-set", "5", "--bda-binding", "2", "--bda-count", "1024", "--stats"];
            if !int64 {
                args.push("--no-int64");
            }
            let out = cli(&args, Some(&bytes_of(&words)));
            assert_exit(&out, 0, &format!("{name} {args:?}"));
            assert_eq!(words_of(&out.stdout), expected.words, "{name} int64={int64}: the CLI's output is not the library's");
            let dis = disassemble(&expected.words);
            validate(&expected.words, "vulkan1.1").unwrap_or_else(|e| panic!("{name} int64={int64}: {e}\n{dis}"));
            assert!(!dis.contains("PhysicalStorageBuffer"), "{name}: {dis}");
            assert!(dis.contains("DescriptorSet 5") && dis.contains("Binding 2"), "{name}: {dis}");
            assert!(text(&out.stderr).starts_with("<stdin>: ") && text(&out.stderr).contains("physical storage buffer"), "{}", text(&out.stderr));
            // The same through files and `--set`.
            let file_out = dir.join(format!("{name}.{int64}.spv"));
            let sets = ["--set", "bda_set=5", "--set", "bda_binding=2", "--set", "bda_count=1024", "--set", if int64 { "int64=1" } else { "int64=0" }];
            let out = cli(&[&["rewrite", input.to_str().unwrap(), "-o", file_out.to_str().unwrap()][..], &sets].concat(), None);
            assert_exit(&out, 0, "rewrite with --set");
            assert_eq!(words_of(&std::fs::read(&file_out).unwrap()), expected.words);
        }
        // Without a table the module is left alone (byte-identical), as the layer does where
        // the device has buffer device addresses, and a note says how to lower it.
        let out = cli(&["rewrite", input.to_str().unwrap(), "-o", "-"], None);
        assert_exit(&out, 0, "rewrite without a table");
        assert_eq!(out.stdout, bytes_of(&words));
        assert!(text(&out.stderr).starts_with(&format!("spirv-polyfill: note: {}: PhysicalStorageBuffer pointers kept", input.display())), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("--bda-set"), "{}", text(&out.stderr));
    }
}

#[test]
fn scan_reports_physical_storage_buffer_pointers_and_what_the_output_needs() {
    let (name, words) = psb_modules().remove(0);
    let out = cli(&["scan", "-"], Some(&bytes_of(&words)));
    assert_exit(&out, 0, "scan");
    let report = text(&out.stdout);
    for line in [
        "<stdin>: PhysicalStorageBufferAddresses: yes",
        "<stdin>: RawAccessChainsNV: no",
        "<stdin>: lowered: nothing",
        "<stdin>: kept: PhysicalStorageBufferAddresses (no buffer-device-address table: --bda-set)",
    ] {
        assert!(report.contains(line), "{name}: no `{line}` in\n{report}");
    }
    let needs = |report: &str| report.lines().find_map(|l| l.strip_prefix("<stdin>: output needs: ")).unwrap_or_else(|| panic!("{report}")).to_string();
    assert!(needs(&report).contains("bufferDeviceAddress"), "{report}");
    let out = cli(&["scan", "-", "--bda-set", "1", "--no-int64"], Some(&bytes_of(&words)));
    assert_exit(&out, 0, "scan --bda-set");
    let report = text(&out.stdout);
    assert!(report.contains("<stdin>: lowered: PhysicalStorageBufferAddresses (table in set 1, binding 3, 65536 slots; uvec2"), "{report}");
    let needed = needs(&report);
    assert!(needed.contains("shaderStorageBufferArrayNonUniformIndexing") && !needed.contains("bufferDeviceAddress"), "{needed}");
    // The default target has robustBufferAccess2 on: the output leaves its bounds to it.
    assert!(needed.contains("robustBufferAccess2"), "{needed}");
    let out = cli(&["scan", "-", "--bda-set", "1", "--no-robust-buffer-access2"], Some(&bytes_of(&words)));
    assert!(!needs(&text(&out.stdout)).contains("robustBufferAccess2"), "{}", text(&out.stdout));
    let out = cli(&["scan", "-", "--bda-set", "1"], Some(&bytes_of(&words)));
    assert!(text(&out.stdout).contains("u64 addresses"), "{}", text(&out.stdout));

    // Raw access chains and 8/16-bit storage: lowered or kept as the target says.
    let raw = assemble(&std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/c/raw_chain.spvasm")).unwrap(), "vulkan1.1");
    let report = text(&cli(&["scan", "-", "--no-16bit-io"], Some(&bytes_of(&raw))).stdout);
    assert!(report.contains("RawAccessChainsNV: yes") && report.contains("lowered: RawAccessChainsNV"), "{report}");
    // Its per-component store is left to the driver's robustBufferAccess2 (exact to the byte),
    // unless the target's rounds ranges to words.
    assert!(needs(&report).contains("robustBufferAccess2"), "{report}");
    let report = text(&cli(&["scan", "-", "--no-16bit-io", "--robust-storage-alignment-4"], Some(&bytes_of(&raw))).stdout);
    assert!(!needs(&report).contains("robustBufferAccess2"), "{report}");
    let report = text(&cli(&["scan", "-", "--no-raw-access-chains"], Some(&bytes_of(&raw))).stdout);
    assert!(report.contains("kept: RawAccessChainsNV (--no-raw-access-chains)") && report.contains("shaderRawAccessChains"), "{report}");
}

#[test]
fn targets_prints_every_named_option_and_the_lowering() {
    let out = cli(&["targets"], None);
    assert_exit(&out, 0, "targets");
    let report = text(&out.stdout);
    for o in shader_rewrite::named_options::NAMED_OPTIONS {
        assert!(report.lines().any(|l| l.trim_start().starts_with(&format!("{} ", o.name))), "{} missing:\n{report}", o.name);
    }
    let report = text(&cli(&["targets", "--target", "core", "--set", "int64=1", "--bda-set", "4", "--bindless-set", "6", "--oob-poison", "0xab"], None).stdout);
    let value = |name: &str| report.lines().find_map(|l| l.trim_start().strip_prefix(&format!("{name} "))).map(|v| v.split_whitespace().next().unwrap().to_string());
    assert_eq!(value("int64").as_deref(), Some("1"), "{report}");
    assert_eq!(value("int8").as_deref(), Some("0"), "{report}");
    assert_eq!(value("bda_set").as_deref(), Some("4"), "{report}");
    assert_eq!(value("bda_binding").as_deref(), Some("3"), "{report}");
    assert_eq!(value("oob_poison").as_deref(), Some("0xab"), "{report}");
    assert!(report.contains("PhysicalStorageBuffer pointers: onto set 4, binding 3 (65536 storage buffers); addresses carried as u64"), "{report}");
    assert!(report.contains("SPV_NV_bindless_texture: onto set 6"), "{report}");
    assert!(report.contains("8/16-bit storage capabilities: StorageBuffer16BitAccess"), "{report}");
    // The lavapipe preset: its quirks, and vectors left to its per-component checks.
    let report = text(&cli(&["targets", "--target", "lavapipe"], None).stdout);
    let value = |name: &str| report.lines().find_map(|l| l.trim_start().strip_prefix(&format!("{name} "))).map(|v| v.split_whitespace().next().unwrap().to_string());
    for (name, v) in [("quirk_robust_vector_components", "1"), ("quirk_nonuniform_array_length", "1"), ("storage_input_output_16", "0"), ("float16", "1")] {
        assert_eq!(value(name).as_deref(), Some(v), "{name}: {report}");
    }
    assert!(report.contains("and vectors of 32/64-bit components, leave their checks"), "{report}");
    assert!(report.contains("8/16-bit storage capabilities: StorageInputOutput16"), "{report}");
}

/// The man pages and completions come from the same definition: every long flag of `rewrite
/// --help` is in both.
#[test]
fn man_pages_and_completions_cover_every_flag() {
    let help = text(&cli(&["rewrite", "--help"], None).stdout);
    // The option lines: `  -o, --output <FILE>`, `      --stats`.
    let flags: Vec<&str> = help
        .lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .flat_map(|l| l.split_whitespace().filter(|w| w.starts_with("--")).map(|w| w.trim_end_matches(',')))
        .collect();
    assert!(flags.contains(&"--bda-set") && flags.contains(&"--set") && flags.len() > 15, "{flags:?}");
    let dir = scratch("man");
    assert_exit(&cli(&["manual", "--out-dir", dir.to_str().unwrap()], None), 0, "manual --out-dir");
    let page = std::fs::read_to_string(dir.join("spirv-polyfill-rewrite.1")).unwrap();
    for name in ["spirv-polyfill.1", "spirv-polyfill-scan.1", "spirv-polyfill-targets.1"] {
        assert!(dir.join(name).is_file(), "{name} not written");
    }
    let out = cli(&["manual"], None);
    assert_exit(&out, 0, "manual");
    assert!(text(&out.stdout).starts_with(".ie") && text(&out.stdout).contains(".TH spirv-polyfill 1"), "{}", text(&out.stdout));
    for shell in ["bash", "zsh", "fish"] {
        let out = cli(&["completions", shell], None);
        assert_exit(&out, 0, shell);
        let script = text(&out.stdout);
        for flag in &flags {
            let roff = flag.replace('-', "\\-");
            assert!(page.contains(&roff), "{flag} is not in the man page");
            // fish names long options without their dashes (`-l bda-set`).
            assert!(script.contains(flag) || script.contains(&format!("-l {}", &flag[2..])), "{flag} is not in the {shell} completions");
        }
    }
}

/// `--help`, `--version` and every command that prints, with standard output full
/// (`/dev/full`), closed, or a pipe whose reader is gone: an error message or nothing, never a
/// panic, and exit 1 when the output was lost.
#[test]
fn full_closed_or_broken_standard_output_is_no_panic() {
    let (_, words) = psb_modules().remove(0);
    let dir = scratch("full");
    let spv = dir.join("m.spv");
    std::fs::write(&spv, bytes_of(&words)).unwrap();
    let m = spv.to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["--help"],
        &["--version"],
        &["rewrite", "--help"],
        &["scan", m],
        &["targets"],
        &["completions", "bash"],
        &["manual"],
        &["rewrite", m, "--bda-set", "0", "-o", "-"],
    ];
    for args in commands {
        let full = Command::new(BIN).args(*args).stdout(std::fs::File::create("/dev/full").unwrap()).output().unwrap();
        assert_exit(&full, 1, &format!("{args:?} > /dev/full"));
        assert!(text(&full.stderr).contains("No space left on device"), "{args:?}: {}", text(&full.stderr));
        // Closed: Rust's standard output takes EBADF as nothing to write; no panic either way.
        let closed = Command::new("bash").arg("-c").arg("exec \"$0\" \"$@\" >&-").arg(BIN).args(*args).output().unwrap();
        assert!(matches!(closed.status.code(), Some(0 | 1)), "{args:?} >&-: {:?} {}", closed.status, text(&closed.stderr));
        assert!(!text(&closed.stderr).contains("panicked"), "{args:?} >&-: {}", text(&closed.stderr));
        // A reader that is gone before the writer starts.
        let mut child = Command::new(BIN).args(*args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        drop(child.stdout.take());
        let broken = child.wait_with_output().unwrap();
        assert!(matches!(broken.status.code(), Some(0 | 1)), "{args:?} | (closed): {:?}", broken.status);
        assert!(broken.stderr.is_empty(), "{args:?} | (closed): {}", text(&broken.stderr));
    }
    // Standard error full: help and version still work; errors keep their exit status.
    for (args, code) in [(&["--help"][..], 0), (&["--version"], 0), (&["rewrite", "--bogus"], 2), (&["scan", "/nonexistent.spv"], 1)] {
        let out = Command::new(BIN).args(args).stdout(Stdio::null()).stderr(std::fs::File::create("/dev/full").unwrap()).status().unwrap();
        assert_eq!(out.code(), Some(code), "{args:?} 2> /dev/full");
    }
}
