//! `libspirv_polyfill`: the C API of `shader-rewrite` (header `spirv_polyfill.h`, generated
//! from this crate by cbindgen).
//!
//! Conventions (those of SPIRV-Tools' `libspirv.h`, SPIRV-Cross's `spirv_cross_c.h` and
//! dxil-spirv's `dxil_spirv_c.h`):
//! - opaque handles (`spvpf_options`, `spvpf_result`), created by the library and released with
//!   their `*_free` function, which accepts NULL;
//! - every call that can fail returns a `spvpf_status`; NULL pointers, zero sizes and integers
//!   out of their range are `SPVPF_ERROR_INVALID_ARGUMENT`, never undefined behaviour;
//! - options are set by name, so new options never change the ABI;
//! - a failed scan or rewrite still hands back a result (when `out_result` is not NULL) that
//!   holds the error message and, where known, the instruction it is about;
//! - panics are caught at the boundary (`SPVPF_ERROR_INTERNAL`); there is no global mutable
//!   state, so independent calls may run on any threads at the same time.
//!
//! Safety, for every `unsafe` entry point: each pointer is NULL or valid for what its
//! documentation says (a NUL-terminated string, `word_count` words, a handle this library made
//! and has not released), which C cannot express and the library cannot check.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)] // said once above, for all entry points
#![warn(unsafe_op_in_unsafe_fn)]

mod boundary;
mod options;
mod result;
mod stats;

pub use options::*;
pub use result::*;
pub use stats::*;

/// Major version of the library this header belongs to (compare with `spvpf_get_version`).
pub const SPVPF_VERSION_MAJOR: u32 = 0;
/// Minor version.
pub const SPVPF_VERSION_MINOR: u32 = 1;
/// Patch version.
pub const SPVPF_VERSION_PATCH: u32 = 0;

/// What every call returns.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum spvpf_status {
    SPVPF_SUCCESS = 0,
    /// A NULL pointer, a zero size, a misaligned word pointer, or an integer out of range.
    SPVPF_ERROR_INVALID_ARGUMENT = 1,
    /// No option (or statistic) has that name.
    SPVPF_ERROR_UNKNOWN_OPTION = 2,
    /// The input is not well-formed SPIR-V.
    SPVPF_ERROR_MALFORMED = 3,
    /// The module is well-formed but uses something that cannot be lowered for the target.
    SPVPF_ERROR_UNSUPPORTED = 4,
    /// The result holds no such information (e.g. words of a scan or of a failed rewrite).
    SPVPF_ERROR_NOT_AVAILABLE = 5,
    /// A bug in the library (a caught panic); the message says what.
    SPVPF_ERROR_INTERNAL = 6,
}

use spvpf_status::*;

/// A readable name for a status (as an integer, so any value is accepted); never NULL, static.
#[no_mangle]
pub extern "C" fn spvpf_status_string(status: i32) -> *const std::ffi::c_char {
    let s: &'static std::ffi::CStr = match status {
        0 => c"success",
        1 => c"invalid argument",
        2 => c"unknown option",
        3 => c"malformed SPIR-V",
        4 => c"unsupported by the lowering",
        5 => c"not available",
        6 => c"internal error",
        _ => c"unknown status",
    };
    s.as_ptr()
}

/// The library's version at run time.
#[no_mangle]
pub unsafe extern "C" fn spvpf_get_version(out_major: *mut u32, out_minor: *mut u32, out_patch: *mut u32) -> spvpf_status {
    if out_major.is_null() || out_minor.is_null() || out_patch.is_null() {
        return SPVPF_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: checked not NULL; the caller passes valid pointers.
    unsafe {
        boundary::put(out_major, SPVPF_VERSION_MAJOR);
        boundary::put(out_minor, SPVPF_VERSION_MINOR);
        boundary::put(out_patch, SPVPF_VERSION_PATCH);
    }
    SPVPF_SUCCESS
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_macros_match_the_package() {
        assert_eq!(
            format!("{}.{}.{}", super::SPVPF_VERSION_MAJOR, super::SPVPF_VERSION_MINOR, super::SPVPF_VERSION_PATCH),
            env!("CARGO_PKG_VERSION")
        );
    }
}
