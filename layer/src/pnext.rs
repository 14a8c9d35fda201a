//! pNext chains: a deep copy the layer can edit without touching the application's structures
//! (valid usage makes every input structure `const` for the implementation; VkDeviceCreateInfo's
//! chain is the application's memory).
//!
//! Known structures (every sType in ash 0.38 / headers 1.3.281, plus the loader's link structs)
//! are copied node by node. At the first *unknown* sType the copy stops: that node and
//! everything after it stay the application's own memory, linked as-is ("the tail"). We cannot
//! copy a structure whose size we do not know, and relinking it would mean writing to the
//! application's struct. Consequence, logged by callers: a structure we must remove or edit that
//! sits behind an unknown one cannot be edited.
use ash::vk;
use std::ffi::c_void;
use std::mem::size_of;

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

/// An editable copy of a pNext chain. Node memory is boxed, so pointers handed out by
/// [`Chain::link`] stay valid while the `Chain` lives (moving the `Chain` is fine).
pub struct Chain {
    nodes: Vec<Node>,
    /// First unknown node of the original chain (kept as-is), or null.
    tail: *const c_void,
}

impl Chain {
    /// Copies the known prefix of the chain at `head`.
    ///
    /// # Safety
    /// `head` must be a valid pNext chain or null.
    pub unsafe fn copy(head: *const c_void) -> Chain {
        let mut nodes = Vec::new();
        let mut at = head;
        while !at.is_null() {
            let base = &*(at as *const vk::BaseInStructure);
            let Some(size) = struct_size(base.s_type) else { break };
            let mut buf = vec![0u64; size.div_ceil(8)].into_boxed_slice();
            std::ptr::copy_nonoverlapping(at as *const u8, buf.as_mut_ptr() as *mut u8, size);
            nodes.push(Node { buf, size });
            at = base.p_next as *const c_void;
        }
        Chain { nodes, tail: at }
    }

    /// sTypes of the copied (editable) nodes, in order.
    pub fn s_types(&self) -> Vec<vk::StructureType> {
        self.nodes.iter().map(|n| n.s_type()).collect()
    }

    /// The copied (editable) nodes, in order.
    pub fn nodes_mut(&mut self) -> impl Iterator<Item = *mut vk::BaseOutStructure<'static>> + '_ {
        self.nodes.iter_mut().map(Node::base)
    }

    /// The untouched tail: the application's own first unknown node and what follows (null
    /// when the whole chain was copied). Read-only.
    pub fn tail(&self) -> *const c_void {
        self.tail
    }

    /// sType of the first unknown node, if the chain has an untouched tail.
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
        self.nodes.iter().any(|n| n.s_type() == s_type) || self.tail_contains(s_type)
    }

    /// Removes every copied node of `s_type`; returns how many.
    pub fn remove(&mut self, s_type: vk::StructureType) -> usize {
        let before = self.nodes.len();
        self.nodes.retain(|n| n.s_type() != s_type);
        before - self.nodes.len()
    }

    /// The first copied node of `s_type`, typed.
    ///
    /// # Safety
    /// `T` must be the structure `s_type` names.
    pub unsafe fn find_mut<T>(&mut self, s_type: vk::StructureType) -> Option<&mut T> {
        let node = self.nodes.iter_mut().find(|n| n.s_type() == s_type)?;
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
        self.nodes.insert(0, Node { buf, size });
    }

    /// Links the copies to each other and to the tail; returns the new head (null when empty).
    pub fn link(&mut self) -> *const c_void {
        let mut next = self.tail as *mut vk::BaseOutStructure<'static>;
        for node in self.nodes.iter_mut().rev() {
            let base = node.base();
            // SAFETY: base points into this node's buffer.
            unsafe { (*base).p_next = next };
            next = base;
        }
        next as *const c_void
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
        assert_eq!(
            struct_size(vk::StructureType::PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV),
            Some(size_of::<vk::PhysicalDeviceRawAccessChainsFeaturesNV>())
        );
        assert_eq!(struct_size(vk::StructureType::from_raw(1_999_999_000)), None);
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

    #[test]
    fn empty_chain() {
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        assert!(chain.link().is_null());
        chain.push_front(vk::PhysicalDeviceFeatures2::default());
        assert!(!chain.link().is_null());
    }
}
