//! Copies kept for deferred operations (VK_KHR_deferred_host_operations): a deferred pipeline
//! creation reads its parameters — the layer's rewritten copies among them — until the
//! operation completes. [`Pending`] holds each operation's [`Completion`]s (the copies, and what
//! the observers must hear of the pipelines) until shader_hooks/deferred.rs sees it complete.
use crate::component::PipelineDesc;
use ash::vk::{self, Handle};
use std::collections::HashMap;
use std::sync::Mutex;

/// An owned value of any type, dropped by [`Drop`] through a function pointer made for its
/// type (its lifetimes are phantom: everything it points to is owned by it or by the
/// application, which keeps deferred parameters valid until completion).
pub struct Erased {
    data: *mut (),
    drop: unsafe fn(*mut ()),
}

impl Erased {
    pub fn new<X>(x: X) -> Erased {
        unsafe fn drop_box<X>(p: *mut ()) {
            drop(Box::from_raw(p as *mut X));
        }
        Erased { data: Box::into_raw(Box::new(x)) as *mut (), drop: drop_box::<X> }
    }
}

impl Drop for Erased {
    fn drop(&mut self) {
        // SAFETY: `data` came from Box::into_raw of the type `drop` was made for.
        unsafe { (self.drop)(self.data) }
    }
}

/// A pipeline as the observers see it, without lifetimes (the application keeps the create
/// infos valid until completion).
#[derive(Clone, Copy)]
struct RawDesc {
    bind_point: vk::PipelineBindPoint,
    layout: vk::PipelineLayout,
    stages: *const vk::PipelineShaderStageCreateInfo<'static>,
    stage_count: usize,
    libraries: *const vk::PipelineLibraryCreateInfoKHR<'static>,
}

/// What completes with a deferred pipeline creation.
pub struct Completion {
    pub hook: &'static str,
    descs: Vec<RawDesc>,
    /// The application's pPipelines (valid until completion).
    out: *const vk::Pipeline,
    /// The layer's copies the driver reads until then.
    _copies: Erased,
}

// SAFETY: raw pointers to data the application keeps valid until completion, and owned copies;
// completion may run on any thread (whichever joins).
unsafe impl Send for Completion {}

impl Completion {
    pub fn new(hook: &'static str, descs: &[PipelineDesc], out: *const vk::Pipeline, copies: Erased) -> Completion {
        let descs = descs
            .iter()
            .map(|d| RawDesc { bind_point: d.bind_point, layout: d.layout, stages: d.stages.as_ptr() as *const _, stage_count: d.stages.len(), libraries: d.libraries as *const _ })
            .collect();
        Completion { hook, descs, out, _copies: copies }
    }

    /// The operation completed: `created` hears of the pipelines (which exist, or are
    /// VK_NULL_HANDLE); the copies go.
    ///
    /// # Safety
    /// The application's create infos and pPipelines are still valid.
    pub unsafe fn complete(self, created: impl FnOnce(&str, &[PipelineDesc], *const vk::Pipeline)) {
        let descs: Vec<PipelineDesc> = self
            .descs
            .iter()
            .map(|d| PipelineDesc {
                bind_point: d.bind_point,
                layout: d.layout,
                stages: if d.stages.is_null() { &[] } else { std::slice::from_raw_parts(d.stages, d.stage_count) },
                libraries: d.libraries,
            })
            .collect();
        created(self.hook, &descs, self.out);
    }
}

/// Deferred creations not yet completed, by operation.
#[derive(Default)]
pub struct Pending(Mutex<HashMap<u64, Vec<Completion>>>);

impl Pending {
    pub fn keep(&self, op: vk::DeferredOperationKHR, c: Completion) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).entry(op.as_raw()).or_default().push(c);
    }
    pub fn take(&self, op: vk::DeferredOperationKHR) -> Vec<Completion> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&op.as_raw()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Counts its drops.
    struct Canary(Arc<AtomicUsize>);
    impl Drop for Canary {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A deferred operation's copies live until it completes, then the observers hear of the
    /// pipelines (read from the application's array at that time) and the copies are freed;
    /// other operations are untouched.
    #[test]
    fn kept_until_completion() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let stages = [vk::PipelineShaderStageCreateInfo::default()];
        let descs = [PipelineDesc { bind_point: vk::PipelineBindPoint::RAY_TRACING_KHR, layout: vk::PipelineLayout::from_raw(7), stages: &stages, libraries: std::ptr::null() }];
        let mut out = [vk::Pipeline::null()];
        let out = out.as_mut_ptr();
        let pending = Pending::default();
        let (a, b) = (vk::DeferredOperationKHR::from_raw(1), vk::DeferredOperationKHR::from_raw(2));
        pending.keep(a, Completion::new("hook", &descs, out, Erased::new(Canary(dropped.clone()))));
        pending.keep(b, Completion::new("hook", &descs, out, Erased::new(Canary(dropped.clone()))));
        assert_eq!(dropped.load(Ordering::SeqCst), 0, "kept while pending");
        unsafe { *out = vk::Pipeline::from_raw(42) }; // written by the driver at completion
        let mut heard = Vec::new();
        for c in pending.take(a) {
            unsafe { c.complete(|hook, d, p| heard.push((hook.to_string(), d.len(), d[0].layout, d[0].stages.len(), *p))) };
        }
        assert_eq!(heard, vec![("hook".to_string(), 1, vk::PipelineLayout::from_raw(7), 1, vk::Pipeline::from_raw(42))]);
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "a's copies freed at completion");
        assert!(pending.take(a).is_empty(), "completed once");
        drop(pending.take(b));
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
    }
}
