//! Client quirks: known clients that behave worse with an emulation on some devices than without
//! it. Where one applies, the emulation's `auto` default changes for that client (an explicit
//! `force`, `off` or `force_enable` always wins). The decision is logged once per instance
//! (`POLYFILL-client-quirk`, info, also to the application's debug messengers).
//!
//! Add an entry only where a measurement shows harm, with the upstream reference; the README's
//! "Client quirks" table is generated from [`QUIRKS`] (layer/tests/generated_files.rs).
use crate::emulation::PhysDev;
use crate::log_info;
use crate::settings::Mode;
use ash::vk;

/// Who the quirk is about.
#[derive(Debug, Clone, Copy)]
pub enum Client {
    /// `VkApplicationInfo::pEngineName`.
    Engine(&'static str),
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Client::Engine(e) => write!(f, "engine '{e}'"),
        }
    }
}

impl Client {
    fn matches(&self, pd: &PhysDev) -> bool {
        match self {
            Client::Engine(e) => pd.inst.engine_name == *e,
        }
    }
}

pub struct Quirk {
    /// Short name, for the log and the README.
    pub name: &'static str,
    pub client: Client,
    /// The mode setting whose `auto` default changes.
    pub setting: &'static str,
    /// The device condition, for the README.
    pub condition: &'static str,
    /// Whether the condition holds on `pd`: the device fact that makes it hold, for the log.
    pub applies: unsafe fn(&PhysDev) -> Option<String>,
    /// What `auto` becomes.
    pub becomes: Mode,
    /// Why, for the log and the README.
    pub why: &'static str,
    /// Where upstream the behaviour comes from.
    pub reference: &'static str,
}

/// vkd3d-proton's SSBO offset buffer (`VKD3D_SSBO_OFFSET_BUFFER`) exists where
/// `4 < minStorageBufferOffsetAlignment <= 16` (`vkd3d_bindless_state_get_bindless_flags`);
/// above 16 its raw and structured views are texel buffers, which raw chains do not touch.
unsafe fn vkd3d_offset_buffer_window(pd: &PhysDev) -> Option<String> {
    let mut props = vk::PhysicalDeviceProperties::default();
    (pd.inst.get_physical_device_properties)(pd.pd, &mut props);
    let a = props.limits.min_storage_buffer_offset_alignment;
    (a > 4 && a <= 16).then(|| format!("minStorageBufferOffsetAlignment {a}"))
}

/// Every quirk.
pub static QUIRKS: &[&Quirk] = &[&VKD3D_RAW_ACCESS_CHAINS, &VKD3D_IMAGE_VIEW_HANDLE];

/// Wherever the layer would emulate VK_NVX_image_view_handle.
unsafe fn anywhere(_pd: &PhysDev) -> Option<String> {
    Some("a device without VK_NVX_image_view_handle".into())
}

pub static VKD3D_IMAGE_VIEW_HANDLE: Quirk = Quirk {
    name: "vkd3d-proton image view handles",
    client: Client::Engine("vkd3d"),
    setting: "image_view_handle",
    condition: "any device the layer would emulate VK_NVX_image_view_handle on",
    applies: anywhere,
    becomes: Mode::Off,
    why: "vkd3d-proton enables VK_NVX_image_view_handle when offered but uses its handles only for CUDA/NVAPI interop (never from shaders), which cannot work on other drivers; emulating it reserves the descriptor table in the reported limits, and with the table's arrays taken from lavapipe's 1 000 000 update-after-bind sampled and storage images per stage vkd3d-proton (which requires 1 000 000) refuses the device",
    reference: "vkd3d-proton libs/vkd3d/device.c (VK_NVX_image_view_handle in the optional extensions; vkd3d_get_image_view_handle for ID3D12DeviceExt CUDA interop) and its VKD3D_MIN_VIEW_DESCRIPTOR_COUNT (1000000) check",
};

pub static VKD3D_RAW_ACCESS_CHAINS: Quirk = Quirk {
    name: "vkd3d-proton raw access chains",
    client: Client::Engine("vkd3d"),
    setting: "raw_access_chains",
    condition: "4 < minStorageBufferOffsetAlignment <= 16 (lavapipe, NVK: 16)",
    applies: vkd3d_offset_buffer_window,
    becomes: Mode::Off,
    why: "vkd3d-proton compiles structured and byte-address buffers to raw access chains once VK_NV_raw_access_chains is offered, and dxil-spirv's raw-chain path ignores the SSBO offset buffer vkd3d-proton binds such views through on these devices: views at offsets that are not multiples of the alignment are read and written up to alignment - 4 bytes early (6 tests of its d3d12 suite fail). On NVIDIA, the one native implementation, vkd3d-proton forces the alignment to 4 and needs no offset buffer",
    reference: "vkd3d-proton libs/vkd3d/resource.c vkd3d_bindless_state_get_bindless_flags (VKD3D_SSBO_OFFSET_BUFFER), libs/vkd3d/device.c vkd3d_init_shader_extensions and vkd3d_physical_device_info_apply_workarounds; dxil-spirv opcodes/dxil/dxil_buffer.cpp emit_raw_access_chain",
};

impl Quirk {
    /// Does it concern this client on this device? The device fact, if so.
    ///
    /// # Safety
    /// `pd` is live.
    pub unsafe fn applies_to(&self, pd: &PhysDev) -> Option<String> {
        if self.client.matches(pd) {
            (self.applies)(pd)
        } else {
            None
        }
    }
}

/// The mode `setting` has on `pd` when its effective mode is `auto`: a quirk's, or `auto`.
/// Logs a quirk's decision once per instance.
///
/// # Safety
/// `pd` is live.
pub unsafe fn auto_mode(setting: &str, pd: &PhysDev) -> Mode {
    for q in QUIRKS.iter().filter(|q| q.setting == setting) {
        if let Some(fact) = q.applies_to(pd) {
            if crate::messages::first_time(q.name) {
                log_info!(
                    CLIENT_QUIRK,
                    "client quirk '{}': {} on device '{}' ({fact}): {setting}=auto means {} here, because {}. Set {setting}=force to override ({})",
                    q.name,
                    q.client,
                    pd.info.name,
                    format!("{:?}", q.becomes).to_ascii_lowercase(),
                    q.why,
                    q.reference
                );
            }
            return q.becomes;
        }
    }
    Mode::Auto
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_real_settings() {
        for q in QUIRKS {
            assert!(crate::settings::Settings::default().mode(q.setting).is_some(), "{}: {}", q.name, q.setting);
            assert_ne!(q.becomes, Mode::Auto, "{}", q.name);
        }
    }
}
