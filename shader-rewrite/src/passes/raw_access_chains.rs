//! Lowers OpRawAccessChainNV (SPV_NV_raw_access_chains).
use crate::{error::RewriteError, module::Module, stats::Stats, target::Options};

pub fn run(_m: &mut Module, _o: &Options, _s: &mut Stats) -> Result<(), RewriteError> {
    Err(RewriteError::unsupported("OpRawAccessChainNV", "lowering not built yet"))
}
