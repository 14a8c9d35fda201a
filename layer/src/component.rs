//! State an emulation attaches to the core's objects without the core knowing its type.
//!
//! - [`Slots`]: per-physical-device caches (an emulation's capabilities, queried once), one
//!   value per Rust type, held by `dispatch::PhysicalDeviceInfo`.
//! - [`DeviceComponent`]: an emulation's (or a shared service's) per-device state, created at
//!   `vkCreateDevice` (`emulation::DevicePlan::set_up`) and held by `dispatch::DeviceData`. A
//!   component hands out the device commands it intercepts, may watch the shaders and pipelines
//!   the device creates ([`ShaderObserver`]), and is torn down at `vkDestroyDevice`.
use ash::vk;
use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex, OnceLock};

/// One value per type, created on first use and never removed.
#[derive(Default)]
pub struct Slots(Mutex<Vec<(TypeId, Arc<dyn Any + Send + Sync>)>>);

impl Slots {
    /// The cell of type `T`, created empty the first time. The lock is held only to find or
    /// insert the cell, so `init` of a [`OnceLock`] cell may call down to the driver.
    pub fn cell<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, v)) = all.iter().find(|(t, _)| *t == TypeId::of::<T>()) {
            if let Ok(v) = v.clone().downcast::<T>() {
                return v;
            }
        }
        let v = Arc::new(T::default());
        all.push((TypeId::of::<T>(), v.clone()));
        v
    }

    /// `T`'s value, computed by `init` the first time (concurrent first callers wait for one
    /// `init`).
    pub fn get_or_init<T: Clone + Send + Sync + 'static>(&self, init: impl FnOnce() -> T) -> T {
        self.cell::<OnceLock<T>>().get_or_init(init).clone()
    }
}

/// How a [`ShaderObserver`] sees one pipeline about to be created (or just created).
pub struct PipelineDesc<'a> {
    pub bind_point: vk::PipelineBindPoint,
    pub layout: vk::PipelineLayout,
    /// The application's stages (before the layer rewrote any code); empty when the create
    /// info's stages are ignored (graphics pipeline libraries without shader state).
    pub stages: &'a [vk::PipelineShaderStageCreateInfo<'a>],
    /// `VkPipelineLibraryCreateInfoKHR` of the create info (null when absent).
    pub libraries: *const vk::PipelineLibraryCreateInfoKHR<'a>,
}

/// What a [`ShaderObserver`] keeps across a `vkCreateShadersEXT` call down.
pub trait ShadersPending {
    /// After the call down; `shaders` holds the created handles (null where not created).
    ///
    /// # Safety
    /// `shaders` is the application's output array of the call (or null).
    unsafe fn created(self: Box<Self>, hook: &str, shaders: *const vk::ShaderEXT);
}

/// A component that must see the device's shaders and pipelines (the descriptor table: which
/// pipelines use it, and whether their layouts have room for it).
pub trait ShaderObserver: Send + Sync {
    /// After vkCreateShaderModule succeeded; `code` is the application's.
    ///
    /// # Safety
    /// `code` readable for `size` bytes when non-null.
    unsafe fn module_created(&self, module: vk::ShaderModule, code: *const std::ffi::c_void, size: usize);
    /// Before pipelines are created: `false` refuses the whole call (the reason is logged).
    /// `deferred`: the creation is deferred (VK_KHR_deferred_host_operations).
    ///
    /// # Safety
    /// The descriptions point into valid create infos.
    unsafe fn pipelines_allowed(&self, hook: &str, pipelines: &[PipelineDesc], deferred: bool) -> bool;
    /// After the call down: `created[i]` is the pipeline of `pipelines[i]` (null if none).
    ///
    /// # Safety
    /// As for [`Self::pipelines_allowed`].
    unsafe fn pipelines_created(&self, hook: &str, pipelines: &[PipelineDesc], created: &[vk::Pipeline]);
    /// vkCreateShadersEXT: may edit `copies` (the create infos handed down, code already
    /// rewritten; `app` are the application's). `Err` refuses the call (logged).
    ///
    /// # Safety
    /// `app` and `copies` are valid create infos of the same length.
    unsafe fn shaders_before<'a>(
        &'a self,
        hook: &str,
        app: &[vk::ShaderCreateInfoEXT],
        copies: &mut [vk::ShaderCreateInfoEXT],
    ) -> Result<Box<dyn ShadersPending + 'a>, vk::Result>;
}

/// An emulation's or a service's state on one device.
pub trait DeviceComponent: Any + Send + Sync {
    /// vkGetDeviceProcAddr: the layer's entry point for `name` if this component intercepts it.
    /// `next_exists`: the command exists below (hooks that call down are only handed out then).
    fn device_hook(&self, _name: &[u8], _next_exists: bool) -> vk::PFN_vkVoidFunction {
        None
    }
    /// Watches shader and pipeline creation.
    fn shader_observer(&self) -> Option<&dyn ShaderObserver> {
        None
    }
    /// At vkDestroyDevice, before calling down (the device is idle).
    ///
    /// # Safety
    /// The device is about to be destroyed.
    unsafe fn destroy(&self) {}
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

/// The components of one device, in set-up order.
#[derive(Default, Clone)]
pub struct Components(Vec<Arc<dyn DeviceComponent>>);

impl Components {
    pub fn push(&mut self, c: Arc<dyn DeviceComponent>) {
        self.0.push(c);
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Arc<dyn DeviceComponent>> {
        self.0.iter()
    }

    /// The component of type `T`, if the device has one.
    pub fn get<T: DeviceComponent>(&self) -> Option<Arc<T>> {
        self.0.iter().find_map(|c| c.clone().into_any().downcast::<T>().ok())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Implements [`DeviceComponent::into_any`].
#[macro_export]
macro_rules! into_any {
    () => {
        fn into_any(self: std::sync::Arc<Self>) -> std::sync::Arc<dyn std::any::Any + Send + Sync> {
            self
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    struct A(u32);
    impl DeviceComponent for A {
        into_any!();
    }
    struct B;
    impl DeviceComponent for B {
        into_any!();
    }

    #[test]
    fn typed_lookups() {
        let mut c = Components::default();
        c.push(Arc::new(A(7)));
        assert_eq!(c.get::<A>().map(|a| a.0), Some(7));
        assert!(c.get::<B>().is_none());
        let s = Slots::default();
        assert_eq!(s.get_or_init(|| 3u32), 3);
        assert_eq!(s.get_or_init(|| 4u32), 3, "computed once");
        assert_eq!(s.get_or_init(|| "x".to_string()), "x", "one value per type");
    }
}
