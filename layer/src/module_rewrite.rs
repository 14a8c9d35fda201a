//! One SPIR-V module through the rewriter: the cheap capability scan decides; modules that need
//! nothing go down untouched (the application's own pointer); the rest are rewritten, dumped
//! (`dump_shaders_dir`) and logged, and kept for the next time the same code comes
//! (`crate::rewrite_cache`); failures are logged with the reason and reported so the
//! hook returns an error instead of handing the driver a module it cannot compile.
use crate::dispatch::DeviceData;
use crate::log::Level;
use crate::messages::{self, Object};
use crate::{log_debug, log_error, log_info};
use ash::vk;
use std::borrow::Cow;
use std::ffi::c_void;
use std::path::Path;
use std::time::Instant;

/// The result a hook returns when a module cannot be emulated.
pub const REWRITE_FAILED: vk::Result = vk::Result::ERROR_INVALID_SHADER_NV;

pub enum Prepared {
    /// Hand the application's code down as-is.
    PassThrough,
    /// Use these words instead.
    Rewritten(Vec<u32>),
    /// Logged already; return [`REWRITE_FAILED`].
    Failed,
}

pub use shader_rewrite::module_hash;
use shader_rewrite::module_hash64;

/// Writes `path` whole or not at all: into a file private to this thread, then renamed over
/// `path` (atomic on POSIX), so a tool or another thread reading the dump directory while
/// threads create the same module never sees a half-written file.
fn write_words(path: &Path, words: &[u32]) -> std::io::Result<()> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp.{}.{seq}", std::process::id()));
    std::fs::write(&tmp, bytes).and_then(|_| std::fs::rename(&tmp, path)).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

fn dump(dir: &Path, hash: &str, suffix: &str, words: &[u32]) {
    let path = dir.join(format!("{hash}.{suffix}.spv"));
    let r = std::fs::create_dir_all(dir).and_then(|_| write_words(&path, words));
    if let Err(e) = r {
        log_error!(DUMP_FAILED, "dump_shaders_dir: cannot write {}: {e}", path.display());
    }
}

/// The code as words, without reading out of bounds: null, empty or non-multiple-of-4 code is
/// `None` (passed down untouched; the driver / validation reports it). Unaligned pointers are
/// copied.
///
/// # Safety
/// `code` must be readable for `size` bytes when non-null.
unsafe fn words<'a>(code: *const c_void, size: usize) -> Option<Cow<'a, [u32]>> {
    if code.is_null() || size == 0 || !size.is_multiple_of(4) {
        return None;
    }
    let n = size / 4;
    if (code as usize).is_multiple_of(std::mem::align_of::<u32>()) {
        Some(Cow::Borrowed(std::slice::from_raw_parts(code as *const u32, n)))
    } else {
        Some(Cow::Owned((0..n).map(|i| std::ptr::read_unaligned((code as *const u32).add(i))).collect()))
    }
}

/// The cheap decision alone: does this code need rewriting under `options`? Unreadable code
/// counts as "no" (it goes down untouched, as in [`prepare`]).
///
/// # Safety
/// `code` must be readable for `size` bytes when non-null.
pub unsafe fn needs_rewrite(options: Option<&shader_rewrite::Options>, code: *const c_void, size: usize) -> bool {
    let Some(options) = options else { return false };
    words(code, size).is_some_and(|w| shader_rewrite::needs_rewrite(&w, options))
}

/// What the code declares (capabilities the layer emulates), or None when it is unreadable.
///
/// # Safety
/// `code` must be readable for `size` bytes when non-null.
pub unsafe fn scan(code: *const c_void, size: usize) -> Option<shader_rewrite::ScanResult> {
    words(code, size).and_then(|w| shader_rewrite::scan(&w).ok())
}

/// `options` without lavapipe's array-length workaround when the module has an entry point in a
/// stage without subgroup ballot (crate::subgroup_stages), else None (use `options`).
fn without_unsupported_quirk(
    dev: &DeviceData,
    hook: &str,
    hash: &str,
    words: &[u32],
    options: &shader_rewrite::Options,
) -> Option<shader_rewrite::Options> {
    if !options.target.nonuniform_array_length_broken {
        return None;
    }
    let stages = crate::subgroup_stages::entry_point_stages(words);
    if dev.subgroup_ballot_stages.contains(stages) {
        return None;
    }
    log_debug!(
        TRACE,
        "{hook}: device '{}': module {hash} has entry points in {stages:?}, where the device has no subgroup ballot ({:?}): rewritten without the array-length workaround",
        dev.name,
        dev.subgroup_ballot_stages
    );
    let mut o = *options;
    o.target.nonuniform_array_length_broken = false;
    Some(o)
}

/// A module's name in dumps and logs (its hash, [`module_hash`]) and the object messages about
/// it name (it has no handle yet).
fn named(words: &[u32]) -> (String, Object) {
    let h = module_hash64(words);
    (format!("{h:016x}"), Object { ty: vk::ObjectType::SHADER_MODULE, handle: 0, module_hash: h })
}

/// Dumps (`dump_shaders_dir`) and logs a rewrite of `words` into `out`, made (or found in the
/// rewrite cache) from `start` on: the logged time is the rewrite's, or the lookup's.
#[allow(clippy::too_many_arguments)]
fn report(dev: &DeviceData, hook: &str, hash: &str, words: &[u32], out: &[u32], stats: &shader_rewrite::Stats, start: Instant, from_cache: bool) {
    let us = start.elapsed().as_micros();
    if let Some(dir) = dev.settings.dump_shaders_dir.as_deref() {
        // A fresh rewrite's input was dumped before it started (also kept when it fails).
        if from_cache {
            dump(dir, hash, "before", words);
        }
        dump(dir, hash, "after", out);
    }
    log_info!(
        SHADER_REWRITTEN,
        "{hook}: device '{}': rewrote module {hash} ({} -> {} words) in {us} us{}: {stats}",
        dev.name,
        words.len(),
        out.len(),
        if from_cache { " (from the rewrite cache)" } else { "" },
    );
}

/// Decides and (if needed) rewrites one module for `dev`. `hook` names the caller in logs.
///
/// # Safety
/// `code` must be readable for `size` bytes when non-null.
pub unsafe fn prepare(dev: &DeviceData, hook: &str, code: *const c_void, size: usize) -> Prepared {
    let Some(options) = dev.options.as_ref() else { return Prepared::PassThrough };
    let Some(words) = words(code, size) else {
        log_debug!(SHADER_PASSED, "{hook}: code size {size} / pointer {code:?} is not a SPIR-V word stream; passed down untouched");
        return Prepared::PassThrough;
    };
    match shader_rewrite::scan(&words) {
        Err(e) => {
            log_debug!(TRACE, "{hook}: scan cannot read the module ({e}); passed down untouched");
            return Prepared::PassThrough;
        }
        Ok(found) if !found.any(options) => {
            log_debug!(SHADER_PASSED, "{hook}: module needs no emulation; passed down untouched");
            return Prepared::PassThrough;
        }
        Ok(_) => {}
    }
    // The device rewrote this code before: the same words again (crate::rewrite_cache), named
    // (its FNV hash, about 1 us a KiB) only when a dump or a message will show the name.
    let key = crate::rewrite_cache::key(&words);
    let looked_up = Instant::now();
    if let Some((out, stats)) = dev.rewrite_cache.get(key, &words) {
        if dev.settings.dump_shaders_dir.is_some() || messages::wanted(Level::Info) {
            let (hash, module) = named(&words);
            let _in_scope = messages::with_object(module);
            report(dev, hook, &hash, &words, &out, &stats, looked_up, true);
        }
        return Prepared::Rewritten(out);
    }
    let (hash, module) = named(&words);
    let _in_scope = messages::with_object(module);
    if let Some(dir) = dev.settings.dump_shaders_dir.as_deref() {
        dump(dir, &hash, "before", &words);
    }
    let adjusted = without_unsupported_quirk(dev, hook, &hash, &words, options);
    let start = Instant::now();
    match shader_rewrite::rewrite(&words, adjusted.as_ref().unwrap_or(options)) {
        Ok(out) => {
            dev.rewrite_cache.insert(key, &words, &out.words, &out.stats);
            report(dev, hook, &hash, &words, &out.words, &out.stats, start, false);
            Prepared::Rewritten(out.words)
        }
        Err(e) => {
            log_error!(
                SHADER_REFUSED,
                "{hook}: device '{}': module {hash} cannot be emulated: {e}; returning {REWRITE_FAILED:?}",
                dev.name
            );
            Prepared::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64() {
        // FNV-1a 64 of the empty input is the offset basis; of bytes 00 00 00 00 a known value.
        assert_eq!(module_hash(&[]), "cbf29ce484222325");
        let mut h: u64 = 0xcbf29ce484222325;
        for b in [0x03u8, 0x02, 0x23, 0x07] {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        assert_eq!(module_hash(&[0x0723_0203]), format!("{h:016x}"));
        assert_eq!(module_hash(&[1]).len(), 16);
    }

    #[test]
    fn words_bounds() {
        let data = [0x0723_0203u32, 0x0001_0300, 0, 1, 0];
        unsafe {
            assert!(words(std::ptr::null(), 20).is_none());
            assert!(words(data.as_ptr() as *const c_void, 0).is_none());
            assert!(words(data.as_ptr() as *const c_void, 7).is_none());
            assert_eq!(words(data.as_ptr() as *const c_void, 20).unwrap().as_ref(), &data);
            let bytes: Vec<u8> = std::iter::once(0u8).chain(data.iter().flat_map(|w| w.to_le_bytes())).collect();
            let unaligned = bytes.as_ptr().add(1) as *const c_void;
            assert_eq!(words(unaligned, 20).unwrap().as_ref(), &data);
        }
    }
}
