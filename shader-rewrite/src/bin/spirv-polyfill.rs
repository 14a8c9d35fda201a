//! `spirv-polyfill`: the offline rewriter.
//!
//!   spirv-polyfill rewrite IN.spv -o OUT.spv [--stats] [--target all|core] [--no-int8-storage]
//!                  [--no-int16-storage] [--oob-poison 0xAB] [--bindless-set N [--bindless-counts S,T,P]]
//!                  [--set NAME=VALUE]...
//!   spirv-polyfill scan IN.spv
use std::process::ExitCode;

use shader_rewrite::named_options::{self, NAMED_OPTIONS};
use shader_rewrite::{rewrite, scan, words_from_bytes, BindlessTable, Options, SmallStorage, Target};

const USAGE: &str = "usage:
  spirv-polyfill rewrite IN.spv -o OUT.spv [options]   lower emulated extensions
  spirv-polyfill scan IN.spv                            say what a module would need
options for rewrite:
  --stats                 print what was lowered (to stderr)
  --target all|core       start from every optional feature (default) or Vulkan 1.0 core
  --no-8bit-storage       target lacks storageBuffer8BitAccess / uniformAndStorageBuffer8BitAccess
                          / storagePushConstant8
  --no-16bit-storage      target lacks storageBuffer16BitAccess / uniformAndStorageBuffer16BitAccess
                          / storagePushConstant16 / storageInputOutput16
  --no-16bit-io           target lacks storageInputOutput16 only (lavapipe, NVIDIA, NVK, ...)
                          Capabilities of 8/16-bit storage the target lacks are lowered to
                          32-bit accesses.
  --oob-poison BYTE       out-of-bounds loads caught by emulated robustness return BYTE (debug aid)
  --quirk-nonuniform-array-length
                          target returns one OpArrayLength per subgroup for non-uniform
                          descriptor indices (lavapipe): take such lengths in a waterfall loop
  --bindless-set N        lower SPV_NV_bindless_texture onto a descriptor table in set N: binding 0
                          = sampled images, 1 = storage images, 2 = samplers; a handle holds the
                          image slot in bits 0..20 and the sampler slot in bits 20..32
  --bindless-counts S,T,P descriptor counts of those arrays (default 65536,65536,4096)
  --set NAME=VALUE        set a named option (the C API's names; applied after the flags
                          above), one of:";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("spirv-polyfill: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// USAGE followed by the named options `--set` takes.
fn usage() -> String {
    let names: Vec<String> = NAMED_OPTIONS.iter().map(|o| format!("    {:<34}{}", o.name, o.help)).collect();
    format!("{USAGE}\n{}", names.join("\n"))
}

fn parse_byte(s: &str) -> Result<u8, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("`{s}` is not a byte value"))
}

fn run(args: Vec<String>) -> Result<(), String> {
    let cmd = args.first().ok_or_else(usage)?;
    let mut input = None;
    let mut output = None;
    let mut stats = false;
    let mut options = Options::default();
    let mut bindless_set = None;
    let defaults = BindlessTable::with_defaults(0);
    let mut bindless_counts = [defaults.sampled_images_count, defaults.storage_images_count, defaults.samplers_count];
    let mut assignments = Vec::new();
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-o" | "--output" => output = Some(it.next().ok_or("-o needs a path")?.clone()),
            "--stats" => stats = true,
            "--target" => {
                options.target = match it.next().map(|s| s.as_str()) {
                    Some("all") => Target::all(),
                    Some("core") => Target::core(),
                    _ => return Err("--target takes all or core".into()),
                }
            }
            "--no-8bit-storage" => {
                options.target.storage_buffer_8bit = false;
                options.target.uniform_and_storage_buffer_8bit = false;
                options.target.storage_push_constant_8 = false;
            }
            "--no-16bit-storage" => {
                options.target.storage_buffer_16bit = false;
                options.target.uniform_and_storage_buffer_16bit = false;
                options.target.storage_push_constant_16 = false;
                options.target.storage_input_output_16 = false;
            }
            "--no-16bit-io" => options.target.storage_input_output_16 = false,
            "--quirk-nonuniform-array-length" => options.target.nonuniform_array_length_broken = true,
            "--oob-poison" => options.oob_poison = Some(parse_byte(it.next().ok_or("--oob-poison needs a byte")?)?),
            "--bindless-set" => {
                let n = it.next().ok_or("--bindless-set needs a set index")?;
                bindless_set = Some(n.parse::<u32>().map_err(|_| format!("`{n}` is not a set index"))?);
            }
            "--bindless-counts" => {
                let s = it.next().ok_or("--bindless-counts needs S,T,P")?;
                let v: Vec<u32> = s.split(',').map(|c| c.trim().parse::<u32>()).collect::<Result<_, _>>().map_err(|_| format!("`{s}` is not S,T,P"))?;
                bindless_counts = v.try_into().map_err(|_| format!("`{s}`: --bindless-counts takes three counts"))?;
                if bindless_counts.contains(&0) {
                    return Err("--bindless-counts: counts must be at least 1".into());
                }
            }
            "--set" => assignments.push(it.next().ok_or("--set needs NAME=VALUE")?.clone()),
            "-h" | "--help" => return Err(usage()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n{}", usage())),
            s => input = Some(s.to_string()),
        }
    }
    options.bindless = bindless_set.map(|set| BindlessTable {
        sampled_images_count: bindless_counts[0],
        storage_images_count: bindless_counts[1],
        samplers_count: bindless_counts[2],
        ..BindlessTable::with_defaults(set)
    });
    for a in &assignments {
        named_options::set_from_str(&mut options, a)?;
    }
    options.emulate_storage = SmallStorage::missing_from(&options.target);
    let input = input.ok_or_else(usage)?;
    let bytes = std::fs::read(&input).map_err(|e| format!("{input}: {e}"))?;
    let words = words_from_bytes(&bytes).map_err(|e| format!("{input}: {e}"))?;
    match cmd.as_str() {
        "scan" => {
            let s = scan(&words).map_err(|e| format!("{input}: {e}"))?;
            println!("{input}: RawAccessChainsNV {}", if s.raw_access_chains { "yes" } else { "no" });
            println!("{input}: BindlessTextureNV {}", if s.bindless_texture { "yes" } else { "no" });
            let caps = s.small_storage.names();
            println!("{input}: 8/16-bit storage {}", if caps.is_empty() { "none".to_string() } else { caps.join(", ") });
            Ok(())
        }
        "rewrite" => {
            let output = output.ok_or("rewrite needs -o OUT.spv")?;
            let start = std::time::Instant::now();
            let out = rewrite(&words, &options).map_err(|e| format!("{input}: {e}"))?;
            let elapsed = start.elapsed();
            let bytes: Vec<u8> = out.words.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::write(&output, bytes).map_err(|e| format!("{output}: {e}"))?;
            if stats {
                eprintln!("{input}: {} ({} → {} words, {:.1} µs)", out.stats, words.len(), out.words.len(), elapsed.as_secs_f64() * 1e6);
            }
            Ok(())
        }
        other => Err(format!("unknown command {other}\n{}", usage())),
    }
}
