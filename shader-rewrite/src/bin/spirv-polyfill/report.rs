//! What `scan` and `targets` print.
use std::fmt::Write as _;

use shader_rewrite::location::describe;
use shader_rewrite::named_options::{Kind, NAMED_OPTIONS};
use shader_rewrite::{requirements, rewrite, scan as scan_module, Options, ScanResult, SmallStorage};

use crate::cli::ScanArgs;
use crate::io::{self, Failure};

/// `scan`: for each input, the emulated features it declares, what a rewrite for the target
/// lowers and keeps, and the device features the rewritten module needs. Inputs that cannot be
/// read, are not SPIR-V or cannot be rewritten are reported on standard error (exit 1) after
/// the others were scanned.
pub fn scan(args: &ScanArgs) -> Result<(), Failure> {
    if args.inputs.iter().filter(|i| *i == "-").count() > 1 {
        return Err(Failure::Usage("standard input (-) can be scanned only once".into()));
    }
    let options = args.target.options();
    let mut failed = false;
    for input in &args.inputs {
        let mut text = String::new();
        let outcome = scan_one(input, &options, &mut text);
        io::print(text.as_bytes())?;
        match outcome {
            Ok(()) => {}
            Err(Failure::Failed(message)) => {
                io::error(&message);
                failed = true;
            }
            Err(other) => return Err(other),
        }
    }
    if failed {
        Err(Failure::Reported)
    } else {
        Ok(())
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn list(items: &[String], empty: &str) -> String {
    if items.is_empty() {
        empty.to_string()
    } else {
        items.join(", ")
    }
}

fn scan_one(input: &str, options: &Options, out: &mut String) -> Result<(), Failure> {
    let words = crate::load(input)?;
    let name = io::name(input);
    let found = scan_module(&words).map_err(|e| Failure::Failed(format!("{name}: {}", describe(&words, &e).0)))?;
    let storage = found.small_storage.names();
    let _ = writeln!(out, "{name}: RawAccessChainsNV: {}", yes(found.raw_access_chains));
    let _ = writeln!(out, "{name}: BindlessTextureNV: {}", yes(found.bindless_texture));
    let _ = writeln!(out, "{name}: PhysicalStorageBufferAddresses: {}", yes(found.physical_storage_buffer));
    let _ = writeln!(out, "{name}: 8/16-bit storage: {}", list(&storage.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "none"));
    let (lowered, kept) = plan(&found, options);
    let _ = writeln!(out, "{name}: lowered: {}", list(&lowered, "nothing"));
    if !kept.is_empty() {
        let _ = writeln!(out, "{name}: kept: {}", kept.join(", "));
    }
    let rewritten = rewrite(&words, options).map_err(|e| Failure::Failed(format!("{name}: cannot be rewritten: {}", describe(&words, &e).0)))?;
    let needs: Vec<String> = requirements::of_rewrite(&rewritten, options).into_iter().map(String::from).collect();
    let _ = writeln!(out, "{name}: output needs: {}", list(&needs, "no optional device feature"));
    Ok(())
}

/// (lowered, kept with the reason) for what `found` declares, under `options`.
fn plan(found: &ScanResult, options: &Options) -> (Vec<String>, Vec<String>) {
    let (mut lowered, mut kept) = (Vec::new(), Vec::new());
    let mut sort = |declared: bool, lower: bool, what: String, why_not: &str| {
        if declared && lower {
            lowered.push(what);
        } else if declared {
            kept.push(format!("{what} ({why_not})"));
        }
    };
    sort(found.raw_access_chains, options.emulate_raw_access_chains, "RawAccessChainsNV".into(), "--no-raw-access-chains");
    for cap in SmallStorage::CAPS {
        let one = single(cap);
        sort(found.small_storage.get(cap), options.emulate_storage.get(cap), one.names()[0].to_string(), "the target has it");
    }
    let bindless = options.bindless.map(|t| format!("BindlessTextureNV (table in set {})", t.set));
    sort(found.bindless_texture, bindless.is_some(), bindless.unwrap_or_else(|| "BindlessTextureNV".into()), "no bindless table: --bindless-set");
    let bda = options.bda.map(|t| format!("PhysicalStorageBufferAddresses (table in set {}, binding {}, {} slots; {} addresses)", t.set, t.binding, t.count, address_type(options)));
    sort(found.physical_storage_buffer, bda.is_some(), bda.unwrap_or_else(|| "PhysicalStorageBufferAddresses".into()), "no buffer-device-address table: --bda-set");
    (lowered, kept)
}

/// What a rewrite under `options` leaves in the module for want of a table (the layer lowers it
/// where it emulates the feature): said on standard error by `rewrite`, which exits 0.
pub fn left_alone(words: &[u32], options: &Options) -> Vec<&'static str> {
    let Ok(found) = scan_module(words) else { return Vec::new() };
    let mut notes = Vec::new();
    if found.bindless_texture && options.bindless.is_none() {
        notes.push("BindlessTextureNV kept: give --bindless-set to lower it onto a descriptor table");
    }
    if found.physical_storage_buffer && options.bda.is_none() {
        notes.push("PhysicalStorageBuffer pointers kept (the output needs bufferDeviceAddress): give --bda-set to lower them onto a table of storage buffers");
    }
    notes
}

fn single(cap: u32) -> SmallStorage {
    let mut s = SmallStorage::default();
    s.set(cap, true);
    s
}

fn address_type(options: &Options) -> &'static str {
    if options.target.int64 {
        "u64"
    } else {
        "uvec2 (no int64)"
    }
}

/// `targets`: every named option's value under `options`, and what a rewrite lowers and how.
pub fn targets(options: &Options) -> String {
    let mut out = String::from("Named options (--set NAME=VALUE; spvpf_options_set_bool / spvpf_options_set_uint in C):\n");
    let width = NAMED_OPTIONS.iter().map(|o| o.name.len()).max().unwrap_or(0);
    for o in NAMED_OPTIONS {
        let value = match (o.get(options), o.kind) {
            (None, _) => "off".to_string(),
            (Some(v), Kind::Bool) => v.to_string(),
            (Some(v), Kind::Uint) if o.name == "oob_poison" => format!("{v:#04x}"),
            (Some(v), Kind::Uint) => v.to_string(),
        };
        let _ = writeln!(out, "  {:<width$}  {value:<6}  {}", o.name, o.help);
    }
    let storage: Vec<String> = options.emulate_storage.names().into_iter().map(String::from).collect();
    let _ = writeln!(out, "Lowered for this target:");
    let vectors = options.target.robust_vector_components;
    let raw = match (options.emulate_raw_access_chains, options.component_bounds_by_driver()) {
        (false, _) => "no",
        (true, true) if vectors => "yes (per-component accesses of one scalar access per component, and vectors of 32/64-bit components, leave their checks to the driver's robustBufferAccess2, which checks each component)",
        (true, true) => "yes (per-component accesses made of one scalar access per component leave their checks to the driver's robustBufferAccess2)",
        (true, false) => "yes (every bounds check in the shader)",
    };
    let _ = writeln!(out, "  OpRawAccessChainNV: {raw}");
    let _ = writeln!(out, "  8/16-bit storage capabilities: {}", list(&storage, "none (the target has every one)"));
    let bindless = match options.bindless {
        None => "no (no table: --bindless-set)".to_string(),
        Some(t) => format!(
            "onto set {}: sampled images at binding {} ({}), storage images at {} ({}), samplers at {} ({})",
            t.set, t.sampled_images_binding, t.sampled_images_count, t.storage_images_binding, t.storage_images_count, t.samplers_binding, t.samplers_count
        ),
    };
    let _ = writeln!(out, "  SPV_NV_bindless_texture: {bindless}");
    let bda = match options.bda {
        None => "no (no table: --bda-set)".to_string(),
        Some(t) => format!("onto set {}, binding {} ({} storage buffers); addresses carried as {}", t.set, t.binding, t.count, address_type(options)),
    };
    let _ = writeln!(out, "  PhysicalStorageBuffer pointers: {bda}");
    out
}
