//! The generated conformance matrix for `OpRawAccessChainNV` (SPV_NV_raw_access_chains).
//!
//! - [`model`]: the reference semantics (addresses, robustness, poison) in pure Rust.
//! - [`case`]: the dimensions and one [`case::Case`].
//! - [`gen`]: a case → SPIR-V assembly + buffers + expected results ([`gen::plan`]).
//! - [`cases`]: the default slice (all robustness × addressing × op × type × component-count
//!   combinations, all pairs of all dimensions) and the full sweep.
//! - [`corpus`]: the dxil-spirv corpus: buffers, cut ranges, expected results.
//! - [`interp`]: a CPU interpreter of the dxil-spirv corpus shaders over the model.
//! - [`run`]: validation, rewrite check, execution through the layer, byte-wise comparison.

pub mod asm;
pub mod case;
pub mod cases;
pub mod corpus;
pub mod gen;
pub mod interp;
pub mod model;
pub mod rng;
pub mod run;

pub use case::Case;
