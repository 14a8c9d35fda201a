//! Crossing the C boundary: panics caught, pointers and sizes checked before use.
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::spvpf_status::{self, SPVPF_ERROR_INTERNAL};

/// Runs `f`, turning a panic into `Err(message)`.
pub fn caught<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let what = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
        format!("internal error (panic): {}", what.unwrap_or_else(|| "no message".into()))
    })
}

/// Runs the body of an entry point; a panic becomes `SPVPF_ERROR_INTERNAL`.
pub fn guard(f: impl FnOnce() -> spvpf_status) -> spvpf_status {
    caught(f).unwrap_or(SPVPF_ERROR_INTERNAL)
}

/// Writes `v` through `out` unless it is NULL; false when it is.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub unsafe fn put<T>(out: *mut T, v: T) -> bool {
    if out.is_null() {
        return false;
    }
    // SAFETY: not NULL, and valid (the function's contract).
    unsafe { out.write(v) };
    true
}

/// A NUL-terminated UTF-8 string from C, or None (NULL, or not UTF-8).
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that outlives `'a`.
pub unsafe fn str_arg<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: not NULL, and NUL-terminated (the function's contract).
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// A SPIR-V word buffer from C: not NULL, not empty, 4-byte aligned.
///
/// # Safety
/// `words` is NULL or valid for reads of `count` words for `'a`.
pub unsafe fn words_arg<'a>(words: *const u32, count: usize) -> Result<&'a [u32], &'static str> {
    if words.is_null() {
        return Err("words is NULL");
    }
    if count == 0 {
        return Err("word_count is 0");
    }
    if count > isize::MAX as usize / 4 {
        return Err("word_count is larger than any buffer");
    }
    if !words.is_aligned() {
        return Err("words is not 4-byte aligned");
    }
    // SAFETY: not NULL, aligned, small enough, and readable (the function's contract).
    Ok(unsafe { std::slice::from_raw_parts(words, count) })
}
