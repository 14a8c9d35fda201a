//! The table's set index in pipeline layouts (and shader objects' set layouts): the application's
//! sets, then empty padding layouts up to the reserved index, then the table's layout — where
//! the table fits beside the application's descriptors ([`budget::check`]); other layouts stay
//! as the application made them, with the reason recorded for pipelines using the table created with
//! them (pipelines.rs refuses those).
//!
//! Set layouts are recorded at creation (their descriptor counts) for that check.
//!
//! Pipeline layouts the layer extended are recorded; one that a live pipeline using the table still
//! needs (the layer binds the table with the pipeline's own layout, see commands.rs) is kept
//! alive after the application destroys it and destroyed with the last such pipeline. That is
//! invisible to the application: a layout may be destroyed right after the pipeline creation.
use super::budget::{self, Refusal, SetLayoutCounts};
use super::{table_device, TableDevice};
use crate::ffi_guard::guard;
use crate::{log_debug, log_error};
use ash::vk::{self, Handle};

/// The set-layout array with the table at `reserved`: `app` then `reserved - app.len()` copies
/// of `empty`, then `table`. `app` has at most `reserved` entries ([`budget::check`]).
pub fn padded<T: Copy>(app: &[T], reserved: u32, empty: T, table: T) -> Vec<T> {
    debug_assert!(app.len() <= reserved as usize);
    let mut out = Vec::with_capacity(reserved as usize + 1);
    out.extend_from_slice(app);
    out.resize(reserved as usize, empty);
    out.push(table);
    out
}

/// Bookkeeping per pipeline layout created on a device with a table.
#[derive(Debug, Clone, Copy, Default)]
pub struct LayoutInfo {
    /// Why the table is not at the reserved index (None: it is).
    pub no_table: Option<Refusal>,
    /// The application destroyed it; the driver's object lives on for `pipelines`.
    pub app_destroyed: bool,
    /// Live pipelines using the table created with it.
    pub pipelines: u32,
}

/// The application's set layouts of a create info.
///
/// # Safety
/// `p` readable for `n` handles when non-null.
pub unsafe fn app_sets<'a>(p: *const vk::DescriptorSetLayout, n: u32) -> &'a [vk::DescriptorSetLayout] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, n as usize)
    }
}

impl TableDevice {
    /// `app` padded to the table, or why the table does not fit beside it.
    pub fn with_table(&self, app: &[vk::DescriptorSetLayout]) -> Result<Vec<vk::DescriptorSetLayout>, Refusal> {
        let counts: Vec<_> = app.iter().map(|l| self.set_layouts.get(&l.as_raw())).collect();
        let refs: Vec<Option<&SetLayoutCounts>> = counts.iter().map(|c| c.as_deref()).collect();
        budget::check(&refs, &self.table.config, &self.limits)?;
        let t = &self.table;
        Ok(padded(app, t.config.set, t.empty_layout, t.layout))
    }
}

pub unsafe extern "system" fn create_descriptor_set_layout(
    device: vk::Device,
    p_create_info: *const vk::DescriptorSetLayoutCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_layout: *mut vk::DescriptorSetLayout,
) -> vk::Result {
    const HOOK: &str = "vkCreateDescriptorSetLayout";
    guard(HOOK, vk::Result::ERROR_UNKNOWN, || unsafe {
        let Some(b) = table_device(device) else {
            log_error!(LOADER_INTERFACE, "{HOOK}: device {device:?} has no descriptor table");
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        let Some(next) = b.next.create_descriptor_set_layout else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let r = next(device, p_create_info, p_allocator, p_layout);
        if let (vk::Result::SUCCESS, Some(ci), Some(l)) = (r, p_create_info.as_ref(), p_layout.as_ref()) {
            b.set_layouts.insert(l.as_raw(), SetLayoutCounts::from_create_info(ci));
        }
        r
    })
}

pub unsafe extern "system" fn destroy_descriptor_set_layout(
    device: vk::Device,
    layout: vk::DescriptorSetLayout,
    p_allocator: *const vk::AllocationCallbacks,
) {
    guard("vkDestroyDescriptorSetLayout", (), || unsafe {
        let Some(b) = table_device(device) else { return };
        b.set_layouts.remove(&layout.as_raw());
        if let Some(f) = b.next.destroy_descriptor_set_layout {
            f(device, layout, p_allocator);
        }
    })
}

pub unsafe extern "system" fn create_pipeline_layout(
    device: vk::Device,
    p_create_info: *const vk::PipelineLayoutCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_layout: *mut vk::PipelineLayout,
) -> vk::Result {
    const HOOK: &str = "vkCreatePipelineLayout";
    guard(HOOK, vk::Result::ERROR_UNKNOWN, || unsafe {
        let Some(b) = table_device(device) else {
            log_error!(LOADER_INTERFACE, "{HOOK}: device {device:?} has no descriptor table");
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        let Some(next) = b.next.create_pipeline_layout else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(ci) = p_create_info.as_ref() else { return next(device, p_create_info, p_allocator, p_layout) };
        let (r, no_table) = match b.with_table(app_sets(ci.p_set_layouts, ci.set_layout_count)) {
            Ok(list) => {
                let mut copy = *ci;
                copy.set_layout_count = list.len() as u32;
                copy.p_set_layouts = list.as_ptr();
                (next(device, &copy, p_allocator, p_layout), None)
            }
            Err(why) => {
                // Normal for clients that use the limits (vkd3d-proton's heaps): only an error
                // if a pipeline using the table is created with the layout (pipelines.rs).
                log_debug!(TRACE, "{HOOK}: no descriptor table in this layout: {why}");
                (next(device, p_create_info, p_allocator, p_layout), Some(why))
            }
        };
        if r == vk::Result::SUCCESS {
            if let Some(l) = p_layout.as_ref() {
                b.layouts.insert(l.as_raw(), LayoutInfo { no_table, ..Default::default() });
            }
        }
        r
    })
}

pub unsafe extern "system" fn destroy_pipeline_layout(device: vk::Device, layout: vk::PipelineLayout, p_allocator: *const vk::AllocationCallbacks) {
    const HOOK: &str = "vkDestroyPipelineLayout";
    guard(HOOK, (), || unsafe {
        let Some(b) = table_device(device) else { return };
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
            log_debug!(TRACE, "{HOOK}: layout {layout:?} still serves pipelines using the table; destroyed with the last of them");
            return;
        }
        b.layouts.remove(&layout.as_raw());
        next(device, layout, p_allocator)
    })
}

impl TableDevice {
    /// Does `layout` carry the table? Err: why not (None for a layout unknown to the layer).
    pub fn layout_table(&self, layout: vk::PipelineLayout) -> Result<(), Option<Refusal>> {
        match self.layouts.get(&layout.as_raw()).map(|i| i.no_table) {
            Some(None) => Ok(()),
            Some(Some(why)) => Err(Some(why)),
            None => Err(None),
        }
    }

    /// A pipeline using the table now uses `layout`.
    pub fn retain_layout(&self, layout: vk::PipelineLayout) {
        if let Some(mut i) = self.layouts.get_mut(&layout.as_raw()) {
            i.pipelines += 1;
        }
    }

    /// A pipeline using the table that used `layout` is gone; destroys the layout if the application
    /// already did.
    ///
    /// # Safety
    /// Calls down to destroy the layout.
    pub unsafe fn release_layout(&self, layout: vk::PipelineLayout) {
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
        assert_eq!(padded(&['a', 'b'], 7, 'E', 'T'), vec!['a', 'b', 'E', 'E', 'E', 'E', 'E', 'T']);
        assert_eq!(padded(&[], 3, 'E', 'T'), vec!['E', 'E', 'E', 'T']);
        // All sets but the last: table right after.
        assert_eq!(padded(&['a', 'b', 'c'], 3, 'E', 'T'), vec!['a', 'b', 'c', 'T']);
    }
}
