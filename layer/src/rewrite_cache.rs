//! The rewrites a device has already made, by module. Applications hand the layer the same code
//! again and again: vkd3d-proton and DXVK give each pipeline its stages' code inline
//! (`VkShaderModuleCreateInfo` chained into `VkPipelineShaderStageCreateInfo`), so a shader that
//! many pipelines share arrives once per pipeline, and engines recreate modules they dropped. On
//! one device the rewrite is a pure function of the code (the device's options are fixed when it
//! is created, and the per-module adjustments depend on the code alone), so a repeat costs a
//! lookup, a comparison of the code and a copy instead of a rewrite.
//!
//! Bounded by the `rewrite_cache_mb` setting (the input and output words held), least recently
//! used out first; 0 turns it off. An entry is found by a hash of the code ([`key`]) and its length and
//! used only when its input words equal the code (a hash collision is a miss, never a wrong
//! module). Only successful rewrites are kept: a refusal is logged again each time.
use shader_rewrite::Stats;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// The cache's key for `code`: FxHash over its bytes, 8 at a time (a few hundred ns for a
/// 4 KiB module; the FNV-1a name of [`shader_rewrite::module_hash`] takes about 1 us a KiB).
pub fn key(code: &[u32]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    // SAFETY: the bytes of initialised u32s, within the slice.
    h.write(unsafe { std::slice::from_raw_parts(code.as_ptr() as *const u8, std::mem::size_of_val(code)) });
    h.finish()
}

struct Entry {
    input: Box<[u32]>,
    output: Box<[u32]>,
    stats: Stats,
    /// Its key in [`Inner::lru`].
    tick: u64,
}

impl Entry {
    fn bytes(&self) -> usize {
        // The words, and roughly what the two maps spend on it.
        (self.input.len() + self.output.len()) * 4 + std::mem::size_of::<Entry>() + 64
    }
}

#[derive(Default)]
struct Inner {
    /// By (hash, length in words).
    entries: HashMap<(u64, usize), Entry, std::hash::BuildHasherDefault<rustc_hash::FxHasher>>,
    /// Use order: tick → key (the first is the least recently used).
    lru: BTreeMap<u64, (u64, usize)>,
    next_tick: u64,
    bytes: usize,
}

pub struct RewriteCache {
    limit: usize,
    inner: Mutex<Inner>,
}

impl RewriteCache {
    /// A cache holding up to `limit` bytes (0: none; every lookup misses).
    pub fn new(limit: usize) -> Self {
        RewriteCache { limit, inner: Mutex::new(Inner::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while the lock was held was turned into an error result (ffi_guard); the map
        // is consistent between statements, so its state is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The rewrite of `code` (whose hash is `hash`), if this device made it before.
    pub fn get(&self, hash: u64, code: &[u32]) -> Option<(Vec<u32>, Stats)> {
        if self.limit == 0 {
            return None;
        }
        let mut inner = self.lock();
        let inner = &mut *inner;
        let key = (hash, code.len());
        let e = inner.entries.get_mut(&key).filter(|e| *e.input == *code)?;
        inner.lru.remove(&e.tick);
        e.tick = inner.next_tick;
        inner.next_tick += 1;
        inner.lru.insert(e.tick, key);
        Some((e.output.to_vec(), e.stats.clone()))
    }

    /// Keeps the rewrite of `code`, dropping the least recently used entries to stay within the
    /// limit (an entry larger than the whole limit is not kept).
    pub fn insert(&self, hash: u64, code: &[u32], output: &[u32], stats: &Stats) {
        let mut e = Entry { input: code.into(), output: output.into(), stats: stats.clone(), tick: 0 };
        let size = e.bytes();
        if size > self.limit {
            return;
        }
        let mut inner = self.lock();
        let inner = &mut *inner;
        let key = (hash, code.len());
        if let Some(old) = inner.entries.remove(&key) {
            inner.lru.remove(&old.tick);
            inner.bytes -= old.bytes();
        }
        while inner.bytes + size > self.limit {
            let Some((_, victim)) = inner.lru.pop_first() else { break };
            if let Some(old) = inner.entries.remove(&victim) {
                inner.bytes -= old.bytes();
            }
        }
        e.tick = inner.next_tick;
        inner.next_tick += 1;
        inner.lru.insert(e.tick, key);
        inner.bytes += size;
        inner.entries.insert(key, e);
    }

    /// (entries, bytes) held.
    pub fn usage(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.entries.len(), inner.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(n: u32) -> Stats {
        Stats { raw_chains: n, ..Default::default() }
    }

    #[test]
    fn hits_only_identical_code() {
        let c = RewriteCache::new(1 << 20);
        assert!(c.get(7, &[1, 2, 3]).is_none());
        c.insert(7, &[1, 2, 3], &[9, 9], &stats(1));
        assert_eq!(c.get(7, &[1, 2, 3]), Some((vec![9, 9], stats(1))));
        // Same hash and length, other code (a collision): a miss.
        assert!(c.get(7, &[1, 2, 4]).is_none());
        // Same hash, other length: a miss.
        assert!(c.get(7, &[1, 2]).is_none());
        // A colliding insert replaces the entry.
        c.insert(7, &[1, 2, 4], &[8], &stats(2));
        assert!(c.get(7, &[1, 2, 3]).is_none());
        assert_eq!(c.get(7, &[1, 2, 4]), Some((vec![8], stats(2))));
        assert_eq!(c.usage().0, 1);
    }

    #[test]
    fn off_at_zero() {
        let c = RewriteCache::new(0);
        c.insert(1, &[1], &[2], &stats(0));
        assert!(c.get(1, &[1]).is_none());
        assert_eq!(c.usage(), (0, 0));
    }

    #[test]
    fn least_recently_used_goes_first_and_bytes_stay_bounded() {
        let code = |k: u32| vec![k; 100];
        let one = Entry { input: code(0).into(), output: code(0).into(), stats: stats(0), tick: 0 }.bytes();
        let c = RewriteCache::new(3 * one);
        for k in 0..3 {
            c.insert(k as u64, &code(k), &code(k), &stats(k));
        }
        assert_eq!(c.usage(), (3, 3 * one));
        // 0 is used, so 1 is now the least recently used.
        assert!(c.get(0, &code(0)).is_some());
        c.insert(3, &code(3), &code(3), &stats(3));
        assert_eq!(c.usage(), (3, 3 * one));
        assert!(c.get(1, &code(1)).is_none(), "the least recently used entry was dropped");
        for k in [0, 2, 3] {
            assert_eq!(c.get(k as u64, &code(k)).map(|(_, s)| s), Some(stats(k)), "entry {k}");
        }
        // Too large for the whole cache: not kept, nothing dropped.
        c.insert(9, &vec![0; 1000], &[0], &stats(9));
        assert!(c.get(9, &vec![0; 1000]).is_none());
        assert_eq!(c.usage().0, 3);
    }
}
