//! 8/16-bit storage features (VK_KHR_16bit_storage / SPV_KHR_16bit_storage, VK_KHR_8bit_storage /
//! SPV_KHR_8bit_storage), each emulated on its own: `storageBuffer16BitAccess`,
//! `uniformAndStorageBuffer16BitAccess`, `storagePushConstant16`, `storageInputOutput16`,
//! `storageBuffer8BitAccess`, `uniformAndStorageBuffer8BitAccess`, `storagePushConstant8`.
//!
//! Unlike an extension of ours, these bits live in structures the driver knows
//! (`VkPhysicalDevice16BitStorageFeatures` / `VkPhysicalDeviceVulkan11Features`,
//! `VkPhysicalDevice8BitStorageFeatures` / `VkPhysicalDeviceVulkan12Features`), so nothing is
//! unlinked or advertised. Per feature (mode setting `auto`/`force`/`off`, see [`Feature::key`]):
//! - vkGetPhysicalDeviceFeatures2: after the driver filled the chain, an emulated feature's bit
//!   is set in every one of those structures the application chained ([`report`]);
//! - vkCreateDevice: an emulated bit is cleared in the copied chain, wherever it sits ([`clear`]),
//!   native bits stay; the rewrite options get the emulated features the application enabled (or
//!   all forced ones) in `emulate_storage`, and the rewrite target claims none of them
//!   ([`mask_target`]), so the lowering never uses what it emulates.
//!
//! Not done: advertising VK_KHR_16bit_storage / VK_KHR_8bit_storage themselves on a pre-1.1/1.2
//! device without them (the structures would then have to be hidden from the driver).
use crate::device_features;
use crate::emulation::{status_for, Decision, DeviceEdit, DevicePlan, DeviceRequest, Emulation, FeatureReport, PhysDev, Services, Status};
use crate::pnext::{self, Chain};
use crate::settings::{Mode, Settings};
use ash::vk;
use shader_rewrite::{SmallStorage, Target};
use std::ffi::c_void;
use std::mem::offset_of;

type S = vk::StructureType;

/// One 8/16-bit storage feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    StorageBuffer16BitAccess,
    UniformAndStorageBuffer16BitAccess,
    StoragePushConstant16,
    StorageInputOutput16,
    StorageBuffer8BitAccess,
    UniformAndStorageBuffer8BitAccess,
    StoragePushConstant8,
}

/// Every feature, in SPIR-V capability order.
pub const ALL: [Feature; 7] = [
    Feature::StorageBuffer16BitAccess,
    Feature::UniformAndStorageBuffer16BitAccess,
    Feature::StoragePushConstant16,
    Feature::StorageInputOutput16,
    Feature::StorageBuffer8BitAccess,
    Feature::UniformAndStorageBuffer8BitAccess,
    Feature::StoragePushConstant8,
];

/// The feature structures that carry these bits (all known to drivers of the right version).
pub const STRUCTS: [S; 4] = [
    S::PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
    S::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
    S::PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
    S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
];

type F16 = vk::PhysicalDevice16BitStorageFeatures<'static>;
type F11 = vk::PhysicalDeviceVulkan11Features<'static>;
type F8 = vk::PhysicalDevice8BitStorageFeatures<'static>;
type F12 = vk::PhysicalDeviceVulkan12Features<'static>;

impl Feature {
    /// The Vulkan feature member name (for logs).
    pub fn vk_name(self) -> &'static str {
        match self {
            Feature::StorageBuffer16BitAccess => "storageBuffer16BitAccess",
            Feature::UniformAndStorageBuffer16BitAccess => "uniformAndStorageBuffer16BitAccess",
            Feature::StoragePushConstant16 => "storagePushConstant16",
            Feature::StorageInputOutput16 => "storageInputOutput16",
            Feature::StorageBuffer8BitAccess => "storageBuffer8BitAccess",
            Feature::UniformAndStorageBuffer8BitAccess => "uniformAndStorageBuffer8BitAccess",
            Feature::StoragePushConstant8 => "storagePushConstant8",
        }
    }

    /// The settings key of its mode.
    pub fn key(self) -> &'static str {
        match self {
            Feature::StorageBuffer16BitAccess => "storage_buffer_16bit_access",
            Feature::UniformAndStorageBuffer16BitAccess => "uniform_and_storage_buffer_16bit_access",
            Feature::StoragePushConstant16 => "storage_push_constant_16",
            Feature::StorageInputOutput16 => "storage_input_output_16",
            Feature::StorageBuffer8BitAccess => "storage_buffer_8bit_access",
            Feature::UniformAndStorageBuffer8BitAccess => "uniform_and_storage_buffer_8bit_access",
            Feature::StoragePushConstant8 => "storage_push_constant_8",
        }
    }

    /// The SPIR-V capability the feature allows (indexes [`SmallStorage`]).
    pub fn capability(self) -> u32 {
        SmallStorage::CAPS[self as usize]
    }

    /// The mode setting, before `force_enable`.
    pub fn mode_setting(self, settings: &Settings) -> Mode {
        match self {
            Feature::StorageBuffer16BitAccess => settings.storage_buffer_16bit_access,
            Feature::UniformAndStorageBuffer16BitAccess => settings.uniform_and_storage_buffer_16bit_access,
            Feature::StoragePushConstant16 => settings.storage_push_constant_16,
            Feature::StorageInputOutput16 => settings.storage_input_output_16,
            Feature::StorageBuffer8BitAccess => settings.storage_buffer_8bit_access,
            Feature::UniformAndStorageBuffer8BitAccess => settings.uniform_and_storage_buffer_8bit_access,
            Feature::StoragePushConstant8 => settings.storage_push_constant_8,
        }
    }

    /// The feature's bit in a rewrite target.
    fn target_bit(self, t: &mut Target) -> &mut bool {
        match self {
            Feature::StorageBuffer16BitAccess => &mut t.storage_buffer_16bit,
            Feature::UniformAndStorageBuffer16BitAccess => &mut t.uniform_and_storage_buffer_16bit,
            Feature::StoragePushConstant16 => &mut t.storage_push_constant_16,
            Feature::StorageInputOutput16 => &mut t.storage_input_output_16,
            Feature::StorageBuffer8BitAccess => &mut t.storage_buffer_8bit,
            Feature::UniformAndStorageBuffer8BitAccess => &mut t.uniform_and_storage_buffer_8bit,
            Feature::StoragePushConstant8 => &mut t.storage_push_constant_8,
        }
    }

    /// Does `t` (driver support, or a rewrite target) have the feature?
    pub fn in_target(self, t: &Target) -> bool {
        let mut t = *t;
        *self.target_bit(&mut t)
    }

    /// Byte offset of the feature's bit in a structure of `s_type`, if that structure has it.
    fn offset(self, s_type: S) -> Option<usize> {
        use Feature::*;
        Some(match (s_type, self) {
            (S::PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, StorageBuffer16BitAccess) => offset_of!(F16, storage_buffer16_bit_access),
            (S::PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, UniformAndStorageBuffer16BitAccess) => {
                offset_of!(F16, uniform_and_storage_buffer16_bit_access)
            }
            (S::PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, StoragePushConstant16) => offset_of!(F16, storage_push_constant16),
            (S::PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, StorageInputOutput16) => offset_of!(F16, storage_input_output16),
            (S::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, StorageBuffer16BitAccess) => offset_of!(F11, storage_buffer16_bit_access),
            (S::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, UniformAndStorageBuffer16BitAccess) => {
                offset_of!(F11, uniform_and_storage_buffer16_bit_access)
            }
            (S::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, StoragePushConstant16) => offset_of!(F11, storage_push_constant16),
            (S::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, StorageInputOutput16) => offset_of!(F11, storage_input_output16),
            (S::PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES, StorageBuffer8BitAccess) => offset_of!(F8, storage_buffer8_bit_access),
            (S::PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES, UniformAndStorageBuffer8BitAccess) => {
                offset_of!(F8, uniform_and_storage_buffer8_bit_access)
            }
            (S::PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES, StoragePushConstant8) => offset_of!(F8, storage_push_constant8),
            (S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, StorageBuffer8BitAccess) => offset_of!(F12, storage_buffer8_bit_access),
            (S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, UniformAndStorageBuffer8BitAccess) => {
                offset_of!(F12, uniform_and_storage_buffer8_bit_access)
            }
            (S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, StoragePushConstant8) => offset_of!(F12, storage_push_constant8),
            _ => return None,
        })
    }

    /// The feature's bit inside `node`, if the node's structure carries it.
    ///
    /// # Safety
    /// `node` must be a valid structure of the sType it names.
    unsafe fn bit(self, node: *const vk::BaseInStructure<'static>) -> Option<*mut vk::Bool32> {
        self.offset((*node).s_type).map(|o| (node as *mut u8).add(o) as *mut vk::Bool32)
    }
}

/// The set of features whose capability `set` holds.
fn features(set: &SmallStorage) -> impl Iterator<Item = Feature> + '_ {
    ALL.into_iter().filter(|f| set.get(f.capability()))
}

/// Status of `f` under `settings` on a driver with support `driver`.
pub fn status(f: Feature, settings: &Settings, driver: &Target) -> Status {
    status_for(f.mode_setting(settings), settings.force_enable, f.in_target(driver))
}

/// The features the layer provides on a device (status `Emulated`). `driver` (the device's
/// support) is only asked for when some feature's effective mode is `auto`.
pub fn emulated(settings: &Settings, driver: impl FnOnce() -> Target) -> SmallStorage {
    let mut out = SmallStorage::default();
    let auto = |f: Feature| crate::emulation::effective(f.mode_setting(settings), settings.force_enable) == Mode::Auto;
    let support = if ALL.into_iter().any(auto) { driver() } else { Target::all() };
    for f in ALL {
        out.set(f.capability(), matches!(status(f, settings, &support), Status::Emulated { .. }));
    }
    out
}

/// Sets the bits of `emulated` features in `node` if it is one of [`STRUCTS`].
///
/// # Safety
/// `node` must be a valid, writable structure of the sType it names.
pub unsafe fn report(node: *mut vk::BaseOutStructure<'static>, emulated: &SmallStorage) {
    for f in features(emulated) {
        if let Some(bit) = f.bit(node as *const vk::BaseInStructure) {
            *bit = vk::TRUE;
        }
    }
}

/// The features a chain enables (bit set in any structure that carries it).
///
/// # Safety
/// `head` must be a valid pNext chain.
pub unsafe fn requested(head: *const c_void) -> SmallStorage {
    let mut out = SmallStorage::default();
    for n in pnext::walk(head) {
        for f in ALL {
            if let Some(bit) = f.bit(n) {
                if *bit != vk::FALSE {
                    out.set(f.capability(), true);
                }
            }
        }
    }
    out
}

/// Clears the bits of `features` in the copied nodes of `chain` (aggregate or dedicated
/// structure, wherever they are). Returns the ones still set in the chain's untouched tail
/// (behind an unknown structure, where the layer cannot edit them).
///
/// # Safety
/// `chain` must be a copy of a valid chain.
pub unsafe fn clear(chain: &mut Chain, features_to_clear: &SmallStorage) -> SmallStorage {
    for node in chain.nodes_mut() {
        for f in features(features_to_clear) {
            if let Some(bit) = f.bit(node as *const vk::BaseInStructure) {
                *bit = vk::FALSE;
            }
        }
    }
    requested(chain.tail()).and(features_to_clear)
}

/// Takes `features` out of a target: the lowering must not use what it emulates, and the
/// driver features it turns on for itself must not include them.
pub fn mask_target(t: &mut Target, features_to_mask: &SmallStorage) {
    for f in features(features_to_mask) {
        *f.target_bit(t) = false;
    }
}

/// The decisions for every feature on the device being created.
pub struct Plan {
    pub decisions: [(Feature, Decision); 7],
}

impl Plan {
    /// `driver`: the device's support; `head`: the application's `VkDeviceCreateInfo::pNext`.
    ///
    /// # Safety
    /// `head` must be a valid pNext chain.
    pub unsafe fn new(settings: &Settings, driver: &Target, head: *const c_void) -> Plan {
        let asked = requested(head);
        Plan {
            decisions: ALL.map(|f| {
                (
                    f,
                    Decision {
                        name: f.vk_name(),
                        native: f.in_target(driver),
                        status: status(f, settings, driver),
                        requested: asked.get(f.capability()),
                    },
                )
            }),
        }
    }

    fn select(&self, pick: impl Fn(&Decision) -> bool) -> SmallStorage {
        let mut out = SmallStorage::default();
        for (f, d) in &self.decisions {
            out.set(f.capability(), pick(d));
        }
        out
    }

    /// Provided by the layer: cleared from the create info, claimed by no rewrite target.
    pub fn emulated(&self) -> SmallStorage {
        self.select(Decision::emulated)
    }

    /// Lowered in shaders (`Options::emulate_storage`): emulated and enabled by the
    /// application, or forced.
    pub fn active(&self) -> SmallStorage {
        self.select(Decision::active)
    }
}

/// The family as one emulation: per feature, reported, cleared and lowered on its own.
pub struct SmallStorageFeatures;

impl Emulation for SmallStorageFeatures {
    fn name(&self) -> &'static str {
        "8/16-bit storage"
    }
    fn may_emulate(&self, settings: &Settings) -> bool {
        ALL.iter().any(|f| crate::emulation::effective(f.mode_setting(settings), settings.force_enable) != Mode::Off)
    }
    unsafe fn features(&'static self, pd: &PhysDev) -> Option<FeatureReport> {
        // Their structures are the driver's own: they stay linked; the emulated bits are set
        // after the driver filled them.
        let set = emulated(&pd.inst.settings, || device_features::supported_cached(pd.inst, pd.pd, pd.info));
        // SAFETY (closure): called on valid, writable nodes of the filled chain.
        set.any().then(|| FeatureReport { hidden: &[], report: Box::new(move |node| unsafe { report(node, &set) }) })
    }
    unsafe fn plan(&'static self, pd: &PhysDev, request: &DeviceRequest, _services: &mut Services) -> Option<Box<dyn DevicePlan>> {
        let supported = device_features::supported_cached(pd.inst, pd.pd, pd.info);
        Some(Box::new(Plan::new(&pd.inst.settings, &supported, request.create_info.p_next)))
    }
}

impl DevicePlan for Plan {
    fn decisions(&self) -> Vec<Decision> {
        self.decisions.iter().map(|(_, d)| *d).collect()
    }
    fn emulated(&self) -> bool {
        Plan::emulated(self).any()
    }
    fn active(&self) -> bool {
        Plan::active(self).any()
    }
    /// Emulated bits: the driver must not see them (it may lack them, and a forced one must not
    /// be used natively), wherever they sit.
    unsafe fn strip(&self, edit: &mut DeviceEdit) -> Result<(), String> {
        let stuck = clear(&mut edit.chain, &Plan::emulated(self));
        if stuck.any() {
            return Err(format!("cannot clear the emulated {} behind an unknown structure in read-only memory", stuck.names().join(", ")));
        }
        Ok(())
    }
    /// Never turn on or claim a feature the layer emulates (that would defeat a `force`; a bit
    /// stuck behind an unknown structure must not count either).
    fn restrict_target(&self, target: &mut Target) {
        mask_target(target, &Plan::emulated(self));
    }
    fn options(&self, options: &mut shader_rewrite::Options) {
        options.emulate_storage = Plan::active(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(fs: &[Feature]) -> SmallStorage {
        let mut s = SmallStorage::default();
        for f in fs {
            s.set(f.capability(), true);
        }
        s
    }

    fn base<T>(t: &mut T) -> *mut vk::BaseOutStructure<'static> {
        t as *mut T as *mut vk::BaseOutStructure<'static>
    }

    #[test]
    fn table_matches_capabilities_and_settings() {
        let names = SmallStorage { storage_buffer_16bit: true, ..Default::default() }.names();
        assert_eq!(names, vec!["StorageBuffer16BitAccess"]);
        for (i, f) in ALL.into_iter().enumerate() {
            assert_eq!(f.capability(), SmallStorage::CAPS[i]);
            assert!(crate::settings::keys().any(|k| k == f.key()), "{}", f.key());
            // The capability name is the feature name with a capital first letter.
            let cap = set(&[f]).names()[0];
            assert_eq!(cap[1..], f.vk_name()[1..]);
            let mut s = Settings::default();
            *s.mode_mut(f.key()).unwrap() = Mode::Off;
            assert_eq!(f.mode_setting(&s), Mode::Off);
            let mut t = Target::all();
            mask_target(&mut t, &set(&[f]));
            assert!(!f.in_target(&t));
            assert_eq!(ALL.into_iter().filter(|g| g.in_target(&t)).count(), 6);
            // Each feature sits in exactly two structures (dedicated and aggregate).
            assert_eq!(STRUCTS.iter().filter(|s| f.offset(**s).is_some()).count(), 2, "{f:?}");
        }
        let mut t = Target::all();
        mask_target(&mut t, &set(&ALL));
        assert_eq!(t, Target { int8: true, float16: true, int16: true, int64: true, robust_buffer_access2: true, robust_storage_byte_exact: true, ..Target::core() });
    }

    /// lavapipe: everything but storageInputOutput16.
    fn lavapipe() -> Target {
        Target { storage_input_output_16: false, ..Target::all() }
    }

    #[test]
    fn statuses_follow_modes() {
        let mut s = Settings::default();
        let io = Feature::StorageInputOutput16;
        let sb = Feature::StorageBuffer16BitAccess;
        assert_eq!(status(io, &s, &lavapipe()), Status::Emulated { forced: false });
        assert_eq!(status(sb, &s, &lavapipe()), Status::Native);
        assert_eq!(emulated(&s, lavapipe), set(&[io]));
        s.storage_input_output_16 = Mode::Off;
        assert_eq!(status(io, &s, &lavapipe()), Status::Off);
        s.storage_buffer_16bit_access = Mode::Force;
        assert_eq!(status(sb, &s, &lavapipe()), Status::Emulated { forced: true });
        assert_eq!(emulated(&s, lavapipe), set(&[sb]));
        // force_enable upgrades the auto ones; the per-feature off still wins.
        s.force_enable = true;
        let all_but_io: Vec<Feature> = ALL.into_iter().filter(|f| *f != io).collect();
        assert_eq!(emulated(&s, lavapipe), set(&all_but_io));
        // No feature left in auto mode: the driver is not asked.
        assert_eq!(emulated(&s, || panic!("driver queried")), set(&all_but_io));
        let all_off = Settings {
            storage_buffer_16bit_access: Mode::Off,
            uniform_and_storage_buffer_16bit_access: Mode::Off,
            storage_push_constant_16: Mode::Off,
            storage_input_output_16: Mode::Off,
            storage_buffer_8bit_access: Mode::Off,
            uniform_and_storage_buffer_8bit_access: Mode::Off,
            storage_push_constant_8: Mode::Off,
            ..Settings::default()
        };
        assert!(!emulated(&all_off, || panic!("driver queried")).any());
        // A driver without 8/16-bit storage at all.
        assert_eq!(emulated(&Settings::default(), Target::core), set(&ALL));
    }

    /// vkGetPhysicalDeviceFeatures2: emulated bits are set in dedicated and aggregate
    /// structures; other bits and other structures stay as the driver left them.
    #[test]
    fn reports_in_every_carrying_struct() {
        let em = set(&[Feature::StorageInputOutput16, Feature::StoragePushConstant8]);
        let mut s16 = vk::PhysicalDevice16BitStorageFeatures::default();
        let mut v11 = vk::PhysicalDeviceVulkan11Features { multiview: vk::TRUE, ..Default::default() };
        let mut s8 = vk::PhysicalDevice8BitStorageFeatures::default();
        let mut v12 = vk::PhysicalDeviceVulkan12Features { storage_buffer8_bit_access: vk::TRUE, ..Default::default() };
        let mut v13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default();
        unsafe {
            for n in [base(&mut s16), base(&mut v11), base(&mut s8), base(&mut v12), base(&mut v13), base(&mut f2)] {
                report(n, &em);
            }
        }
        assert_eq!(s16.storage_input_output16, vk::TRUE);
        assert_eq!((s16.storage_buffer16_bit_access, s16.storage_push_constant16), (vk::FALSE, vk::FALSE));
        assert_eq!(v11.storage_input_output16, vk::TRUE);
        assert_eq!(v11.multiview, vk::TRUE);
        assert_eq!(v11.uniform_and_storage_buffer16_bit_access, vk::FALSE);
        assert_eq!(s8.storage_push_constant8, vk::TRUE);
        assert_eq!(s8.uniform_and_storage_buffer8_bit_access, vk::FALSE);
        assert_eq!((v12.storage_push_constant8, v12.storage_buffer8_bit_access), (vk::TRUE, vk::TRUE));
        assert_eq!(v12.shader_int8, vk::FALSE);
        assert_eq!((v13.robust_image_access, v13.maintenance4), (vk::FALSE, vk::FALSE));
        assert!(s16.p_next.is_null() && v12.p_next.is_null());
        // Every emulated feature in both of its structures; nothing when nothing is emulated.
        let mut s16 = vk::PhysicalDevice16BitStorageFeatures::default();
        let mut v11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut s8 = vk::PhysicalDevice8BitStorageFeatures::default();
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
        unsafe {
            for n in [base(&mut s16), base(&mut v11), base(&mut s8), base(&mut v12)] {
                report(n, &SmallStorage::default());
                assert!(!requested(n as *const c_void).any());
                report(n, &set(&ALL));
            }
            v11.p_next = base(&mut s16) as *mut c_void;
            v12.p_next = base(&mut s8) as *mut c_void;
            assert_eq!(requested(base(&mut v11) as *const c_void), set(&ALL[..4]));
            assert_eq!(requested(base(&mut v12) as *const c_void), set(&ALL[4..]));
        }
    }

    /// vkCreateDevice: the emulated bits are cleared in the copy (aggregate and dedicated
    /// structures), native bits stay, the application's structures are untouched.
    #[test]
    fn clears_emulated_bits_in_the_copy_only() {
        let mut s8 = vk::PhysicalDevice8BitStorageFeatures {
            storage_buffer8_bit_access: vk::TRUE,
            storage_push_constant8: vk::TRUE,
            ..Default::default()
        };
        let v11 = vk::PhysicalDeviceVulkan11Features {
            p_next: &mut s8 as *mut _ as *mut c_void,
            storage_buffer16_bit_access: vk::TRUE,
            storage_input_output16: vk::TRUE,
            multiview: vk::TRUE,
            ..Default::default()
        };
        let head = &v11 as *const _ as *const c_void;
        let em = set(&[Feature::StorageInputOutput16, Feature::StoragePushConstant8, Feature::UniformAndStorageBuffer8BitAccess]);
        let asked = unsafe { requested(head) };
        assert_eq!(
            asked,
            set(&[
                Feature::StorageBuffer16BitAccess,
                Feature::StorageInputOutput16,
                Feature::StorageBuffer8BitAccess,
                Feature::StoragePushConstant8
            ])
        );
        let mut chain = unsafe { Chain::copy(head) };
        let stuck = unsafe { clear(&mut chain, &em) };
        assert!(!stuck.any());
        let new_head = chain.link();
        assert_eq!(unsafe { requested(new_head) }, set(&[Feature::StorageBuffer16BitAccess, Feature::StorageBuffer8BitAccess]));
        let c11: &vk::PhysicalDeviceVulkan11Features = unsafe { pnext::find(new_head, S::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES).unwrap() };
        assert_eq!((c11.storage_input_output16, c11.storage_buffer16_bit_access, c11.multiview), (vk::FALSE, vk::TRUE, vk::TRUE));
        let c8: &vk::PhysicalDevice8BitStorageFeatures = unsafe { pnext::find(new_head, S::PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES).unwrap() };
        assert_eq!((c8.storage_push_constant8, c8.storage_buffer8_bit_access), (vk::FALSE, vk::TRUE));
        // The application's structures are as they were.
        assert_eq!((v11.storage_input_output16, v11.storage_buffer16_bit_access), (vk::TRUE, vk::TRUE));
        assert_eq!((s8.storage_push_constant8, s8.storage_buffer8_bit_access), (vk::TRUE, vk::TRUE));
        assert_eq!(v11.p_next, &mut s8 as *mut _ as *mut c_void);
    }

    #[test]
    fn clear_reports_bits_behind_an_unknown_struct() {
        #[repr(C)]
        struct Unknown {
            s_type: S,
            p_next: *const c_void,
        }
        let v12 = vk::PhysicalDeviceVulkan12Features { storage_push_constant8: vk::TRUE, ..Default::default() };
        let unknown = Unknown { s_type: S::from_raw(1_999_999_000), p_next: &v12 as *const _ as *const c_void };
        let s16 = vk::PhysicalDevice16BitStorageFeatures {
            p_next: &unknown as *const _ as *mut c_void,
            storage_input_output16: vk::TRUE,
            ..Default::default()
        };
        let mut chain = unsafe { Chain::copy(&s16 as *const _ as *const c_void) };
        let em = set(&[Feature::StorageInputOutput16, Feature::StoragePushConstant8, Feature::StorageBuffer8BitAccess]);
        let stuck = unsafe { clear(&mut chain, &em) };
        assert_eq!(stuck, set(&[Feature::StoragePushConstant8]));
        let head = chain.link();
        assert_eq!(unsafe { requested(head) }, set(&[Feature::StoragePushConstant8]));
        assert_eq!(s16.storage_input_output16, vk::TRUE);
    }

    #[test]
    fn plan_on_lavapipe() {
        // The application enables storageInputOutput16 (emulated) and storageBuffer16BitAccess
        // (native); storagePushConstant16 is forced without being enabled.
        let s16 = vk::PhysicalDevice16BitStorageFeatures {
            storage_input_output16: vk::TRUE,
            storage_buffer16_bit_access: vk::TRUE,
            ..Default::default()
        };
        let settings = Settings { storage_push_constant_16: Mode::Force, storage_push_constant_8: Mode::Off, ..Settings::default() };
        let plan = unsafe { Plan::new(&settings, &lavapipe(), &s16 as *const _ as *const c_void) };
        let io = Feature::StorageInputOutput16;
        let pc16 = Feature::StoragePushConstant16;
        assert_eq!(plan.emulated(), set(&[io, pc16]));
        assert_eq!(plan.active(), set(&[io, pc16]));
        let d = |f: Feature| plan.decisions.iter().find(|(g, _)| *g == f).unwrap().1;
        assert_eq!(d(io).describe(), "storageInputOutput16 emulated (driver lacks it)");
        assert_eq!(d(pc16).describe(), "storagePushConstant16 emulated (forced; driver has it)");
        assert_eq!(d(Feature::StorageBuffer16BitAccess).describe(), "storageBuffer16BitAccess native (driver supports it)");
        assert_eq!(d(Feature::StoragePushConstant8).describe(), "storagePushConstant8 off (setting)");
        assert!(d(io).requested && !d(pc16).requested);
        // Not enabled by the application: available, not lowered.
        let idle = unsafe { Plan::new(&Settings::default(), &lavapipe(), std::ptr::null()) };
        assert_eq!(idle.emulated(), set(&[io]));
        assert!(!idle.active().any());
    }
}
