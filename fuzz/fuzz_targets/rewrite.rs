//! cargo-fuzz target for `shader_rewrite::rewrite` (the open-ended counterpart of
//! shader-rewrite/tests/fuzz_bounded.rs).
//!
//! Input: little-endian 32-bit words (a trailing partial word is dropped), i.e. a `.spv` file
//! as-is; seeds are the assembled test corpora (fuzz/seed.sh). Every input is rewritten under
//! the four option sets of shader-rewrite/tests/common/fuzz_options.rs: default (every optional
//! device feature); `Target::core()` with every 8/16-bit storage capability emulated (the
//! 8/16/64-bit emulation paths); default + a bindless descriptor table (SPV_NV_bindless_texture
//! lowered); that + a buffer-address table on a target without Int64
//! (SPV_KHR_physical_storage_buffer lowered to uvec2 addresses). The rewriter's structural check
//! after each pass (shader-rewrite/src/passes/check.rs) runs inside `rewrite`.
//!
//! Properties: no panic, and on `Ok`:
//! - the output has the 5-word header with the SPIR-V magic;
//! - when it differs from the input (a real rewrite happened, so the input passed the
//!   library's own parser), it must parse again with that same parser: every instruction's
//!   word count fits, every opcode is known and has its fixed operands, every result type /
//!   result id is nonzero, below the header's bound and defined once, and the function/block
//!   structure is intact;
//! - rewriting is deterministic;
//! - with `FUZZ_SPIRV_VAL=/path/to/spirv-val` set (SPIRV-Tools >= 2024.2): when the input passes
//!   spirv-val, the output must too (two processes per rewritten input, so runs are slower).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shader_rewrite::module::{Module, HEADER_WORDS, MAGIC};
use shader_rewrite::{rewrite, Options};

mod common;
#[path = "../../shader-rewrite/tests/common/fuzz_options.rs"]
mod fuzz_options;

use common::spirv_val;

fn check(words: &[u32], options: &Options) {
    let Ok(out) = rewrite(words, options) else { return };
    let out = out.words;
    assert!(out.len() >= HEADER_WORDS, "output shorter than the header: {} words", out.len());
    assert_eq!(out[0], MAGIC, "output does not start with the SPIR-V magic");
    if out != words {
        if let Err(e) = Module::parse(&out) {
            panic!("rewritten module does not re-parse: {e}");
        }
        let again = rewrite(words, options).expect("second rewrite of the same input failed");
        assert_eq!(again.words, out, "rewrite is not deterministic");
        if let Some(val) = std::env::var_os("FUZZ_SPIRV_VAL") {
            if spirv_val(&val, "vulkan1.3", words) {
                assert!(spirv_val(&val, "vulkan1.3", &out), "input passes spirv-val, the rewritten module does not");
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let words: Vec<u32> = data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    for options in fuzz_options::option_sets() {
        check(&words, &options);
    }
});
