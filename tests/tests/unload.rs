//! Unloading: the loader dlclose()s a layer when the last instance using it is destroyed, and
//! dlopen()s it again for the next one. Threads that ran layer code may exit after that.
//!
//! The layer is linked with `-z nodelete` (layer/build.rs), so glibc's dlclose() never unmaps
//! it: Rust statics, std's thread-local destructors registered by the layer's copy of std, and
//! threads that ran layer code can never point into unmapped text. That is what makes the cycles
//! below safe; [`layer_is_linked_nodelete`] guards the link flag itself (`readelf -d` shows
//! `FLAGS_1 ... NODELETE`), and [`instances_come_and_go`] checks at run time that the library is
//! still mapped after every instance is gone.
//!
//! - [`instances_come_and_go`]: in a child process without
//!   `VK_LOADER_DISABLE_DYNAMIC_LIBRARY_UNLOADING` (so the loader really unloads layers between
//!   instances), 50 cycles of instance + device + a rewritten shader module (and a checked
//!   dispatch every 10th cycle), from the main thread, from short-lived threads that exit right
//!   after the layer ran on them, and from several threads at once; no crash, every cycle works.

use polyfill_e2e::child;
use polyfill_e2e::layer::{library_path, LIBRARY_FILE};
use polyfill_e2e::samples::{self, Sample};
use polyfill_e2e::{Context, ContextOptions};
use std::path::Path;

const DISABLE_UNLOADING: &str = "VK_LOADER_DISABLE_DYNAMIC_LIBRARY_UNLOADING";
const CYCLES: usize = 50;

/// `DT_FLAGS_1` and its `DF_1_NODELETE` bit (elf.h).
const DT_FLAGS_1: i64 = 0x6fff_fffb;
const DF_1_NODELETE: u64 = 0x8;
const PT_DYNAMIC: u32 = 2;

/// `DT_FLAGS_1` of a little-endian ELF64 shared object, read from its PT_DYNAMIC segment.
fn elf_flags_1(path: &Path) -> Result<Option<u64>, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let u16_at = |o: usize| b.get(o..o + 2).map(|s| u16::from_le_bytes(s.try_into().unwrap()));
    let u32_at = |o: usize| b.get(o..o + 4).map(|s| u32::from_le_bytes(s.try_into().unwrap()));
    let u64_at = |o: usize| b.get(o..o + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap()));
    if b.get(0..4) != Some(b"\x7fELF") || b.get(4) != Some(&2) || b.get(5) != Some(&1) {
        return Err("not a little-endian ELF64 file".into());
    }
    let bad = || "truncated ELF file".to_string();
    let phoff = u64_at(0x20).ok_or_else(bad)? as usize;
    let phentsize = u16_at(0x36).ok_or_else(bad)? as usize;
    let phnum = u16_at(0x38).ok_or_else(bad)? as usize;
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        if u32_at(ph).ok_or_else(bad)? != PT_DYNAMIC {
            continue;
        }
        let (off, size) = (u64_at(ph + 0x08).ok_or_else(bad)? as usize, u64_at(ph + 0x20).ok_or_else(bad)? as usize);
        let mut at = off;
        while at + 16 <= off + size {
            let tag = u64_at(at).ok_or_else(bad)? as i64;
            let val = u64_at(at + 8).ok_or_else(bad)?;
            if tag == 0 {
                break;
            }
            if tag == DT_FLAGS_1 {
                return Ok(Some(val));
            }
            at += 16;
        }
        return Ok(None);
    }
    Err("no PT_DYNAMIC segment".into())
}

/// The layer must stay NODELETE: the unload safety above depends on it.
#[test]
fn layer_is_linked_nodelete() {
    let lib = library_path();
    // readelf, as a person would check it.
    match std::process::Command::new("readelf").arg("-d").arg(&lib).output() {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text.lines().find(|l| l.contains("(FLAGS_1)"));
            assert!(
                line.is_some_and(|l| l.contains("NODELETE")),
                "readelf -d {} shows no NODELETE in FLAGS_1 (layer/build.rs must link with -z nodelete):\n{text}",
                lib.display()
            );
            println!("readelf -d: {}", line.unwrap().trim());
        }
        other => println!("readelf not available ({:?}); checking the dynamic section directly", other.map(|o| o.status)),
    }
    // And the dynamic section read directly (works without binutils).
    let flags = elf_flags_1(&lib).unwrap_or_else(|e| panic!("{}: {e}", lib.display()));
    assert!(
        flags.is_some_and(|f| f & DF_1_NODELETE != 0),
        "{}: DT_FLAGS_1 = {flags:?} lacks DF_1_NODELETE (layer/build.rs must link with -z nodelete)",
        lib.display()
    );
}

/// One cycle: instance + device with the layer, a rewritten and a plain module, and on every
/// 10th cycle a dispatch checked against the CPU; then everything destroyed (the last instance
/// gone: the loader dlclose()s the layer).
fn cycle(i: usize, raw: &Sample, raw_words: &[u32], plain_words: &[u32]) -> Result<(), String> {
    let ctx = Context::new(&ContextOptions::raw_access_chains()).map_err(|e| format!("cycle {i}: {e}"))?;
    for (what, w) in [("raw-chain", raw_words), ("plain", plain_words)] {
        let m = ctx.create_shader_module(w).map_err(|e| format!("cycle {i}: {what} module: {e:?}"))?;
        ctx.destroy_shader_module(m);
    }
    if i.is_multiple_of(10) {
        let out = ctx.run_compute(raw_words, &raw.job).map_err(|e| format!("cycle {i}: {e}"))?;
        raw.check(&out).map_err(|e| format!("cycle {i}: {e}"))?;
    }
    Ok(())
}

fn mapped(lib_name: &str) -> bool {
    std::fs::read_to_string("/proc/self/maps").map(|m| m.lines().any(|l| l.ends_with(lib_name))).unwrap_or(false)
}

fn unload_child() {
    // The loader reads this when libvulkan is loaded (first Vulkan use, below): make sure the
    // loader really unloads layers here, whatever the parent's environment says.
    std::env::remove_var(DISABLE_UNLOADING);
    let raw = samples::byte_address(None);
    let raw_words = raw.assemble().unwrap();
    let plain_words = samples::plain().assemble().unwrap();
    let (mut main_cycles, mut thread_cycles, mut concurrent_cycles) = (0, 0, 0);
    let (mut i, mut step) = (0, 0);
    while i < CYCLES {
        step += 1;
        match step % 5 {
            // Main thread.
            1 | 2 => {
                cycle(i, &raw, &raw_words, &plain_words).unwrap_or_else(|e| panic!("{e}"));
                main_cycles += 1;
                i += 1;
            }
            // A short-lived thread: the layer runs on it, the instance is destroyed on it, then
            // the thread exits (its thread-locals are torn down after the loader let go of the
            // layer).
            3 | 4 => {
                let (r, rw, pw) = (raw.clone(), raw_words.clone(), plain_words.clone());
                let h = std::thread::spawn(move || cycle(i, &r, &rw, &pw));
                h.join().expect("thread panicked").unwrap_or_else(|e| panic!("{e}"));
                thread_cycles += 1;
                i += 1;
            }
            // Three threads at once: instances overlap, threads exit in any order.
            _ => {
                let hs: Vec<_> = (0..3)
                    .map(|k| {
                        let (r, rw, pw) = (raw.clone(), raw_words.clone(), plain_words.clone());
                        std::thread::spawn(move || cycle(i + k, &r, &rw, &pw))
                    })
                    .collect();
                for h in hs {
                    h.join().expect("thread panicked").unwrap_or_else(|e| panic!("{e}"));
                }
                concurrent_cycles += 3;
                i += 3;
            }
        }
    }
    // Every instance is gone, so the loader has dlclose()d the layer; NODELETE keeps it mapped.
    assert!(mapped(LIBRARY_FILE), "{LIBRARY_FILE} is no longer mapped after the last instance was destroyed (NODELETE lost?)");
    // And the layer loads again and works after all that.
    cycle(0, &raw, &raw_words, &plain_words).unwrap_or_else(|e| panic!("after the cycles: {e}"));
    println!("CYCLES main={main_cycles} short-lived-threads={thread_cycles} concurrent-threads={concurrent_cycles}");
}

#[test]
fn instances_come_and_go() {
    const NAME: &str = "instances_come_and_go";
    if child::run_child(NAME, unload_child) {
        return;
    }
    // LD_DEBUG=files records every dlopen/dlclose of the child: evidence that the loader does
    // unload layers between instances here (a layer without NODELETE — Mesa's device_select
    // implicit layer, if installed — gets its link map destroyed every cycle), while ours is
    // mapped once and never torn down.
    let dir = child::temp_dir("unload");
    let ld = dir.join("ld");
    let out = child::spawn(NAME, &[("LD_DEBUG", "files"), ("LD_DEBUG_OUTPUT", ld.to_str().unwrap())], None);
    out.assert_completed();
    if let Some(l) = out.stdout.lines().find_map(|l| l.find("CYCLES ").map(|i| &l[i..])) {
        println!("{l}");
    }
    let mut text = String::new();
    for e in std::fs::read_dir(&*dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("ld") {
            text.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    let ours_mapped = text.lines().filter(|l| l.contains(LIBRARY_FILE) && l.contains("generating link map")).count();
    let ours_destroyed = text.lines().filter(|l| l.contains(LIBRARY_FILE) && l.contains("destroying link map")).count();
    let ours_opened = text.lines().filter(|l| l.contains("opening file=") && l.contains(LIBRARY_FILE)).count();
    let others_destroyed = text.lines().filter(|l| l.contains("destroying link map") && !l.contains(LIBRARY_FILE)).count();
    println!(
        "LD_DEBUG: {LIBRARY_FILE} dlopen()ed {ours_opened} times, mapped {ours_mapped} time(s), unmapped {ours_destroyed} times; \
         link maps of other libraries destroyed (loader unloading): {others_destroyed}"
    );
    if !text.is_empty() {
        assert_eq!(ours_mapped, 1, "the layer was mapped more than once (unloaded in between?)");
        assert_eq!(ours_destroyed, 0, "the layer's link map was destroyed (unmapped) during the run");
        assert!(ours_opened >= CYCLES / 2, "the loader dlopen()ed the layer only {ours_opened} times for {CYCLES}+ instances");
    }
}
