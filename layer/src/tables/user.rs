//! What an emulation brings to the table when it joins it.
use super::features::{Core, Indexing};
use super::table::TableArray;
use shader_rewrite::ScanResult;

/// One emulation using the table on a device.
#[derive(Debug, Clone)]
pub struct TableUser {
    /// For logs (the emulated extension).
    pub name: &'static str,
    /// Its arrays in the table's set.
    pub arrays: Vec<TableArray>,
    /// The descriptor-indexing features its arrays and lowered shaders need.
    pub indexing: &'static [Indexing],
    /// Core dynamic-indexing features it uses (only those the device supports).
    pub core: Vec<Core>,
    /// Its lowered shaders may leave storage-buffer bounds checks to the driver: the table turns
    /// on robustBufferAccess2 where the device has it (tables/robustness2.rs), and the rewrite
    /// sees it in `Target::robust_buffer_access2`.
    pub robust_buffers: bool,
    /// Does a module with this scan use the user's arrays once rewritten?
    pub uses: fn(&ScanResult) -> bool,
}
