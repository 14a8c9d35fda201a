//! Differential tests of the 8/16-bit storage emulation (SPV_KHR_16bit_storage,
//! SPV_KHR_8bit_storage): generated compute shaders run natively on lavapipe (which has every
//! 8/16-bit buffer feature) and again through the layer with the feature forced to emulation;
//! the outputs must be identical byte for byte, and the native run must match a CPU reference.
//!
//! - [`case`]: the dimensions (block kind, type, shape, operation, layout, capabilities, access
//!   form, SPIR-V version, rounding, invocation mapping) and the slice / full sweep.
//! - [`gen`]: a case → SPIR-V assembly + buffers + CPU reference.
//! - [`run`]: contexts per forced configuration, execution, comparison, dump checks.
//! - [`io16`]: the StorageInputOutput16 graphics shaders (vertex → fragment, 16-bit varyings).
//! - [`f16`]: binary16 conversions with RTE / RTZ rounding.

pub mod asm;
pub mod case;
pub mod f16;
pub mod gen;
pub mod io16;
pub mod run;

pub use case::Case;
