//! The table's set index in pipeline layouts (and shader objects' set layouts): the application's
//! sets, then empty padding layouts up to the reserved index, then the table's layout.
//!
//! Pipeline layouts the layer extended are recorded; one that a live bindless pipeline still
//! needs (the layer binds the table with the pipeline's own layout, see commands.rs) is kept
//! alive after the application destroys it and destroyed with the last such pipeline. That is
//! invisible to the application: a layout may be destroyed right after the pipeline creation.
use super::{bindless_device, BindlessDevice};
use crate::ffi_guard::guard;
use crate::{log_debug, log_error, log_info};
use ash::vk;

/// The set-layout array with the table at `reserved`: `app` then `reserved - app.len()` copies
/// of `empty`, then `table`. `None` when the application's sets already reach the reserved
/// index (it ignored the lowered `maxBoundDescriptorSets`): the layout stays as it is.
pub fn padded<T: Copy>(app: &[T], reserved: u32, empty: T, table: T) -> Option<Vec<T>> {
    let n = app.len();
    if n > reserved as usize {
        return None;
    }
    let mut out = Vec::with_capacity(reserved as usize + 1);
    out.extend_from_slice(app);
    out.resize(reserved as usize, empty);
    out.push(table);
    Some(out)
}

/// Bookkeeping per pipeline layout created on a bindless device.
#[derive(Debug, Clone, Copy, Default)]
pub struct LayoutInfo {
    /// The table sits at the reserved index.
    pub has_table: bool,
    /// The application destroyed it; the driver's object lives on for `pipelines`.
    pub app_destroyed: bool,
    /// Live bindless pipelines created with it.
    pub pipelines: u32,
}

pub unsafe extern "system" fn create_pipeline_layout(
    device: vk::Device,
    p_create_info: *const vk::PipelineLayoutCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_layout: *mut vk::PipelineLayout,
) -> vk::Result {
    const HOOK: &str = "vkCreatePipelineLayout";
    guard(HOOK, vk::Result::ERROR_UNKNOWN, || unsafe {
        let Some(b) = bindless_device(device) else {
            log_error!("{HOOK}: device {device:?} has no bindless state");
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        let Some(next) = b.next.create_pipeline_layout else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(ci) = p_create_info.as_ref() else { return next(device, p_create_info, p_allocator, p_layout) };
        let app: &[vk::DescriptorSetLayout] = if ci.p_set_layouts.is_null() || ci.set_layout_count == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(ci.p_set_layouts, ci.set_layout_count as usize)
        };
        let t = &b.table;
        let (r, has_table) = match padded(app, t.config.set, t.empty_layout, t.layout) {
            Some(list) => {
                let mut copy = *ci;
                copy.set_layout_count = list.len() as u32;
                copy.p_set_layouts = list.as_ptr();
                (next(device, &copy, p_allocator, p_layout), true)
            }
            None => {
                log_info!(
                    "{HOOK}: {} set layouts reach the bindless table's reserved set {}; layout left as is (bindless shaders cannot use it)",
                    app.len(),
                    t.config.set
                );
                (next(device, p_create_info, p_allocator, p_layout), false)
            }
        };
        if r == vk::Result::SUCCESS {
            if let Some(l) = p_layout.as_ref() {
                use ash::vk::Handle;
                b.layouts.insert(l.as_raw(), LayoutInfo { has_table, ..Default::default() });
            }
        }
        r
    })
}

pub unsafe extern "system" fn destroy_pipeline_layout(device: vk::Device, layout: vk::PipelineLayout, p_allocator: *const vk::AllocationCallbacks) {
    const HOOK: &str = "vkDestroyPipelineLayout";
    guard(HOOK, (), || unsafe {
        use ash::vk::Handle;
        let Some(b) = bindless_device(device) else { return };
        let Some(next) = b.next.destroy_pipeline_layout else { return };
        if layout == vk::PipelineLayout::null() {
            return next(device, layout, p_allocator);
        }
        let keep = match b.layouts.get_mut(&layout.as_raw()) {
            Some(mut info) if info.pipelines > 0 => {
                info.app_destroyed = true;
                true
            }
            _ => false,
        };
        if keep {
            log_debug!("{HOOK}: layout {layout:?} still serves bindless pipelines; destroyed with the last of them");
            return;
        }
        b.layouts.remove(&layout.as_raw());
        next(device, layout, p_allocator)
    })
}

impl BindlessDevice {
    /// Does `layout` carry the table? (Unknown layouts: no.)
    pub fn layout_has_table(&self, layout: vk::PipelineLayout) -> bool {
        use ash::vk::Handle;
        self.layouts.get(&layout.as_raw()).is_some_and(|i| i.has_table)
    }

    /// A bindless pipeline now uses `layout`.
    pub fn retain_layout(&self, layout: vk::PipelineLayout) {
        use ash::vk::Handle;
        if let Some(mut i) = self.layouts.get_mut(&layout.as_raw()) {
            i.pipelines += 1;
        }
    }

    /// A bindless pipeline that used `layout` is gone; destroys the layout if the application
    /// already did.
    ///
    /// # Safety
    /// Calls down to destroy the layout.
    pub unsafe fn release_layout(&self, layout: vk::PipelineLayout) {
        use ash::vk::Handle;
        let destroy = match self.layouts.get_mut(&layout.as_raw()) {
            Some(mut i) => {
                i.pipelines = i.pipelines.saturating_sub(1);
                i.pipelines == 0 && i.app_destroyed
            }
            None => false,
        };
        if destroy {
            self.layouts.remove(&layout.as_raw());
            if let Some(d) = self.next.destroy_pipeline_layout {
                d(self.device, layout, std::ptr::null());
            }
        }
    }

    /// At vkDestroyDevice: layouts the application destroyed but the layer kept.
    ///
    /// # Safety
    /// Calls down.
    pub unsafe fn destroy_kept_layouts(&self) {
        use ash::vk::Handle;
        let kept: Vec<u64> = self.layouts.iter().filter(|e| e.app_destroyed).map(|e| *e.key()).collect();
        if let Some(d) = self.next.destroy_pipeline_layout {
            for l in kept {
                d(self.device, vk::PipelineLayout::from_raw(l), std::ptr::null());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding() {
        // E = empty, T = table; reserved index 7 (maxBoundDescriptorSets 8).
        assert_eq!(padded(&['a', 'b'], 7, 'E', 'T').unwrap(), vec!['a', 'b', 'E', 'E', 'E', 'E', 'E', 'T']);
        assert_eq!(padded(&[], 3, 'E', 'T').unwrap(), vec!['E', 'E', 'E', 'T']);
        // Exactly the reported maximum (reserved index many sets): table right after.
        assert_eq!(padded(&['a', 'b', 'c'], 3, 'E', 'T').unwrap(), vec!['a', 'b', 'c', 'T']);
        // More than the application was told it may use: left alone.
        assert!(padded(&['a', 'b', 'c', 'd'], 3, 'E', 'T').is_none());
    }
}
