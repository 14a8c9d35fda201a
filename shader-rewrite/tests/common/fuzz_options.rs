//! The option sets every fuzzer runs an input under (shared by fuzz/fuzz_targets/rewrite.rs,
//! tests/fuzz_bounded.rs and tests/fuzz_regressions.rs):
//! 1. `Options::default()`: every optional device feature (raw access chains lowered);
//! 2. a Vulkan 1.0 core target lacking every 8/16-bit storage feature, all of them emulated;
//! 3. the default plus a bindless descriptor table (SPV_NV_bindless_texture lowered);
//! 4. that plus a buffer-address table (SPV_KHR_physical_storage_buffer lowered), on a target
//!    without Int64 (uvec2 addresses) whose driver checks bounds (robustBufferAccess2);
//! 5. the buffer-address table on a target with Int64 and without robustBufferAccess2 (the
//!    lowering's own bounds checks), with lavapipe's quirks (the array-length waterfall loop,
//!    loops kept rolled).
use shader_rewrite::{BdaTable, BindlessTable, Options, SmallStorage, Target};

pub fn option_sets() -> [Options; 5] {
    let core = Target::core();
    let table = BindlessTable {
        set: 7,
        sampled_images_binding: 0,
        sampled_images_count: 64,
        storage_images_binding: 1,
        storage_images_count: 8,
        samplers_binding: 2,
        samplers_count: 4,
    };
    [
        Options::default(),
        Options { target: core, emulate_storage: SmallStorage::missing_from(&core), ..Options::default() },
        Options { bindless: Some(table), ..Options::default() },
        Options {
            target: Target { int64: false, ..Target::all() },
            bindless: Some(table),
            bda: Some(BdaTable { set: 6, binding: 3, count: 256 }),
            ..Options::default()
        },
        Options {
            target: Target { robust_buffer_access2: false, nonuniform_array_length_broken: true, nonuniform_access_per_lane: true, ..Target::all() },
            bda: Some(BdaTable { set: 6, binding: 3, count: 256 }),
            ..Options::default()
        },
    ]
}
