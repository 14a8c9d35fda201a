//! `spvpf_options`: the target device and what to emulate, set by name
//! (`shader_rewrite::named_options`, the table the CLI's `--set` uses too).
use std::ffi::{c_char, CString};

use shader_rewrite::named_options::{self, Kind};
use shader_rewrite::{Options, Target};

use crate::boundary::{guard, put, str_arg};
use crate::spvpf_status::{self, *};

/// `spvpf_options_create` target: every optional feature the lowering can use.
pub const SPVPF_TARGET_ALL: u32 = 0;
/// `spvpf_options_create` target: only what Vulkan 1.0 guarantees.
pub const SPVPF_TARGET_CORE: u32 = 1;
/// `oob_poison` value that turns the poison off (the default).
pub const SPVPF_OOB_POISON_OFF: u32 = 0xFFFF_FFFF;

/// Options for `spvpf_rewrite` (opaque). Read-only during a rewrite, so one options object may
/// serve concurrent rewrites; setting options while another thread uses it is a data race.
pub struct spvpf_options {
    pub(crate) options: Options,
    last_error: CString,
}

impl spvpf_options {
    fn fail(&mut self, status: spvpf_status, message: String) -> spvpf_status {
        self.last_error = CString::new(message).unwrap_or_default();
        status
    }
}

/// Creates options for `target` (`SPVPF_TARGET_ALL` or `SPVPF_TARGET_CORE`; other values are
/// `SPVPF_ERROR_INVALID_ARGUMENT`) with raw access chains emulated, no OOB poison, no
/// bindless and no buffer-device-address lowering. Release with `spvpf_options_free`.
#[no_mangle]
pub unsafe extern "C" fn spvpf_options_create(target: u32, out_options: *mut *mut spvpf_options) -> spvpf_status {
    guard(|| {
        let target = match target {
            SPVPF_TARGET_ALL => Target::all(),
            SPVPF_TARGET_CORE => Target::core(),
            _ => return SPVPF_ERROR_INVALID_ARGUMENT,
        };
        if out_options.is_null() {
            return SPVPF_ERROR_INVALID_ARGUMENT;
        }
        let options = Box::new(spvpf_options { options: Options { target, ..Options::default() }, last_error: CString::default() });
        // SAFETY: checked not NULL; the caller passes a valid pointer.
        unsafe { put(out_options, Box::into_raw(options)) };
        SPVPF_SUCCESS
    })
}

/// Releases options; NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn spvpf_options_free(options: *mut spvpf_options) {
    guard(|| {
        if !options.is_null() {
            // SAFETY: made by spvpf_options_create and not freed before (the caller's contract).
            drop(unsafe { Box::from_raw(options) });
        }
        SPVPF_SUCCESS
    });
}

/// `SPVPF_SUCCESS` if an option called `name` exists, `SPVPF_ERROR_UNKNOWN_OPTION` if not,
/// `SPVPF_ERROR_INVALID_ARGUMENT` for NULL.
#[no_mangle]
pub unsafe extern "C" fn spvpf_option_is_known(name: *const c_char) -> spvpf_status {
    guard(|| {
        if name.is_null() {
            return SPVPF_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: a NUL-terminated string (the caller's contract).
        match unsafe { str_arg(name) }.and_then(named_options::find) {
            Some(_) => SPVPF_SUCCESS,
            None => SPVPF_ERROR_UNKNOWN_OPTION,
        }
    })
}

fn set(options: *mut spvpf_options, name: *const c_char, kind: Kind, value: u32) -> spvpf_status {
    guard(|| {
        // SAFETY: NULL or made by spvpf_options_create (the caller's contract).
        let Some(o) = (unsafe { options.as_mut() }) else { return SPVPF_ERROR_INVALID_ARGUMENT };
        // SAFETY: a NUL-terminated string (the caller's contract).
        let Some(name) = (unsafe { str_arg(name) }) else { return o.fail(SPVPF_ERROR_INVALID_ARGUMENT, "option name is NULL or not UTF-8".into()) };
        let Some(option) = named_options::find(name) else { return o.fail(SPVPF_ERROR_UNKNOWN_OPTION, format!("unknown option `{name}`")) };
        if option.kind != kind {
            let wanted = if option.kind == Kind::Bool { "spvpf_options_set_bool" } else { "spvpf_options_set_uint" };
            return o.fail(SPVPF_ERROR_INVALID_ARGUMENT, format!("{name}: set it with {wanted}"));
        }
        match option.set(&mut o.options, value) {
            Ok(()) => SPVPF_SUCCESS,
            Err(e) => o.fail(SPVPF_ERROR_INVALID_ARGUMENT, e),
        }
    })
}

/// Sets a bool option (`value` 0 or 1; anything else is `SPVPF_ERROR_INVALID_ARGUMENT`):
/// the target's features `storage_buffer_8bit`, `uniform_and_storage_buffer_8bit`,
/// `storage_push_constant_8`, `storage_buffer_16bit`, `uniform_and_storage_buffer_16bit`,
/// `storage_push_constant_16`, `storage_input_output_16`, `int8`, `float16`, `int16`, `int64`,
/// `robust_buffer_access2`, `robust_storage_byte_exact`, the quirks
/// `quirk_nonuniform_array_length`, `quirk_nonuniform_access_per_lane` and
/// `quirk_robust_vector_components`, and `emulate_raw_access_chains` (`spirv-polyfill targets`
/// says what each means). The 8/16-bit storage capabilities the target lacks are lowered.
/// An unknown name is `SPVPF_ERROR_UNKNOWN_OPTION`.
#[no_mangle]
pub unsafe extern "C" fn spvpf_options_set_bool(options: *mut spvpf_options, name: *const c_char, value: u32) -> spvpf_status {
    set(options, name, Kind::Bool, value)
}

/// Sets an integer option: `oob_poison` (0..255, or `SPVPF_OOB_POISON_OFF`), `bindless_set`,
/// `bindless_{sampled_images,storage_images,samplers}_{binding,count}` (counts at least 1;
/// setting any `bindless_*` option turns the bindless lowering on, with set 0, bindings 0/1/2
/// and counts 65536/65536/4096 for what is not set), and `bda_set`, `bda_binding`, `bda_count`
/// (1..2^24): setting any of them turns the lowering of PhysicalStorageBuffer pointers
/// (buffer device addresses) on, onto an array of `bda_count` storage buffers at `bda_set` /
/// `bda_binding` (set 0, binding 3, 65536 for what is not set), with addresses
/// `0xD3 << 56 | slot << 32 | (offset ^ 0x80000000)` (offsets below 2^31; a pointer up to 2^31
/// bytes below a buffer keeps its slot) carried as two 32-bit words (a uvec2), whatever `int64`;
/// a power-of-two `bda_count` takes the slot with one AND where the driver checks bounds.
#[no_mangle]
pub unsafe extern "C" fn spvpf_options_set_uint(options: *mut spvpf_options, name: *const c_char, value: u32) -> spvpf_status {
    set(options, name, Kind::Uint, value)
}

/// Why the last failed `spvpf_options_set_*` call on `options` failed ("" if none; NULL
/// options give ""). Valid until the next call on `options` or its release.
#[no_mangle]
pub unsafe extern "C" fn spvpf_options_last_error(options: *const spvpf_options) -> *const c_char {
    // SAFETY: NULL or made by spvpf_options_create (the caller's contract).
    match unsafe { options.as_ref() } {
        Some(o) => o.last_error.as_ptr(),
        None => c"".as_ptr(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn poison_off_is_the_tables() {
        assert_eq!(super::SPVPF_OOB_POISON_OFF, shader_rewrite::named_options::OOB_POISON_OFF);
    }
}
