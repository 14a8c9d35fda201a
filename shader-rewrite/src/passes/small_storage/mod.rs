//! Lowers the 8/16-bit storage capabilities (SPV_KHR_16bit_storage, SPV_KHR_8bit_storage).
use crate::error::RewriteError;
use crate::module::Module;
use crate::stats::Stats;
use crate::target::{Options, SmallStorage};

pub fn run(_m: &mut Module, caps: SmallStorage, _options: &Options, _stats: &mut Stats) -> Result<(), RewriteError> {
    Err(RewriteError::unsupported("module", format!("lowering {} is not implemented yet", caps.names().join(", "))))
}
