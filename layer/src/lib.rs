//! VK_LAYER_POLYFILL_extensions: a Vulkan layer (loader interface v2) that advertises shader
//! extensions the driver lacks and rewrites SPIR-V so the driver never sees them.
//!
//! Layout (the core names no emulation; `tests::module_graph` checks that no module imports
//! another that imports it back):
//! - `loader_interface`: exported symbols, vkGetInstanceProcAddr / vkGetDeviceProcAddr
//! - `instance`: vkCreateInstance/vkDestroyInstance, extension, feature and property queries
//! - `device`, `device_features`: vkCreateDevice (a sequence of steps over the emulations'
//!   plans) / vkDestroyDevice, features the lowering needs
//! - `shader_hooks`, `module_rewrite`, `rewrite_cache`: every path SPIR-V takes to the driver
//! - `emulation`, `component`: the interface between the core and the emulations (plans,
//!   per-device components, per-physical-device slots)
//! - `ext::*`: one module per emulation, registered in `ext::ALL`
//! - `tables`: the layer-owned descriptor table, a service the emulations use
//! - `settings`, `log`, `ffi_guard`, `pnext`, `dispatch`, `vk_layer`, `struct_sizes`: plumbing
// The library name is fixed by the Vulkan layer naming convention (libVkLayer_*.so).
#![allow(non_snake_case)]
// Hooks are Vulkan entry points: their safety contract is the Vulkan valid-usage rules.
#![allow(clippy::missing_safety_doc)]

/// Casts a hook to `PFN_vkVoidFunction`.
#[macro_export]
macro_rules! pfn {
    ($f:expr) => {
        {
            let f = $f as *const ();
            // SAFETY: a function pointer cast to the generic PFN type the loader hands out.
            Some(unsafe { std::mem::transmute::<*const (), unsafe extern "system" fn()>(f) })
        }
    };
}

pub mod log;
pub mod messages;
pub mod messengers;

pub mod component;
pub mod deferred_copies;
pub mod descriptor_limits;
pub mod device;
pub mod device_features;
pub mod dispatch;
pub mod emulation;
pub mod ext;
pub mod ffi_guard;
pub mod instance;
pub mod loader_interface;
pub mod module_rewrite;
pub mod pnext;
pub mod quirks;
pub mod rewrite_cache;
pub mod settings;
pub mod shader_hooks;
pub mod struct_sizes;
pub mod subgroup_stages;
pub mod tables;
pub mod tooling;
pub mod vk_layer;
