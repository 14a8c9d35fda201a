//! SPV_NV_bindless_texture → core SPIR-V on a layer-owned descriptor table ([`BindlessTable`]).
use crate::error::RewriteError;
use crate::module::Module;
use crate::stats::Stats;
use crate::target::{BindlessTable, Options};

pub fn run(_m: &mut Module, _table: &BindlessTable, _options: &Options, _stats: &mut Stats) -> Result<(), RewriteError> {
    Err(RewriteError::unsupported("module", "SPV_NV_bindless_texture lowering is not implemented yet".to_string()))
}
