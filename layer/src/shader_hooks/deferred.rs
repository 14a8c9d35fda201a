//! VK_KHR_deferred_host_operations: a deferred vkCreateRayTracingPipelinesKHR reads its
//! parameters (the layer's rewritten copies among them) until the operation completes, and
//! writes the pipelines then. The layer keeps its copies exactly that long, and tells the
//! device's observers about the pipelines at completion: when vkDeferredOperationJoinKHR returns
//! VK_SUCCESS, vkGetDeferredOperationResultKHR returns anything but VK_NOT_READY, or the
//! operation is destroyed (which the spec allows only once it completed). A creation that
//! returns anything but VK_OPERATION_DEFERRED_KHR completed in the call (pipelines.rs).
use super::{device as device_of, pipelines_created};
pub use crate::deferred_copies::{Completion, Erased};
use crate::dispatch::DeviceData;
use crate::ffi_guard::guard;
use crate::log_debug;
use ash::vk;

/// Keeps `c` until `op` completes.
pub fn keep(dev: &DeviceData, op: vk::DeferredOperationKHR, c: Completion) {
    dev.deferred.keep(op, c);
}

/// `op` completed: its completions run, its copies are freed.
unsafe fn completed(dev: &DeviceData, op: vk::DeferredOperationKHR) {
    for c in dev.deferred.take(op) {
        log_debug!(DEFERRED_OPERATION, "{}: deferred operation {op:?} completed; the layer's copies are freed", c.hook);
        c.complete(|hook, descs, out| pipelines_created(dev, hook, descs, out));
    }
}

pub unsafe extern "system" fn deferred_operation_join(device: vk::Device, op: vk::DeferredOperationKHR) -> vk::Result {
    const HOOK: &str = "vkDeferredOperationJoinKHR";
    guard(HOOK, vk::Result::ERROR_UNKNOWN, || unsafe {
        let Some(dev) = device_of(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = dev.next.deferred_operation_join else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let r = next(device, op);
        // VK_SUCCESS: the operation is complete (THREAD_DONE/THREAD_IDLE: not yet).
        if r == vk::Result::SUCCESS {
            completed(&dev, op);
        }
        r
    })
}

pub unsafe extern "system" fn get_deferred_operation_result(device: vk::Device, op: vk::DeferredOperationKHR) -> vk::Result {
    const HOOK: &str = "vkGetDeferredOperationResultKHR";
    guard(HOOK, vk::Result::ERROR_UNKNOWN, || unsafe {
        let Some(dev) = device_of(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = dev.next.get_deferred_operation_result else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let r = next(device, op);
        if r != vk::Result::NOT_READY {
            completed(&dev, op);
        }
        r
    })
}

pub unsafe extern "system" fn destroy_deferred_operation(device: vk::Device, op: vk::DeferredOperationKHR, p_allocator: *const vk::AllocationCallbacks) {
    const HOOK: &str = "vkDestroyDeferredOperationKHR";
    guard(HOOK, (), || unsafe {
        let Some(dev) = device_of(device, HOOK) else { return };
        // VUID-vkDestroyDeferredOperationKHR-operation-03436: it completed.
        completed(&dev, op);
        if let Some(next) = dev.next.destroy_deferred_operation {
            next(device, op, p_allocator);
        }
    })
}

