//! `spvpf_scan`, `spvpf_needs_rewrite`, `spvpf_rewrite` and the `spvpf_result` they hand back.
use std::ffi::{c_char, CString};

use shader_rewrite::location::{describe, Location};
use shader_rewrite::{needs_rewrite, requirements, rewrite, scan, RewriteError, Rewritten, ScanResult, SmallStorage};

use crate::boundary::{caught, guard, put, str_arg, words_arg};
use crate::options::spvpf_options;
use crate::spvpf_status::{self, *};
use crate::stats;

/// `spvpf_result_declared` bit: capability RawAccessChainsNV.
pub const SPVPF_DECLARES_RAW_ACCESS_CHAINS: u32 = 1 << 0;
/// BindlessTextureNV.
pub const SPVPF_DECLARES_BINDLESS_TEXTURE: u32 = 1 << 1;
/// StorageBuffer16BitAccess.
pub const SPVPF_DECLARES_STORAGE_BUFFER_16BIT: u32 = 1 << 2;
/// UniformAndStorageBuffer16BitAccess.
pub const SPVPF_DECLARES_UNIFORM_AND_STORAGE_BUFFER_16BIT: u32 = 1 << 3;
/// StoragePushConstant16.
pub const SPVPF_DECLARES_STORAGE_PUSH_CONSTANT_16: u32 = 1 << 4;
/// StorageInputOutput16.
pub const SPVPF_DECLARES_STORAGE_INPUT_OUTPUT_16: u32 = 1 << 5;
/// StorageBuffer8BitAccess.
pub const SPVPF_DECLARES_STORAGE_BUFFER_8BIT: u32 = 1 << 6;
/// UniformAndStorageBuffer8BitAccess.
pub const SPVPF_DECLARES_UNIFORM_AND_STORAGE_BUFFER_8BIT: u32 = 1 << 7;
/// StoragePushConstant8.
pub const SPVPF_DECLARES_STORAGE_PUSH_CONSTANT_8: u32 = 1 << 8;
/// PhysicalStorageBufferAddresses.
pub const SPVPF_DECLARES_PHYSICAL_STORAGE_BUFFER: u32 = 1 << 9;

/// The 8/16-bit storage bits, in `SmallStorage::CAPS` order.
const SMALL_STORAGE_BITS: [u32; 7] = [
    SPVPF_DECLARES_STORAGE_BUFFER_16BIT,
    SPVPF_DECLARES_UNIFORM_AND_STORAGE_BUFFER_16BIT,
    SPVPF_DECLARES_STORAGE_PUSH_CONSTANT_16,
    SPVPF_DECLARES_STORAGE_INPUT_OUTPUT_16,
    SPVPF_DECLARES_STORAGE_BUFFER_8BIT,
    SPVPF_DECLARES_UNIFORM_AND_STORAGE_BUFFER_8BIT,
    SPVPF_DECLARES_STORAGE_PUSH_CONSTANT_8,
];

fn declared_mask(s: &ScanResult) -> u32 {
    let mut mask = 0;
    if s.raw_access_chains {
        mask |= SPVPF_DECLARES_RAW_ACCESS_CHAINS;
    }
    if s.bindless_texture {
        mask |= SPVPF_DECLARES_BINDLESS_TEXTURE;
    }
    if s.physical_storage_buffer {
        mask |= SPVPF_DECLARES_PHYSICAL_STORAGE_BUFFER;
    }
    for (cap, bit) in SmallStorage::CAPS.into_iter().zip(SMALL_STORAGE_BITS) {
        if s.small_storage.get(cap) {
            mask |= bit;
        }
    }
    mask
}

/// What a scan or a rewrite produced (opaque): the message, and what the call could compute.
/// Release with `spvpf_result_free`.
#[derive(Default)]
pub struct spvpf_result {
    message: CString,
    location: Option<Location>,
    declared: Option<u32>,
    rewritten: Option<Rewritten>,
    stats_text: CString,
    required: Vec<CString>,
}

fn text(s: String) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

impl spvpf_result {
    fn failed(message: impl Into<String>) -> Self {
        spvpf_result { message: text(message.into()), ..Default::default() }
    }
    fn from_error(words: &[u32], e: &RewriteError) -> (spvpf_status, Self) {
        let status = match e {
            RewriteError::Malformed { .. } => SPVPF_ERROR_MALFORMED,
            RewriteError::Unsupported { .. } => SPVPF_ERROR_UNSUPPORTED,
        };
        let (message, location) = describe(words, e);
        (status, spvpf_result { location, ..Self::failed(message) })
    }
}

/// Runs `work` for an entry point that hands back a result: checks `out_result`, turns a panic
/// into `SPVPF_ERROR_INTERNAL` with its message, and stores the result.
fn hand_back(out_result: *mut *mut spvpf_result, work: impl FnOnce() -> (spvpf_status, spvpf_result)) -> spvpf_status {
    guard(|| {
        if out_result.is_null() {
            return SPVPF_ERROR_INVALID_ARGUMENT;
        }
        let (status, result) = caught(work).unwrap_or_else(|panic| (SPVPF_ERROR_INTERNAL, spvpf_result::failed(panic)));
        // SAFETY: checked not NULL; the caller passes a valid pointer.
        unsafe { put(out_result, Box::into_raw(Box::new(result))) };
        status
    })
}

/// Says which emulated capabilities a module declares (`spvpf_result_declared`), looking at
/// its capability section only. `*out_result` is set whenever `out_result` is not NULL, also on
/// failure (with the message); release it with `spvpf_result_free`.
#[no_mangle]
pub unsafe extern "C" fn spvpf_scan(words: *const u32, word_count: usize, out_result: *mut *mut spvpf_result) -> spvpf_status {
    hand_back(out_result, || {
        // SAFETY: `words` is NULL or valid for `word_count` words (the caller's contract).
        let words = match unsafe { words_arg(words, word_count) } {
            Ok(w) => w,
            Err(why) => return (SPVPF_ERROR_INVALID_ARGUMENT, spvpf_result::failed(why)),
        };
        match scan(words) {
            Ok(s) => (SPVPF_SUCCESS, spvpf_result { declared: Some(declared_mask(&s)), ..Default::default() }),
            Err(e) => spvpf_result::from_error(words, &e),
        }
    })
}

/// The options as a rewrite uses them: the 8/16-bit storage the target lacks is emulated (as
/// the CLI does).
fn effective(options: &spvpf_options) -> shader_rewrite::Options {
    let mut o = options.options;
    o.emulate_storage = SmallStorage::missing_from(&o.target);
    o
}

/// Sets `*out_needed` to 1 if `spvpf_rewrite` would change the module under `options`, else 0
/// (a cheap look at the capability section: a cache can pass such modules on untouched).
/// A module with a damaged header counts as 0.
#[no_mangle]
pub unsafe extern "C" fn spvpf_needs_rewrite(options: *const spvpf_options, words: *const u32, word_count: usize, out_needed: *mut u32) -> spvpf_status {
    guard(|| {
        // SAFETY: NULL or made by spvpf_options_create; words valid for word_count (contract).
        let (Some(options), Ok(words)) = (unsafe { options.as_ref() }, unsafe { words_arg(words, word_count) }) else {
            return SPVPF_ERROR_INVALID_ARGUMENT;
        };
        let needed = needs_rewrite(words, &effective(options)) as u32;
        // SAFETY: NULL or valid (the caller's contract).
        if unsafe { put(out_needed, needed) } { SPVPF_SUCCESS } else { SPVPF_ERROR_INVALID_ARGUMENT }
    })
}

/// Rewrites a module (`word_count` words, header included, native byte order) for the target
/// `options` describe. On success the result has the words (`spvpf_result_words`), the input's
/// declared capabilities, the statistics and the device features the output needs; a module
/// that needs nothing comes back unchanged with zero statistics. `*out_result` is set whenever
/// `out_result` is not NULL, also on failure (with the message and, where known, the
/// location); release it with `spvpf_result_free`. Deterministic: the same input and options
/// give the same words.
#[no_mangle]
pub unsafe extern "C" fn spvpf_rewrite(options: *const spvpf_options, words: *const u32, word_count: usize, out_result: *mut *mut spvpf_result) -> spvpf_status {
    hand_back(out_result, || {
        // SAFETY: NULL or made by spvpf_options_create (the caller's contract).
        let Some(options) = (unsafe { options.as_ref() }) else {
            return (SPVPF_ERROR_INVALID_ARGUMENT, spvpf_result::failed("options is NULL"));
        };
        // SAFETY: `words` is NULL or valid for `word_count` words (the caller's contract).
        let words = match unsafe { words_arg(words, word_count) } {
            Ok(w) => w,
            Err(why) => return (SPVPF_ERROR_INVALID_ARGUMENT, spvpf_result::failed(why)),
        };
        let options = effective(options);
        match rewrite(words, &options) {
            Ok(r) => {
                let result = spvpf_result {
                    declared: scan(words).ok().map(|s| declared_mask(&s)),
                    stats_text: text(r.stats.to_string()),
                    required: requirements::of_rewrite(&r, &options).into_iter().map(|n| text(n.into())).collect(),
                    rewritten: Some(r),
                    ..Default::default()
                };
                (SPVPF_SUCCESS, result)
            }
            Err(e) => spvpf_result::from_error(words, &e),
        }
    })
}

/// Releases a result and everything it owns (words, strings); NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn spvpf_result_free(result: *mut spvpf_result) {
    guard(|| {
        if !result.is_null() {
            // SAFETY: made by spvpf_scan/spvpf_rewrite and not freed before (the caller's contract).
            drop(unsafe { Box::from_raw(result) });
        }
        SPVPF_SUCCESS
    });
}

/// Runs a getter on a result: NULL results and NULL out-parameters are
/// `SPVPF_ERROR_INVALID_ARGUMENT`, a missing piece `SPVPF_ERROR_NOT_AVAILABLE`.
fn get<T>(result: *const spvpf_result, out: *mut T, f: impl FnOnce(&spvpf_result) -> Result<T, spvpf_status>) -> spvpf_status {
    guard(|| {
        // SAFETY: NULL or made by spvpf_scan/spvpf_rewrite (the caller's contract).
        let Some(r) = (unsafe { result.as_ref() }) else { return SPVPF_ERROR_INVALID_ARGUMENT };
        if out.is_null() {
            return SPVPF_ERROR_INVALID_ARGUMENT;
        }
        match f(r) {
            Ok(v) => {
                // SAFETY: checked not NULL; the caller passes a valid pointer.
                unsafe { put(out, v) };
                SPVPF_SUCCESS
            }
            Err(status) => status,
        }
    })
}

/// The error message of a failed call ("" after success; "" for NULL). Owned by the result.
#[no_mangle]
pub unsafe extern "C" fn spvpf_result_message(result: *const spvpf_result) -> *const c_char {
    // SAFETY: NULL or made by spvpf_scan/spvpf_rewrite (the caller's contract).
    unsafe { result.as_ref() }.map_or(c"".as_ptr(), |r| r.message.as_ptr())
}

/// Where in the input a failure is: the instruction's index (0 = the first instruction after
/// the header), its first word, and its opcode. `SPVPF_ERROR_NOT_AVAILABLE` when the error names
/// no instruction of the input (e.g. a bad header, or an instruction the lowering made).
#[no_mangle]
pub unsafe extern "C" fn spvpf_result_error_location(result: *const spvpf_result, out_instruction_index: *mut u32, out_word_offset: *mut u32, out_opcode: *mut u32) -> spvpf_status {
    if out_word_offset.is_null() || out_opcode.is_null() {
        return SPVPF_ERROR_INVALID_ARGUMENT;
    }
    get(result, out_instruction_index, |r| {
        let l = r.location.as_ref().ok_or(SPVPF_ERROR_NOT_AVAILABLE)?;
        // SAFETY: checked not NULL above; the caller passes valid pointers.
        unsafe {
            put(out_word_offset, l.word_offset);
            put(out_opcode, l.opcode);
        }
        Ok(l.instruction_index)
    })
}

/// The rewritten module (owned by the result, valid until `spvpf_result_free`).
/// `SPVPF_ERROR_NOT_AVAILABLE` for a scan or a failed rewrite.
#[no_mangle]
pub unsafe extern "C" fn spvpf_result_words(result: *const spvpf_result, out_words: *mut *const u32, out_word_count: *mut usize) -> spvpf_status {
    if out_word_count.is_null() {
        return SPVPF_ERROR_INVALID_ARGUMENT;
    }
    get(result, out_words, |r| {
        let w = &r.rewritten.as_ref().ok_or(SPVPF_ERROR_NOT_AVAILABLE)?.words;
        // SAFETY: checked not NULL above; the caller passes a valid pointer.
        unsafe { put(out_word_count, w.len()) };
        Ok(w.as_ptr())
    })
}

/// The `SPVPF_DECLARES_*` bits of the emulated capabilities the input declares.
#[no_mangle]
pub unsafe extern "C" fn spvpf_result_declared(result: *const spvpf_result, out_mask: *mut u32) -> spvpf_status {
    get(result, out_mask, |r| r.declared.ok_or(SPVPF_ERROR_NOT_AVAILABLE))
}

/// One statistic of a rewrite by name (see `spvpf_stat_name`); an unknown name is
/// `SPVPF_ERROR_UNKNOWN_OPTION`.
#[no_mangle]
pub unsafe extern "C" fn spvpf_result_stat(result: *const spvpf_result, name: *const c_char, out_value: *mut u32) -> spvpf_status {
    get(result, out_value, |r| {
        // SAFETY: a NUL-terminated string (the caller's contract).
        let name = unsafe { str_arg(name) }.ok_or(SPVPF_ERROR_INVALID_ARGUMENT)?;
        let read = stats::find(name).ok_or(SPVPF_ERROR_UNKNOWN_OPTION)?;
        Ok(read(&r.rewritten.as_ref().ok_or(SPVPF_ERROR_NOT_AVAILABLE)?.stats))
    })
}

/// What a rewrite lowered, as one line (what `spirv-polyfill rewrite --stats` prints). Owned
/// by the result.
#[no_mangle]
pub unsafe extern "C" fn spvpf_result_stats_text(result: *const spvpf_result, out_text: *mut *const c_char) -> spvpf_status {
    get(result, out_text, |r| r.rewritten.as_ref().map(|_| r.stats_text.as_ptr()).ok_or(SPVPF_ERROR_NOT_AVAILABLE))
}

/// How many device features the rewritten module needs (see `spvpf_result_required_feature`).
#[no_mangle]
pub unsafe extern "C" fn spvpf_result_required_feature_count(result: *const spvpf_result, out_count: *mut usize) -> spvpf_status {
    get(result, out_count, |r| r.rewritten.as_ref().map(|_| r.required.len()).ok_or(SPVPF_ERROR_NOT_AVAILABLE))
}

/// The `index`-th device feature the rewritten module needs, by its Vulkan name: a feature
/// member (`"storageBuffer8BitAccess"`, `"shaderInt64"`, ...), a subgroup operation bit
/// (`"VK_SUBGROUP_FEATURE_BALLOT_BIT"`) or an extension (`"VK_EXT_shader_subgroup_ballot"`).
/// Owned by the result; an index past the count is `SPVPF_ERROR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn spvpf_result_required_feature(result: *const spvpf_result, index: usize, out_name: *mut *const c_char) -> spvpf_status {
    get(result, out_name, |r| {
        r.rewritten.as_ref().ok_or(SPVPF_ERROR_NOT_AVAILABLE)?;
        r.required.get(index).map(|n| n.as_ptr()).ok_or(SPVPF_ERROR_INVALID_ARGUMENT)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_internal_error_with_its_message() {
        let mut out: *mut spvpf_result = std::ptr::null_mut();
        assert_eq!(hand_back(&mut out, || panic!("overflow in a pass")), SPVPF_ERROR_INTERNAL);
        // SAFETY: hand_back stored a result made here.
        let message = unsafe { std::ffi::CStr::from_ptr(spvpf_result_message(out)) }.to_str().unwrap().to_string();
        assert!(message.contains("overflow in a pass"), "{message}");
        // SAFETY: made by hand_back, freed once.
        unsafe { spvpf_result_free(out) };
        assert_eq!(hand_back(std::ptr::null_mut(), || unreachable!()), SPVPF_ERROR_INVALID_ARGUMENT);
    }

    #[test]
    fn declared_bits_follow_the_capabilities() {
        for (k, cap) in SmallStorage::CAPS.into_iter().enumerate() {
            let mut s = ScanResult::default();
            s.small_storage.set(cap, true);
            assert_eq!(declared_mask(&s), 1 << (k + 2));
        }
    }
}
