//! SPV_KHR_physical_storage_buffer → core SPIR-V on a layer-owned table of storage buffers
//! ([`BdaTable`]), for devices without `bufferDeviceAddress`.
//!
//! Not implemented yet: every module that needs it is refused with a clear error.
use crate::bda::BdaTable;
use crate::error::RewriteError;
use crate::module::Module;
use crate::stats::Stats;
use crate::target::Options;

pub fn run(_module: &mut Module, _table: &BdaTable, _options: &Options, _stats: &mut Stats) -> Result<(), RewriteError> {
    Err(RewriteError::unsupported("OpCapability PhysicalStorageBufferAddresses", "the physical-storage-buffer lowering is not implemented yet"))
}
