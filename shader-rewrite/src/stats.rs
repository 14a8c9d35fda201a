//! What a rewrite did, for logs and `spirv-polyfill --stats`.
use std::fmt;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// OpRawAccessChainNV instructions lowered.
    pub raw_chains: u32,
    pub raw_chains_per_component: u32,
    pub raw_chains_per_element: u32,
    /// Raw chains on PhysicalStorageBuffer pointers (plain address arithmetic).
    pub raw_chains_physical: u32,
    /// OpLoad / OpStore through lowered chains.
    pub loads: u32,
    pub stores: u32,
    /// Alias variables added (one per original buffer variable and access width).
    pub alias_variables: u32,
    /// Sub-word stores done as atomic and/or pairs (no 8/16-bit storage on the target).
    pub atomic_subword_stores: u32,
    /// Raw-chain accesses whose bounds the driver checks (robustBufferAccess2, exact to the
    /// byte): one unchecked scalar access per component.
    pub raw_chain_bounds_by_driver: u32,
    /// Bounds checks had to use word granularity (no 8-bit storage for the exact byte length).
    pub word_granular_bounds: bool,
    /// 8/16-bit storage: buffer / push-constant variables lowered to 32-bit word views.
    pub small_storage_blocks: u32,
    /// 8/16-bit storage: loads and stores through lowered blocks.
    pub small_storage_loads: u32,
    pub small_storage_stores: u32,
    /// Input/Output variables widened from 8/16 to 32 bits.
    pub widened_io_variables: u32,
    /// 8/16-bit types replaced by 32-bit ones (module has no Float16/Int16/Int8 arithmetic).
    pub widened_types: u32,
    /// FConvert with FPRoundingMode (or to a widened 16-bit float) rounded in integer code.
    pub rounded_conversions: u32,
    /// SPV_NV_bindless_texture: OpConvertUTo*NV conversions lowered to descriptor-table loads.
    pub bindless_conversions: u32,
    /// SPV_NV_bindless_texture: images/samplers at the points of use, loaded from the table,
    /// and texel pointers into it (image atomics).
    pub bindless_descriptor_loads: u32,
    /// SPV_NV_bindless_texture: variables, members, phis and selects that carry a handle
    /// (an integer) instead of an image, sampler or sampled image.
    pub bindless_handle_values: u32,
    /// SPV_KHR_physical_storage_buffer: loads, stores, atomics and access chains through
    /// physical pointers lowered onto the buffer-address table.
    pub physical_loads: u32,
    pub physical_stores: u32,
    pub physical_atomics: u32,
    pub physical_chains: u32,
    /// Pointer classes located (address decoded, buffer length taken) once for all their
    /// accesses, and physical loads that reused an earlier load's value.
    pub physical_located: u32,
    pub physical_reused_loads: u32,
    /// Loads of neighbouring values through one pointer, and leaves of one composite load,
    /// read as one wider unit (where the driver checks bounds per component).
    pub physical_combined_loads: u32,
    /// Loops holding such accesses marked DontUnroll (Target::nonuniform_access_per_lane).
    pub physical_rolled_loops: u32,
    /// The application's functions taking or returning physical pointers inlined at their one
    /// call before the lowering.
    pub physical_inlined_functions: u32,
    /// Non-semantic instructions (debug info) dropped because they named what a lowering took
    /// away (`passes::non_semantic`).
    pub non_semantic_dropped: u32,
}

impl Stats {
    pub fn is_empty(&self) -> bool {
        *self == Stats::default()
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} raw chains ({} per-component, {} per-element, {} physical), {} loads, {} stores, \
             {} alias variables, {} atomic sub-word stores{}{}",
            self.raw_chains,
            self.raw_chains_per_component,
            self.raw_chains_per_element,
            self.raw_chains_physical,
            self.loads,
            self.stores,
            self.alias_variables,
            self.atomic_subword_stores,
            if self.raw_chain_bounds_by_driver > 0 { format!(", {} accesses checked by the driver (robustBufferAccess2)", self.raw_chain_bounds_by_driver) } else { String::new() },
            if self.word_granular_bounds { ", bounds at word granularity (no 8-bit storage)" } else { "" }
        )?;
        if self.small_storage_blocks + self.widened_io_variables + self.widened_types + self.rounded_conversions > 0 {
            write!(
                f,
                "; 8/16-bit storage: {} blocks ({} loads, {} stores), {} I/O variables widened, {} types widened, {} conversions rounded in integer code",
                self.small_storage_blocks,
                self.small_storage_loads,
                self.small_storage_stores,
                self.widened_io_variables,
                self.widened_types,
                self.rounded_conversions
            )?;
        }
        if self.bindless_conversions + self.bindless_descriptor_loads + self.bindless_handle_values > 0 {
            write!(
                f,
                "; bindless textures: {} handle conversions, {} descriptor-table loads, {} values carried as handles",
                self.bindless_conversions, self.bindless_descriptor_loads, self.bindless_handle_values
            )?;
        }
        if self.physical_loads + self.physical_stores + self.physical_atomics + self.physical_chains > 0 {
            write!(
                f,
                "; physical storage buffer: {} loads, {} stores, {} atomics, {} access chains, {} pointers located, {} loads reused",
                self.physical_loads, self.physical_stores, self.physical_atomics, self.physical_chains, self.physical_located, self.physical_reused_loads
            )?;
            if self.physical_combined_loads > 0 {
                write!(f, ", {} loads combined into wider ones", self.physical_combined_loads)?;
            }
            if self.physical_rolled_loops > 0 {
                write!(f, ", {} loops kept rolled", self.physical_rolled_loops)?;
            }
            if self.physical_inlined_functions > 0 {
                write!(f, ", {} functions inlined at their only call", self.physical_inlined_functions)?;
            }
        }
        if self.non_semantic_dropped > 0 {
            write!(f, "; {} debug-info instructions dropped (they named what was lowered away)", self.non_semantic_dropped)?;
        }
        Ok(())
    }
}
