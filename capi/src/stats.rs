//! The statistics of a rewrite by name (`spvpf_result_stat`, `spvpf_stat_name`).
use std::ffi::{c_char, CStr};

use shader_rewrite::Stats;

use crate::boundary::{guard, put};
use crate::spvpf_status::{self, *};

/// Reads one field of `Stats`; bools read as 0/1.
type Reader = fn(&Stats) -> u32;

/// (name, reader) for every field of `Stats`.
const STATS: &[(&CStr, Reader)] = &[
    (c"raw_chains", |s| s.raw_chains),
    (c"raw_chains_per_component", |s| s.raw_chains_per_component),
    (c"raw_chains_per_element", |s| s.raw_chains_per_element),
    (c"raw_chains_physical", |s| s.raw_chains_physical),
    (c"loads", |s| s.loads),
    (c"stores", |s| s.stores),
    (c"alias_variables", |s| s.alias_variables),
    (c"atomic_subword_stores", |s| s.atomic_subword_stores),
    (c"word_granular_bounds", |s| s.word_granular_bounds as u32),
    (c"small_storage_blocks", |s| s.small_storage_blocks),
    (c"small_storage_loads", |s| s.small_storage_loads),
    (c"small_storage_stores", |s| s.small_storage_stores),
    (c"widened_io_variables", |s| s.widened_io_variables),
    (c"widened_types", |s| s.widened_types),
    (c"rounded_conversions", |s| s.rounded_conversions),
    (c"bindless_conversions", |s| s.bindless_conversions),
    (c"bindless_descriptor_loads", |s| s.bindless_descriptor_loads),
    (c"bindless_handle_values", |s| s.bindless_handle_values),
    (c"physical_loads", |s| s.physical_loads),
    (c"physical_stores", |s| s.physical_stores),
    (c"physical_atomics", |s| s.physical_atomics),
    (c"physical_chains", |s| s.physical_chains),
    (c"physical_located", |s| s.physical_located),
    (c"physical_reused_loads", |s| s.physical_reused_loads),
    (c"physical_rolled_loops", |s| s.physical_rolled_loops),
    (c"raw_chain_bounds_by_driver", |s| s.raw_chain_bounds_by_driver),
    (c"physical_combined_loads", |s| s.physical_combined_loads),
    (c"physical_inlined_functions", |s| s.physical_inlined_functions),
    (c"non_semantic_dropped", |s| s.non_semantic_dropped),
];

/// The reader of the statistic called `name`.
pub(crate) fn find(name: &str) -> Option<Reader> {
    STATS.iter().find(|(n, _)| n.to_bytes() == name.as_bytes()).map(|&(_, read)| read)
}

/// The name of the `index`-th statistic (static): call with 0, 1, ... until
/// `SPVPF_ERROR_INVALID_ARGUMENT` to list them.
#[no_mangle]
pub unsafe extern "C" fn spvpf_stat_name(index: u32, out_name: *mut *const c_char) -> spvpf_status {
    guard(|| {
        let Some((name, _)) = STATS.get(index as usize) else { return SPVPF_ERROR_INVALID_ARGUMENT };
        // SAFETY: NULL or valid (the caller's contract).
        if unsafe { put(out_name, name.as_ptr()) } { SPVPF_SUCCESS } else { SPVPF_ERROR_INVALID_ARGUMENT }
    })
}

#[cfg(test)]
mod tests {
    /// Every field of Stats has a name: a Stats with each field set to a distinct value reads
    /// back through the table (a new field without a row fails to compile the literal below).
    #[test]
    fn every_field_is_named() {
        let s = shader_rewrite::Stats {
            raw_chains: 1,
            raw_chains_per_component: 2,
            raw_chains_per_element: 3,
            raw_chains_physical: 4,
            loads: 5,
            stores: 6,
            alias_variables: 7,
            atomic_subword_stores: 8,
            word_granular_bounds: true,
            small_storage_blocks: 10,
            small_storage_loads: 11,
            small_storage_stores: 12,
            widened_io_variables: 13,
            widened_types: 14,
            rounded_conversions: 15,
            bindless_conversions: 16,
            bindless_descriptor_loads: 17,
            bindless_handle_values: 18,
            physical_loads: 19,
            physical_stores: 20,
            physical_atomics: 21,
            physical_chains: 22,
            physical_located: 23,
            physical_reused_loads: 24,
            physical_rolled_loops: 25,
            raw_chain_bounds_by_driver: 26,
            physical_combined_loads: 27,
            physical_inlined_functions: 28,
            non_semantic_dropped: 29,
        };
        let read: Vec<u32> = super::STATS.iter().map(|(_, f)| f(&s)).collect();
        assert_eq!(read, (1..=29).map(|v| if v == 9 { 1 } else { v }).collect::<Vec<_>>());
    }
}
