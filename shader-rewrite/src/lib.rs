//! `shader-rewrite`: turns SPIR-V modules that use extensions a device lacks into
//! core-equivalent SPIR-V. Knows nothing about Vulkan: the caller describes the target
//! device with [`Target`] and gets words back.
//!
//! Entry points:
//! - [`scan`] / [`needs_rewrite`]: a cheap look at the capability section only, so modules that
//!   need nothing can be passed on byte-identical without a full parse.
//! - [`rewrite`]: the full lowering; deterministic (same input + options → same output).

pub mod bda;
pub mod error;
pub mod location;
pub mod module;
pub mod named_options;
pub mod requirements;
pub mod scan;
pub mod target;
pub mod stats;
pub mod builder;
pub mod byte_address;
pub mod passes;

pub use bda::BdaTable;
pub use error::RewriteError;
pub use scan::{needs_rewrite, scan, ScanResult};
pub use stats::Stats;
pub use target::{BindlessTable, Options, SmallStorage, Target};

/// The result of a successful rewrite.
#[derive(Debug, Clone)]
pub struct Rewritten {
    /// The rewritten module (a valid SPIR-V word stream, header included).
    pub words: Vec<u32>,
    /// What was lowered.
    pub stats: Stats,
}

/// Rewrites `words` (a whole SPIR-V module, header included) so that it no longer needs any
/// capability the target lacks and this library emulates. A module that needs nothing is
/// returned unchanged (a copy of the input) with empty stats.
pub fn rewrite(words: &[u32], options: &Options) -> Result<Rewritten, RewriteError> {
    let found = scan(words)?;
    if !found.any(options) {
        return Ok(Rewritten { words: words.to_vec(), stats: Stats::default() });
    }
    let mut module = module::Module::parse(words)?;
    let mut stats = Stats::default();
    // After each pass, a structural check (passes::check) turns a shape the pass let through
    // unhandled into an error instead of a module the driver chokes on.
    use passes::check::{after, Pass};
    let bda = options.bda.filter(|_| found.physical_storage_buffer);
    // The physical-pointer lowering cannot follow a raw chain on a physical base, so a module
    // it lowers has its raw chains lowered too, even for a target that has them (buffer device
    // addresses forced on NVIDIA).
    if found.raw_access_chains && (options.emulate_raw_access_chains || bda.is_some()) {
        passes::raw_access_chains::run(&mut module, options, &mut stats)?;
        after(&module, Pass::RawAccessChains)?;
    }
    let lowered_storage = Pass::SmallStorage(found.small_storage.and(&options.emulate_storage));
    let small_storage = found.small_storage.intersects(&options.emulate_storage);
    // Physical pointers are lowered after raw chains (which turn raw chains on physical bases
    // into address arithmetic) and bindless handles (which may live in physical memory), and
    // before the 8/16-bit lowering (which would widen the types in physical memory, changing
    // its layout, and emulates the 8/16-bit accesses this pass leaves).
    if small_storage && bda.is_none() {
        passes::small_storage::run(&mut module, options, &mut stats)?;
        after(&module, lowered_storage)?;
    }
    if let (true, Some(table)) = (found.bindless_texture, options.bindless) {
        passes::bindless::run(&mut module, &table, options, &mut stats)?;
        after(&module, Pass::Bindless)?;
    }
    if let Some(table) = bda {
        passes::physical_storage_buffer::run(&mut module, &table, options, &mut stats)?;
        after(&module, Pass::PhysicalStorageBuffer)?;
        if small_storage {
            passes::small_storage::run(&mut module, options, &mut stats)?;
            after(&module, lowered_storage)?;
        }
    }
    // Debug info naming what a lowering took away goes (it has no semantic impact).
    stats.non_semantic_dropped += passes::non_semantic::drop_dangling(&mut module) as u32;
    stats.non_semantic_dropped += passes::non_semantic::place_after_operands(&mut module) as u32;
    // The lowering allocates fresh ids past the input's bound; an input already near the
    // universal limit can be pushed over it, and the result would be invalid SPIR-V.
    if module.header[3] > module::MAX_ID_BOUND {
        return Err(RewriteError::unsupported(
            "module",
            format!("the lowering needs an id bound of {}, above SPIR-V's limit of {}", module.header[3], module::MAX_ID_BOUND),
        ));
    }
    Ok(Rewritten { words: module.assemble(), stats })
}

/// FNV-1a 64 over a module's bytes (little-endian words), as 16 hex digits: the name the layer
/// gives a module in its logs and shader dumps (`<hash>.before.spv` / `<hash>.after.spv`).
pub fn module_hash(words: &[u32]) -> String {
    format!("{:016x}", module_hash64(words))
}

/// [`module_hash`] as a number.
pub fn module_hash64(words: &[u32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for b in w.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Convenience: rewrite from a little-endian byte buffer (as a file holds it).
pub fn words_from_bytes(bytes: &[u8]) -> Result<Vec<u32>, RewriteError> {
    if !bytes.len().is_multiple_of(4) {
        return Err(RewriteError::malformed(0, format!("code size {} is not a multiple of 4", bytes.len())));
    }
    let mut words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if words.first() == Some(&crate::module::MAGIC.swap_bytes()) {
        // Big-endian file: SPIR-V allows either byte order (spec 3.1 "Magic Number").
        for w in &mut words {
            *w = w.swap_bytes();
        }
    }
    Ok(words)
}
