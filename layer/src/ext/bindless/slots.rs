//! Slot allocation in the layer's descriptor table.
//!
//! Three independent slot spaces (sampled images, storage images, samplers), each with slot 0
//! reserved so that handle 0 never names a live view. A handle is requested per key (image
//! view, descriptor type, sampler); asking again for the same key returns the same handle.
//! Slots are shared and reference-counted: the sampled-image slot of a view serves its
//! SAMPLED_IMAGE handle and all its COMBINED_IMAGE_SAMPLER handles, a sampler slot serves every
//! combined handle with that sampler. Destroying a view (or a sampler) releases every key that
//! names it; a slot whose count drops to zero goes on a free list and is reused.
//!
//! Pure bookkeeping (no Vulkan calls): the caller writes the descriptors [`Acquired::New`]
//! lists, and writes the filler (null image / default sampler) back into every slot a release
//! returns in [`Released::freed`], under the same lock (so a freed slot is never handed out and
//! rewritten by another thread while its filler is being written).
use crate::tables::slot_space::SlotSpace as Space;
use shader_rewrite::BindlessTable;
use std::collections::HashMap;

/// Which image array a slot lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageKind {
    Sampled,
    Storage,
}

/// What the application asked for (`VkImageViewHandleInfoNVX`, raw handle values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub view: u64,
    pub kind: KeyKind,
    /// Non-zero only for [`KeyKind::Combined`].
    pub sampler: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    SampledImage,
    StorageImage,
    CombinedImageSampler,
}

/// A descriptor that must be written because its slot was just taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    Image { kind: ImageKind, slot: u32, view: u64 },
    Sampler { slot: u32, sampler: u64 },
}

/// A slot that went back to the free list: its descriptor must get the filler again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freed {
    Image { kind: ImageKind, slot: u32 },
    Sampler { slot: u32 },
}

/// What a release did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Released {
    /// Keys (handles) released.
    pub keys: usize,
    /// Slots whose reference count dropped to zero.
    pub freed: Vec<Freed>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// The key had a handle already.
    Existing(u32),
    /// A new handle; write these descriptors before returning it.
    New { handle: u32, writes: Vec<Write> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotError {
    /// The named array is full.
    Exhausted(&'static str),
}

#[derive(Debug, Clone, Copy)]
struct Counted {
    slot: u32,
    refs: u32,
}

#[derive(Debug)]
pub struct Slots {
    sampled: Space,
    storage: Space,
    samplers: Space,
    images: HashMap<(u64, ImageKind), Counted>,
    sampler_slots: HashMap<u64, Counted>,
    keys: HashMap<Key, u32>,
    by_view: HashMap<u64, Vec<Key>>,
    by_sampler: HashMap<u64, Vec<Key>>,
}

impl Slots {
    /// Capacities are the array sizes (slot 0 included, never handed out).
    pub fn new(sampled: u32, storage: u32, samplers: u32) -> Slots {
        Slots {
            sampled: Space::new(sampled),
            storage: Space::new(storage),
            samplers: Space::new(samplers),
            images: HashMap::new(),
            sampler_slots: HashMap::new(),
            keys: HashMap::new(),
            by_view: HashMap::new(),
            by_sampler: HashMap::new(),
        }
    }

    /// Slots in use: (sampled images, storage images, samplers).
    pub fn in_use(&self) -> (u32, u32, u32) {
        (self.sampled.in_use(), self.storage.in_use(), self.samplers.in_use())
    }

    fn space(&mut self, kind: ImageKind) -> &mut Space {
        match kind {
            ImageKind::Sampled => &mut self.sampled,
            ImageKind::Storage => &mut self.storage,
        }
    }

    /// Takes a reference on the view's image slot; `Some(write)` when the slot is new.
    fn take_image(&mut self, view: u64, kind: ImageKind) -> Result<(u32, Option<Write>), SlotError> {
        if let Some(c) = self.images.get_mut(&(view, kind)) {
            c.refs += 1;
            return Ok((c.slot, None));
        }
        let name = match kind {
            ImageKind::Sampled => "sampled-image",
            ImageKind::Storage => "storage-image",
        };
        let slot = self.space(kind).alloc().ok_or(SlotError::Exhausted(name))?;
        self.images.insert((view, kind), Counted { slot, refs: 1 });
        Ok((slot, Some(Write::Image { kind, slot, view })))
    }

    fn drop_image(&mut self, view: u64, kind: ImageKind) -> Option<Freed> {
        let c = self.images.get_mut(&(view, kind))?;
        c.refs -= 1;
        if c.refs != 0 {
            return None;
        }
        let slot = c.slot;
        self.images.remove(&(view, kind));
        self.space(kind).release(slot);
        Some(Freed::Image { kind, slot })
    }

    fn take_sampler(&mut self, sampler: u64) -> Result<(u32, Option<Write>), SlotError> {
        if let Some(c) = self.sampler_slots.get_mut(&sampler) {
            c.refs += 1;
            return Ok((c.slot, None));
        }
        let slot = self.samplers.alloc().ok_or(SlotError::Exhausted("sampler"))?;
        self.sampler_slots.insert(sampler, Counted { slot, refs: 1 });
        Ok((slot, Some(Write::Sampler { slot, sampler })))
    }

    fn drop_sampler(&mut self, sampler: u64) -> Option<Freed> {
        let c = self.sampler_slots.get_mut(&sampler)?;
        c.refs -= 1;
        if c.refs != 0 {
            return None;
        }
        let slot = c.slot;
        self.sampler_slots.remove(&sampler);
        self.samplers.release(slot);
        Some(Freed::Sampler { slot })
    }

    /// The handle for `key`, allocating slots on first use.
    pub fn acquire(&mut self, key: Key) -> Result<Acquired, SlotError> {
        if let Some(h) = self.keys.get(&key) {
            return Ok(Acquired::Existing(*h));
        }
        let mut writes = Vec::new();
        let handle = match key.kind {
            KeyKind::SampledImage | KeyKind::StorageImage => {
                let kind = if key.kind == KeyKind::SampledImage { ImageKind::Sampled } else { ImageKind::Storage };
                let (slot, w) = self.take_image(key.view, kind)?;
                writes.extend(w);
                BindlessTable::handle(slot, 0)
            }
            KeyKind::CombinedImageSampler => {
                let (slot, w) = self.take_image(key.view, ImageKind::Sampled)?;
                let (sampler_slot, sw) = match self.take_sampler(key.sampler) {
                    Ok(x) => x,
                    Err(e) => {
                        // A slot taken just now was never written: nothing to refill.
                        let _ = self.drop_image(key.view, ImageKind::Sampled);
                        return Err(e);
                    }
                };
                writes.extend(w);
                writes.extend(sw);
                BindlessTable::handle(slot, sampler_slot)
            }
        };
        self.keys.insert(key, handle);
        self.by_view.entry(key.view).or_default().push(key);
        if key.kind == KeyKind::CombinedImageSampler {
            self.by_sampler.entry(key.sampler).or_default().push(key);
        }
        Ok(Acquired::New { handle, writes })
    }

    fn release_key(&mut self, key: Key, freed: &mut Vec<Freed>) {
        if self.keys.remove(&key).is_none() {
            return;
        }
        match key.kind {
            KeyKind::SampledImage => freed.extend(self.drop_image(key.view, ImageKind::Sampled)),
            KeyKind::StorageImage => freed.extend(self.drop_image(key.view, ImageKind::Storage)),
            KeyKind::CombinedImageSampler => {
                freed.extend(self.drop_image(key.view, ImageKind::Sampled));
                freed.extend(self.drop_sampler(key.sampler));
            }
        }
    }

    /// Releases every key naming `view`; the caller refills [`Released::freed`] before
    /// unlocking.
    pub fn release_view(&mut self, view: u64) -> Released {
        let mut freed = Vec::new();
        let keys = self.by_view.remove(&view).unwrap_or_default();
        for k in &keys {
            if k.kind == KeyKind::CombinedImageSampler {
                if let Some(list) = self.by_sampler.get_mut(&k.sampler) {
                    list.retain(|x| x != k);
                    if list.is_empty() {
                        self.by_sampler.remove(&k.sampler);
                    }
                }
            }
            self.release_key(*k, &mut freed);
        }
        Released { keys: keys.len(), freed }
    }

    /// Releases every key naming `sampler`; the caller refills [`Released::freed`] before
    /// unlocking.
    pub fn release_sampler(&mut self, sampler: u64) -> Released {
        let mut freed = Vec::new();
        let keys = self.by_sampler.remove(&sampler).unwrap_or_default();
        for k in &keys {
            if let Some(list) = self.by_view.get_mut(&k.view) {
                list.retain(|x| x != k);
                if list.is_empty() {
                    self.by_view.remove(&k.view);
                }
            }
            self.release_key(*k, &mut freed);
        }
        Released { keys: keys.len(), freed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampled(view: u64) -> Key {
        Key { view, kind: KeyKind::SampledImage, sampler: 0 }
    }
    fn storage(view: u64) -> Key {
        Key { view, kind: KeyKind::StorageImage, sampler: 0 }
    }
    fn combined(view: u64, sampler: u64) -> Key {
        Key { view, kind: KeyKind::CombinedImageSampler, sampler }
    }
    fn new_handle(a: Acquired) -> u32 {
        match a {
            Acquired::New { handle, .. } => handle,
            Acquired::Existing(h) => panic!("expected a new handle, got existing {h:#x}"),
        }
    }

    #[test]
    fn slot_zero_reserved_and_stable_per_key() {
        let mut s = Slots::new(4, 4, 4);
        let a = s.acquire(sampled(10)).unwrap();
        assert_eq!(a, Acquired::New { handle: 1, writes: vec![Write::Image { kind: ImageKind::Sampled, slot: 1, view: 10 }] });
        assert_eq!(s.acquire(sampled(10)).unwrap(), Acquired::Existing(1));
        // Storage images have their own slot space.
        assert_eq!(new_handle(s.acquire(storage(10)).unwrap()), 1);
        assert_eq!(new_handle(s.acquire(sampled(11)).unwrap()), 2);
        assert_eq!(s.in_use(), (2, 1, 0));
    }

    #[test]
    fn combined_shares_slots() {
        let mut s = Slots::new(8, 8, 8);
        let h_plain = new_handle(s.acquire(sampled(10)).unwrap());
        let a = s.acquire(combined(10, 77)).unwrap();
        // The view's sampled slot exists already: only the sampler descriptor is written.
        assert_eq!(a, Acquired::New { handle: BindlessTable::handle(1, 1), writes: vec![Write::Sampler { slot: 1, sampler: 77 }] });
        assert_eq!(h_plain, 1);
        let h2 = new_handle(s.acquire(combined(11, 77)).unwrap());
        assert_eq!(h2, BindlessTable::handle(2, 1));
        assert_eq!(h2 >> 20, 1);
        assert_eq!(s.in_use(), (2, 0, 1));
    }

    #[test]
    fn release_by_view_and_reuse() {
        let mut s = Slots::new(8, 8, 8);
        new_handle(s.acquire(sampled(10)).unwrap());
        new_handle(s.acquire(combined(10, 77)).unwrap());
        new_handle(s.acquire(storage(10)).unwrap());
        new_handle(s.acquire(sampled(11)).unwrap());
        assert_eq!(
            s.release_view(10),
            Released {
                keys: 3,
                freed: vec![
                    Freed::Image { kind: ImageKind::Sampled, slot: 1 },
                    Freed::Sampler { slot: 1 },
                    Freed::Image { kind: ImageKind::Storage, slot: 1 }
                ]
            }
        );
        assert_eq!(s.in_use(), (1, 0, 0));
        assert_eq!(s.release_view(10), Released::default());
        // Slot 1 is reused by the next view.
        assert_eq!(new_handle(s.acquire(sampled(12)).unwrap()), 1);
        // The sampler slot was released too (its only key named view 10).
        assert_eq!(new_handle(s.acquire(combined(12, 78)).unwrap()), BindlessTable::handle(1, 1));
    }

    #[test]
    fn release_by_sampler() {
        let mut s = Slots::new(8, 8, 8);
        new_handle(s.acquire(combined(10, 77)).unwrap());
        new_handle(s.acquire(combined(11, 77)).unwrap());
        new_handle(s.acquire(combined(11, 78)).unwrap());
        assert_eq!(s.in_use(), (2, 0, 2));
        let r = s.release_sampler(77);
        assert_eq!(r.keys, 2);
        // View 11's image slot stays (its key with sampler 78 holds it).
        assert_eq!(r.freed, vec![Freed::Image { kind: ImageKind::Sampled, slot: 1 }, Freed::Sampler { slot: 1 }]);
        // View 10's slot had only that key; view 11 keeps its slot for the key with sampler 78.
        assert_eq!(s.in_use(), (1, 0, 1));
        assert_eq!(s.acquire(combined(11, 78)).unwrap(), Acquired::Existing(BindlessTable::handle(2, 2)));
        // Releasing the view afterwards finds only the remaining key.
        assert_eq!(s.release_view(11).keys, 1);
        assert_eq!(s.in_use(), (0, 0, 0));
    }

    #[test]
    fn exhaustion_is_an_error_and_rolls_back() {
        let mut s = Slots::new(3, 2, 2);
        new_handle(s.acquire(sampled(1)).unwrap());
        new_handle(s.acquire(sampled(2)).unwrap());
        assert_eq!(s.acquire(sampled(3)), Err(SlotError::Exhausted("sampled-image")));
        new_handle(s.acquire(storage(1)).unwrap());
        assert_eq!(s.acquire(storage(2)), Err(SlotError::Exhausted("storage-image")));
        // One sampler slot (slot 0 reserved): the second sampler fails and the combined key's
        // image reference is rolled back.
        new_handle(s.acquire(combined(1, 50)).unwrap());
        assert_eq!(s.acquire(combined(2, 51)), Err(SlotError::Exhausted("sampler")));
        assert_eq!(s.in_use(), (2, 1, 1));
        s.release_view(2);
        assert_eq!(s.in_use(), (1, 1, 1));
        new_handle(s.acquire(sampled(3)).unwrap());
    }
}
