//! pNext chains: a deep copy the layer can edit without touching the application's structures
//! (valid usage makes every input structure `const` for the implementation; VkDeviceCreateInfo's
//! chain is the application's memory).
//!
//! Known structures — every sType of the Vulkan registry the table in `struct_sizes.rs` was
//! generated from, plus the loader's link structs — are copied node by node.
//!
//! A structure *unknown* to the table (newer than its registry, or a private one) cannot be
//! copied: its size is unknown. Two ways to go on, chosen per node:
//! - [`Chain::copy`] (shader stages and other per-object chains): stop at the first unknown node;
//!   it and everything after it stay the application's own memory, linked as-is ("the tail").
//! - [`Chain::copy_splicing`] (vkCreateDevice): keep the unknown node in place, and go on copying
//!   what follows it. For the down-call ([`Chain::splice`]) the layer points the unknown node's
//!   own `pNext` (always at offset 8: every structure starts with sType and pNext) at its copy of
//!   the rest, and restores the original pointer when the call returns, so the driver sees the
//!   application's unknown structure followed by the edited remainder. This writes to the
//!   application's memory for the duration of the call, so it is done only where that is
//!   possible without a fault (the page is writable: [`writable`]) and only under
//!   [`AppChainLock`], which every reader of a VkDeviceCreateInfo chain in the layer holds
//!   (two threads may pass the same `const` chain to vkCreateDevice at once; a thread must never
//!   read another's spliced pointer). An unknown node in read-only memory cannot be spliced: the
//!   copy stops there and it becomes the tail, as with `copy`.
//!
//! What remains impossible: editing a structure that sits behind an unknown structure in
//! read-only memory (callers see it through [`Chain::tail_contains`] and refuse the call where
//! the driver would otherwise see an emulated feature or a layer structure); and keeping the
//! application's memory untouched *during* the call when a newer structure is spliced (another
//! application thread reading its own chain meanwhile sees the layer's pointer, which leads to
//! an equivalent chain). Learning an unknown structure's size instead (e.g. from the bytes the
//! driver's vkGetPhysicalDeviceFeatures2 writes into a sentinel-filled buffer) was rejected: it
//! works only for feature structures, and a size learned short of the real one would hand the
//! driver a truncated copy.
use ash::vk;
use std::ffi::c_void;
use std::mem::size_of;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// `VkLayerInstanceCreateInfo` (vk_layer.h): sType, pNext, function, union (largest member: two
/// function pointers).
const LAYER_INSTANCE_CREATE_INFO_SIZE: usize = 40;
/// `VkLayerDeviceCreateInfo` (vk_layer.h): sType, pNext, function, union of one pointer.
const LAYER_DEVICE_CREATE_INFO_SIZE: usize = 32;

/// Size of a structure by sType, including the loader's private link structures.
pub fn struct_size(s_type: vk::StructureType) -> Option<usize> {
    match s_type {
        vk::StructureType::LOADER_INSTANCE_CREATE_INFO => Some(LAYER_INSTANCE_CREATE_INFO_SIZE),
        vk::StructureType::LOADER_DEVICE_CREATE_INFO => Some(LAYER_DEVICE_CREATE_INFO_SIZE),
        _ => crate::struct_sizes::struct_size(s_type.as_raw()),
    }
}

/// Read-only walk over a chain.
///
/// # Safety
/// `head` must be a valid pNext chain or null.
pub unsafe fn walk(head: *const c_void) -> impl Iterator<Item = *const vk::BaseInStructure<'static>> {
    let mut at = head as *const vk::BaseInStructure<'static>;
    std::iter::from_fn(move || {
        if at.is_null() {
            None
        } else {
            let here = at;
            at = (*at).p_next;
            Some(here)
        }
    })
}

/// First node of `s_type` in a chain, read-only.
///
/// # Safety
/// `head` must be a valid pNext chain; `T` must be the structure for `s_type`.
pub unsafe fn find<'a, T>(head: *const c_void, s_type: vk::StructureType) -> Option<&'a T> {
    walk(head).find(|n| (**n).s_type == s_type).map(|n| &*(n as *const T))
}

/// Held by every reader of an application's `VkDeviceCreateInfo` chain, from its first read to
/// the end of the down-call: while one thread has spliced the chain (see the module comment),
/// no other may walk it.
pub struct AppChainLock {
    _guard: MutexGuard<'static, ()>,
}

impl AppChainLock {
    pub fn acquire() -> AppChainLock {
        static LOCK: Mutex<()> = Mutex::new(());
        // A panic while held left nothing half-done: `Spliced` restores on unwind.
        AppChainLock { _guard: LOCK.lock().unwrap_or_else(PoisonError::into_inner) }
    }
}

/// Can `len` bytes at `at` be written without a fault? The kernel copies the bytes already there
/// back over them through a pipe: read(2) into a read-only or unmapped page fails with EFAULT
/// instead of faulting, and into a writable one changes nothing. Any other failure answers no.
///
/// # Safety
/// `at` must be readable for `len` bytes (at most a pipe's atomic size), and nobody may write it
/// during the call.
unsafe fn writable(at: *mut u8, len: usize) -> bool {
    let mut fds = [0; 2];
    if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
        return false;
    }
    let ok = libc::write(fds[1], at as *const c_void, len) == len as isize
        && libc::read(fds[0], at as *mut c_void, len) == len as isize;
    libc::close(fds[0]);
    libc::close(fds[1]);
    ok
}

/// A copied node.
struct Node {
    /// u64 storage: every Vulkan structure is at most 8-byte aligned.
    buf: Box<[u64]>,
    size: usize,
}

impl Node {
    fn s_type(&self) -> vk::StructureType {
        // SAFETY: every node holds at least a VkBaseOutStructure.
        unsafe { (*(self.buf.as_ptr() as *const vk::BaseOutStructure)).s_type }
    }
    fn base(&mut self) -> *mut vk::BaseOutStructure<'static> {
        self.buf.as_mut_ptr() as *mut vk::BaseOutStructure
    }
}

enum Entry {
    Copied(Node),
    /// An unknown structure of the application, kept in place and spliced at the down-call.
    Spliced(*mut vk::BaseOutStructure<'static>),
}

impl Entry {
    fn copied(&mut self) -> Option<&mut Node> {
        match self {
            Entry::Copied(n) => Some(n),
            Entry::Spliced(_) => None,
        }
    }
}

/// An editable copy of a pNext chain. Node memory is boxed, so pointers handed out by
/// [`Chain::link`] stay valid while the `Chain` lives (moving the `Chain` is fine).
pub struct Chain {
    entries: Vec<Entry>,
    /// First unknown node of the original chain that could not be spliced (kept as-is with
    /// everything after it), or null.
    tail: *const c_void,
}

impl Chain {
    /// Copies the known prefix of the chain at `head`; the first unknown node and what follows
    /// stay the tail.
    ///
    /// # Safety
    /// `head` must be a valid pNext chain or null.
    pub unsafe fn copy(head: *const c_void) -> Chain {
        Chain::copy_from(head, false)
    }

    /// Copies every known node of the chain at `head`, keeping unknown nodes in writable memory
    /// in place to be spliced by [`Chain::splice`]; an unknown node in read-only memory and what
    /// follows stay the tail.
    ///
    /// # Safety
    /// `head` must be a valid pNext chain or null, which no one writes while `lock` is held.
    pub unsafe fn copy_splicing(head: *const c_void, _lock: &AppChainLock) -> Chain {
        Chain::copy_from(head, true)
    }

    unsafe fn copy_from(head: *const c_void, splicing: bool) -> Chain {
        let mut entries = Vec::new();
        let mut at = head;
        while !at.is_null() {
            let base = at as *mut vk::BaseOutStructure<'static>;
            match struct_size((*base).s_type) {
                Some(size) => {
                    let mut buf = vec![0u64; size.div_ceil(8)].into_boxed_slice();
                    std::ptr::copy_nonoverlapping(at as *const u8, buf.as_mut_ptr() as *mut u8, size);
                    entries.push(Entry::Copied(Node { buf, size }));
                }
                None if splicing && writable(std::ptr::addr_of_mut!((*base).p_next) as *mut u8, size_of::<*mut c_void>()) => {
                    entries.push(Entry::Spliced(base));
                }
                None => break,
            }
            at = (*base).p_next as *const c_void;
        }
        Chain { entries, tail: at }
    }

    fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Copied(n) => Some(n),
            Entry::Spliced(_) => None,
        })
    }

    /// sTypes of the copied (editable) nodes, in order.
    pub fn s_types(&self) -> Vec<vk::StructureType> {
        self.nodes().map(Node::s_type).collect()
    }

    /// sTypes of the unknown nodes kept in place for splicing, in order.
    pub fn spliced_s_types(&self) -> Vec<vk::StructureType> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                // SAFETY: a spliced entry is a node of the application's valid chain.
                Entry::Spliced(n) => Some(unsafe { (**n).s_type }),
                Entry::Copied(_) => None,
            })
            .collect()
    }

    /// The copied nodes, read-only, in order.
    pub fn copied_nodes(&self) -> impl Iterator<Item = *const vk::BaseInStructure<'static>> + '_ {
        self.nodes().map(|n| n.buf.as_ptr() as *const vk::BaseInStructure<'static>)
    }

    /// The copied (editable) nodes, in order.
    pub fn nodes_mut(&mut self) -> impl Iterator<Item = *mut vk::BaseOutStructure<'static>> + '_ {
        self.entries.iter_mut().filter_map(Entry::copied).map(Node::base)
    }

    /// The untouched tail: the application's own first unknown node that could not be spliced
    /// and what follows (null when there is none). Read-only.
    pub fn tail(&self) -> *const c_void {
        self.tail
    }

    /// sType of the first node of the untouched tail, if there is one.
    pub fn tail_s_type(&self) -> Option<vk::StructureType> {
        // SAFETY: the tail is a valid chain node (checked non-null).
        (!self.tail.is_null()).then(|| unsafe { (*(self.tail as *const vk::BaseInStructure)).s_type })
    }

    /// Is a node of `s_type` in the untouched tail (where it cannot be edited)?
    pub fn tail_contains(&self, s_type: vk::StructureType) -> bool {
        // SAFETY: the tail is the rest of a valid chain.
        unsafe { walk(self.tail).any(|n| (*n).s_type == s_type) }
    }

    pub fn contains(&self, s_type: vk::StructureType) -> bool {
        self.nodes().any(|n| n.s_type() == s_type) || self.tail_contains(s_type)
    }

    /// Removes every copied node of `s_type`; returns how many.
    pub fn remove(&mut self, s_type: vk::StructureType) -> usize {
        let before = self.entries.len();
        self.entries.retain(|e| !matches!(e, Entry::Copied(n) if n.s_type() == s_type));
        before - self.entries.len()
    }

    /// The first copied node of `s_type`, typed.
    ///
    /// # Safety
    /// `T` must be the structure `s_type` names.
    pub unsafe fn find_mut<T>(&mut self, s_type: vk::StructureType) -> Option<&mut T> {
        let node = self.entries.iter_mut().filter_map(Entry::copied).find(|n| n.s_type() == s_type)?;
        assert!(size_of::<T>() <= node.size, "structure type mismatch for {s_type:?}");
        Some(&mut *(node.buf.as_mut_ptr() as *mut T))
    }

    /// Adds a structure at the front of the chain (order within a pNext chain carries no
    /// meaning, spec "Valid Usage for Structure Pointer Chains").
    pub fn push_front<T: Copy>(&mut self, value: T) {
        let size = size_of::<T>();
        let mut buf = vec![0u64; size.div_ceil(8)].into_boxed_slice();
        // SAFETY: buf holds at least `size` bytes; T is Copy (plain data).
        unsafe { std::ptr::copy_nonoverlapping(&value as *const T as *const u8, buf.as_mut_ptr() as *mut u8, size) };
        self.entries.insert(0, Entry::Copied(Node { buf, size }));
    }

    /// Links the copies to each other and to the tail; returns the new head (null when empty).
    /// For a chain without spliced nodes ([`Chain::copy`]); see [`Chain::splice`].
    pub fn link(&mut self) -> *const c_void {
        assert!(self.spliced_s_types().is_empty(), "a chain with unknown nodes kept in place must be linked with Chain::splice");
        self.link_entries().0
    }

    /// Links the chain for a down-call, splicing the application's unknown nodes in; they get
    /// their own `pNext` back when the returned guard drops.
    pub fn splice<'c>(&'c mut self, _lock: &'c AppChainLock) -> Spliced<'c> {
        let (head, restore) = self.link_entries();
        Spliced { head, restore, _chain: std::marker::PhantomData }
    }

    /// Links every entry to the next (the last to the tail); returns the head and, for each
    /// spliced node, its original `pNext`.
    fn link_entries(&mut self) -> (*const c_void, Vec<(*mut vk::BaseOutStructure<'static>, *mut vk::BaseOutStructure<'static>)>) {
        let mut next = self.tail as *mut vk::BaseOutStructure<'static>;
        let mut restore = Vec::new();
        for entry in self.entries.iter_mut().rev() {
            let base = match entry {
                Entry::Copied(node) => node.base(),
                Entry::Spliced(app) => {
                    // SAFETY: an application node whose pNext was found writable.
                    restore.push((*app, unsafe { (**app).p_next }));
                    *app
                }
            };
            // SAFETY: base is a copy's buffer or a spliced application node (writable, under
            // the AppChainLock the splice requires).
            unsafe { (*base).p_next = next };
            next = base;
        }
        (next as *const c_void, restore)
    }
}

/// A chain linked for a down-call ([`Chain::splice`]); dropping it (also on unwind) gives the
/// application's unknown nodes their own `pNext` back.
pub struct Spliced<'c> {
    head: *const c_void,
    restore: Vec<(*mut vk::BaseOutStructure<'static>, *mut vk::BaseOutStructure<'static>)>,
    _chain: std::marker::PhantomData<&'c mut Chain>,
}

impl Spliced<'_> {
    /// The head of the linked chain.
    pub fn head(&self) -> *const c_void {
        self.head
    }
}

impl Drop for Spliced<'_> {
    fn drop(&mut self) {
        for (node, p_next) in &self.restore {
            // SAFETY: the node was writable when spliced and is still the application's.
            unsafe { (**node).p_next = *p_next };
        }
    }
}

/// Calls `f` with every node of a type in `remove` temporarily unlinked from the chain that
/// starts at `head` (whose own type is never removed), then relinks them exactly as they were.
/// Used where the application's output chain must reach the driver without structures it does
/// not know (VUID-VkPhysicalDeviceFeatures2-pNext-pNext) and come back complete.
///
/// # Safety
/// `head` must be a valid, writable chain that nobody else touches during the call.
pub unsafe fn with_unlinked<R>(head: *mut vk::BaseOutStructure<'static>, remove: &[vk::StructureType], f: impl FnOnce() -> R) -> R {
    let mut unlinked: Vec<(*mut vk::BaseOutStructure, *mut vk::BaseOutStructure)> = Vec::new();
    let mut prev = head;
    while !prev.is_null() && !(*prev).p_next.is_null() {
        let node = (*prev).p_next;
        if remove.contains(&(*node).s_type) {
            (*prev).p_next = (*node).p_next;
            unlinked.push((prev, node));
        } else {
            prev = node;
        }
    }
    let r = f();
    // Reverse order restores runs of consecutive removed nodes correctly.
    for (prev, node) in unlinked.iter().rev() {
        (**prev).p_next = *node;
    }
    r
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;

    #[test]
    fn sizes_known() {
        assert_eq!(struct_size(vk::StructureType::PHYSICAL_DEVICE_FEATURES_2), Some(size_of::<vk::PhysicalDeviceFeatures2>()));
        // The structures vkd3d-proton and the CTS put in front of Vulkan11/12Features (issue 14).
        for (s_type, size) in [(1_000_574_000, 24), (1_000_562_000, 24), (1_000_572_000, 24), (1_000_524_000, 24)] {
            assert_eq!(struct_size(vk::StructureType::from_raw(s_type)), Some(size), "sType {s_type}");
        }
        assert_eq!(struct_size(vk::StructureType::from_raw(1_999_999_000)), None);
        assert!(crate::struct_sizes::STRUCT_SIZES.windows(2).all(|w| w[0].0 < w[1].0), "table must be sorted for binary search");
    }

    /// Every structure ash knows has the size ash gives it (two independent sources agree).
    #[test]
    fn sizes_agree_with_ash() {
        use ash::vk::TaggedStructure;
        let mut disagree = Vec::new();
        macro_rules! ash_agrees {
            ($($t:ident),* $(,)?) => {{$(
                let (t, size) = (<vk::$t<'static> as TaggedStructure>::STRUCTURE_TYPE, size_of::<vk::$t<'static>>());
                if struct_size(t) != Some(size) {
                    disagree.push(format!("{}: ash {size}, table {:?}", stringify!($t), struct_size(t)));
                }
            )*}};
        }
        include!("struct_sizes_ash.rs");
        assert!(disagree.is_empty(), "{disagree:#?}");
    }

    /// The committed table is what the generator makes from its pinned registry, where the
    /// generator's inputs (python3 with vulkan-object, a C compiler) are installed.
    #[test]
    fn generated_table_is_fresh() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let has_registry = std::process::Command::new("python3").args(["-c", "import vulkan_object"]).status().is_ok_and(|s| s.success());
        if !has_registry {
            eprintln!("skipped: python3 with the vulkan-object package is not installed");
            return;
        }
        let out = std::process::Command::new("python3")
            .current_dir(root)
            .args(["layer/tools/gen_struct_sizes.py", "--check"])
            .output()
            .expect("run the generator");
        assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }

    #[test]
    fn copy_remove_edit_add_without_touching_the_original() {
        let mut raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV { shader_raw_access_chains: vk::TRUE, ..Default::default() };
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
        v12.p_next = &mut raw as *mut _ as *mut c_void;
        let mut f2 = vk::PhysicalDeviceFeatures2::default();
        f2.p_next = &mut v12 as *mut _ as *mut c_void;
        let head = &f2 as *const _ as *const c_void;

        let mut chain = unsafe { Chain::copy(head) };
        assert_eq!(
            chain.s_types(),
            vec![
                vk::StructureType::PHYSICAL_DEVICE_FEATURES_2,
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                vk::StructureType::PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV
            ]
        );
        assert_eq!(chain.remove(vk::StructureType::PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV), 1);
        unsafe {
            chain.find_mut::<vk::PhysicalDeviceVulkan12Features>(vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES).unwrap().storage_buffer8_bit_access = vk::TRUE;
        }
        chain.push_front(vk::PhysicalDevice16BitStorageFeatures { storage_buffer16_bit_access: vk::TRUE, ..Default::default() });
        let new_head = chain.link();
        let types: Vec<_> = unsafe { walk(new_head).map(|n| (*n).s_type).collect() };
        assert_eq!(
            types,
            vec![
                vk::StructureType::PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
                vk::StructureType::PHYSICAL_DEVICE_FEATURES_2,
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES
            ]
        );
        let v12c: &vk::PhysicalDeviceVulkan12Features =
            unsafe { find(new_head, vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES).unwrap() };
        assert_eq!(v12c.storage_buffer8_bit_access, vk::TRUE);
        // The original is untouched.
        assert_eq!(v12.storage_buffer8_bit_access, vk::FALSE);
        assert_eq!(v12.p_next, &mut raw as *mut _ as *mut c_void);
        assert_eq!(f2.p_next, &mut v12 as *mut _ as *mut c_void);
    }

    #[test]
    fn unknown_struct_keeps_tail() {
        #[repr(C)]
        struct Unknown {
            s_type: vk::StructureType,
            p_next: *const c_void,
            payload: [u8; 3],
        }
        let raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV::default();
        let unknown = Unknown {
            s_type: vk::StructureType::from_raw(1_999_999_000),
            p_next: &raw as *const _ as *const c_void,
            payload: [1, 2, 3],
        };
        let mut v11 = vk::PhysicalDeviceVulkan11Features::default();
        v11.p_next = &unknown as *const _ as *mut c_void;
        let mut chain = unsafe { Chain::copy(&v11 as *const _ as *const c_void) };
        assert_eq!(chain.s_types(), vec![vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES]);
        assert_eq!(chain.tail_s_type(), Some(vk::StructureType::from_raw(1_999_999_000)));
        assert!(chain.tail_contains(vk::StructureType::PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV));
        assert_eq!(chain.remove(vk::StructureType::PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV), 0);
        let head = chain.link();
        let second = unsafe { (*(head as *const vk::BaseInStructure)).p_next };
        assert_eq!(second as *const c_void, &unknown as *const _ as *const c_void);
        assert_eq!(unknown.payload, [1, 2, 3]);
    }

    #[test]
    fn unlink_and_relink() {
        let raw = vk::StructureType::PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV;
        let mut b = vk::PhysicalDeviceRawAccessChainsFeaturesNV::default();
        let mut a = vk::PhysicalDeviceRawAccessChainsFeaturesNV::default();
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut v11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default();
        // f2 -> a -> b -> v11 -> (raw? no) v12
        f2.p_next = &mut a as *mut _ as *mut c_void;
        a.p_next = &mut b as *mut _ as *mut c_void;
        b.p_next = &mut v11 as *mut _ as *mut c_void;
        v11.p_next = &mut v12 as *mut _ as *mut c_void;
        let head = &mut f2 as *mut _ as *mut vk::BaseOutStructure;
        let seen = unsafe {
            with_unlinked(head, &[raw], || walk(head as *const c_void).map(|n| (*n).s_type).collect::<Vec<_>>())
        };
        assert_eq!(
            seen,
            vec![
                vk::StructureType::PHYSICAL_DEVICE_FEATURES_2,
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES
            ]
        );
        assert_eq!(f2.p_next, &mut a as *mut _ as *mut c_void);
        assert_eq!(a.p_next, &mut b as *mut _ as *mut c_void);
        assert_eq!(b.p_next, &mut v11 as *mut _ as *mut c_void);
        assert_eq!(v11.p_next, &mut v12 as *mut _ as *mut c_void);
        assert!(v12.p_next.is_null());
    }

    /// A structure the table does not know: sType, pNext, a few bools.
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Newer {
        s_type: vk::StructureType,
        p_next: *mut c_void,
        bools: [vk::Bool32; 3],
    }

    const NEWER: vk::StructureType = vk::StructureType::from_raw(1_000_999_000);
    const NEWER2: vk::StructureType = vk::StructureType::from_raw(1_000_999_001);

    fn newer(s_type: vk::StructureType, p_next: *mut c_void) -> Newer {
        Newer { s_type, p_next, bools: [vk::TRUE, vk::FALSE, vk::TRUE] }
    }

    fn bytes<T>(v: &T) -> Vec<u8> {
        // SAFETY: plain data, read as bytes.
        unsafe { std::slice::from_raw_parts(v as *const T as *const u8, size_of::<T>()).to_vec() }
    }

    fn ptr<T>(v: &mut T) -> *mut c_void {
        v as *mut T as *mut c_void
    }

    /// Clears storageInputOutput16 in the copied Vulkan11Features, as the layer does for an
    /// emulated feature.
    fn clear_io16(chain: &mut Chain) {
        let v11 = unsafe { chain.find_mut::<vk::PhysicalDeviceVulkan11Features>(vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES) };
        v11.expect("Vulkan11Features copied").storage_input_output16 = vk::FALSE;
    }

    /// (sType, storageInputOutput16 where it is a Vulkan11Features) of each node, in order.
    unsafe fn seen(head: *const c_void) -> Vec<(i32, Option<vk::Bool32>)> {
        walk(head)
            .map(|n| {
                let io16 = ((*n).s_type == vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES)
                    .then(|| (*(n as *const vk::PhysicalDeviceVulkan11Features)).storage_input_output16);
                ((*n).s_type.as_raw(), io16)
            })
            .collect()
    }

    #[test]
    fn unknown_node_in_the_middle_is_spliced_and_restored() {
        let mut v11 = vk::PhysicalDeviceVulkan11Features { storage_input_output16: vk::TRUE, ..Default::default() };
        let mut n = newer(NEWER, ptr(&mut v11));
        let mut f2 = vk::PhysicalDeviceFeatures2 { p_next: ptr(&mut n), ..Default::default() };
        let before = (bytes(&f2), bytes(&n), bytes(&v11));
        let lock = AppChainLock::acquire();
        let mut chain = unsafe { Chain::copy_splicing(ptr(&mut f2), &lock) };
        assert_eq!(chain.spliced_s_types(), vec![NEWER]);
        assert!(chain.tail().is_null());
        clear_io16(&mut chain);
        {
            let spliced = chain.splice(&lock);
            let head = spliced.head();
            assert_eq!(
                unsafe { seen(head) },
                vec![(vk::StructureType::PHYSICAL_DEVICE_FEATURES_2.as_raw(), None), (NEWER.as_raw(), None), (49, Some(vk::FALSE))]
            );
            // The application's own node is the one the driver sees, its payload untouched.
            let second = unsafe { (*(head as *const vk::BaseInStructure)).p_next };
            assert_eq!(second as *const c_void, &n as *const Newer as *const c_void);
        }
        assert_eq!((bytes(&f2), bytes(&n), bytes(&v11)), before, "the application's chain is byte-identical after the call");
    }

    #[test]
    fn several_unknown_nodes_are_spliced() {
        let mut raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV { shader_raw_access_chains: vk::TRUE, ..Default::default() };
        let mut v11 = vk::PhysicalDeviceVulkan11Features { p_next: ptr(&mut raw), storage_input_output16: vk::TRUE, ..Default::default() };
        let mut b = newer(NEWER2, ptr(&mut v11));
        let mut a = newer(NEWER, ptr(&mut b));
        let mut v12 = vk::PhysicalDeviceVulkan12Features { p_next: ptr(&mut a), ..Default::default() };
        let mut c = newer(NEWER, ptr(&mut v12));
        let before = (bytes(&c), bytes(&v12), bytes(&a), bytes(&b), bytes(&v11), bytes(&raw));
        let lock = AppChainLock::acquire();
        let mut chain = unsafe { Chain::copy_splicing(ptr(&mut c), &lock) };
        assert_eq!(chain.spliced_s_types(), vec![NEWER, NEWER, NEWER2]);
        assert_eq!(chain.remove(vk::StructureType::PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV), 1);
        clear_io16(&mut chain);
        {
            let spliced = chain.splice(&lock);
            let got = unsafe { seen(spliced.head()) };
            let v12_t = vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES.as_raw();
            assert_eq!(got, vec![(NEWER.as_raw(), None), (v12_t, None), (NEWER.as_raw(), None), (NEWER2.as_raw(), None), (49, Some(vk::FALSE))]);
        }
        assert_eq!((bytes(&c), bytes(&v12), bytes(&a), bytes(&b), bytes(&v11), bytes(&raw)), before);
    }

    /// One page with `value` at its start, then made read-only.
    struct ReadOnlyPage(*mut c_void);

    impl ReadOnlyPage {
        fn new<T: Copy>(value: T) -> ReadOnlyPage {
            unsafe {
                let page = libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
                assert_ne!(page, libc::MAP_FAILED);
                (page as *mut T).write(value);
                assert_eq!(libc::mprotect(page, 4096, libc::PROT_READ), 0);
                ReadOnlyPage(page)
            }
        }
    }

    impl Drop for ReadOnlyPage {
        fn drop(&mut self) {
            unsafe { libc::munmap(self.0, 4096) };
        }
    }

    #[test]
    fn probe_tells_read_only_from_writable() {
        let page = ReadOnlyPage::new(0u64);
        let mut local = 7u64;
        unsafe {
            assert!(!writable(page.0 as *mut u8, 8));
            assert!(writable(&mut local as *mut u64 as *mut u8, 8));
        }
        assert_eq!(local, 7);
    }

    #[test]
    fn unknown_node_in_read_only_memory_stays_the_tail() {
        let mut v11 = vk::PhysicalDeviceVulkan11Features { storage_input_output16: vk::TRUE, ..Default::default() };
        let mut writable_newer = newer(NEWER2, std::ptr::null_mut());
        let page = ReadOnlyPage::new(newer(NEWER, ptr(&mut v11)));
        writable_newer.p_next = page.0;
        let mut f2 = vk::PhysicalDeviceFeatures2 { p_next: ptr(&mut writable_newer), ..Default::default() };
        let before = (bytes(&f2), bytes(&writable_newer), bytes(&v11));
        let lock = AppChainLock::acquire();
        let mut chain = unsafe { Chain::copy_splicing(ptr(&mut f2), &lock) };
        // The writable unknown node is spliced; the read-only one and what follows stay as-is.
        assert_eq!(chain.spliced_s_types(), vec![NEWER2]);
        assert_eq!(chain.tail(), page.0 as *const c_void);
        assert_eq!(chain.tail_s_type(), Some(NEWER));
        assert!(chain.tail_contains(vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES));
        {
            let spliced = chain.splice(&lock);
            let f2_t = vk::StructureType::PHYSICAL_DEVICE_FEATURES_2.as_raw();
            assert_eq!(unsafe { seen(spliced.head()) }, vec![(f2_t, None), (NEWER2.as_raw(), None), (NEWER.as_raw(), None), (49, Some(vk::TRUE))]);
        }
        assert_eq!((bytes(&f2), bytes(&writable_newer), bytes(&v11)), before);
    }

    #[test]
    #[should_panic(expected = "Chain::splice")]
    fn link_refuses_a_chain_with_spliced_nodes() {
        let mut n = newer(NEWER, std::ptr::null_mut());
        let lock = AppChainLock::acquire();
        let mut chain = unsafe { Chain::copy_splicing(ptr(&mut n), &lock) };
        drop(lock);
        chain.link();
    }

    #[test]
    fn empty_chain() {
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        assert!(chain.link().is_null());
        chain.push_front(vk::PhysicalDeviceFeatures2::default());
        assert!(!chain.link().is_null());
    }
}
