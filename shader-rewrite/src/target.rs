//! What the target device can do, and what to emulate. The layer fills this from the
//! device's features; the CLI from flags.

/// Features of the device the rewritten module will run on. Only capabilities the target has
/// are ever added to a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    /// storageBuffer8BitAccess
    pub storage_buffer_8bit: bool,
    /// uniformAndStorageBuffer8BitAccess
    pub uniform_and_storage_buffer_8bit: bool,
    /// storageBuffer16BitAccess
    pub storage_buffer_16bit: bool,
    /// uniformAndStorageBuffer16BitAccess
    pub uniform_and_storage_buffer_16bit: bool,
    /// shaderInt8
    pub int8: bool,
    /// shaderInt16
    pub int16: bool,
    /// shaderInt64
    pub int64: bool,
    /// Driver quirk (lavapipe, Mesa 25.0): OpArrayLength on a descriptor chosen by a
    /// non-uniform index returns the first invocation's length for the whole subgroup, even
    /// with NonUniform decorations. The lowering then takes such lengths in a subgroup
    /// "waterfall" loop (broadcast-first index → uniform OpArrayLength), which needs subgroup
    /// ballot support in every shader stage.
    pub nonuniform_array_length_broken: bool,
}

impl Target {
    /// Every optional feature the lowering can use (lavapipe has all of these).
    pub const fn all() -> Self {
        Target {
            storage_buffer_8bit: true,
            uniform_and_storage_buffer_8bit: true,
            storage_buffer_16bit: true,
            uniform_and_storage_buffer_16bit: true,
            int8: true,
            int16: true,
            int64: true,
            nonuniform_array_length_broken: false,
        }
    }
    /// Only what Vulkan 1.0 guarantees.
    pub const fn core() -> Self {
        Target {
            storage_buffer_8bit: false,
            uniform_and_storage_buffer_8bit: false,
            storage_buffer_16bit: false,
            uniform_and_storage_buffer_16bit: false,
            int8: false,
            int16: false,
            int64: false,
            nonuniform_array_length_broken: false,
        }
    }
}

impl Default for Target {
    fn default() -> Self {
        Target::all()
    }
}

/// Options for one rewrite.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Options {
    pub target: Target,
    /// Lower `OpRawAccessChainNV` (capability RawAccessChainsNV).
    pub emulate_raw_access_chains: bool,
    /// Debug aid: out-of-bounds loads caught by the emulated robustness checks return this
    /// byte pattern (repeated) instead of 0, so tests and users can see the layer caught them.
    pub oob_poison: Option<u8>,
}

impl Default for Options {
    fn default() -> Self {
        Options { target: Target::all(), emulate_raw_access_chains: true, oob_poison: None }
    }
}
