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
    /// storagePushConstant8
    pub storage_push_constant_8: bool,
    /// storagePushConstant16
    pub storage_push_constant_16: bool,
    /// storageInputOutput16
    pub storage_input_output_16: bool,
    /// shaderInt8
    pub int8: bool,
    /// shaderFloat16: the 8/16-bit storage lowering rounds an f32 → f16 conversion of a module
    /// without Float16 arithmetic with the driver's own conversion (`OpFConvert` to a 16-bit
    /// float and back, NoContraction so the compiler cannot fold the pair away), adding Float16,
    /// instead of in integer code.
    pub float16: bool,
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
    /// Driver quirk (lavapipe, Mesa 25.0): a storage-buffer access through a non-uniform
    /// descriptor index becomes one code sequence per lane, so a constant-trip loop of such
    /// accesses that the driver unrolls multiplies its machine code (the buffer-device-address
    /// chase kernel, 16 hops: a 0.5 s first dispatch against 60 ms rolled). The
    /// buffer-device-address lowering then marks the loops holding its accesses DontUnroll.
    pub nonuniform_access_per_lane: bool,
    /// robustBufferAccess2 (VK_EXT_robustness2 / VK_KHR_robustness2) is enabled, and nothing
    /// opts a pipeline out of it (VK_EXT_pipeline_robustness is not enabled): every storage-buffer
    /// access is checked by the driver against its descriptor's range — loads outside return
    /// zero, stores and atomics outside do not modify memory. The buffer-device-address lowering
    /// then leaves the bounds checks to the driver (no length query, no comparison, no select).
    pub robust_buffer_access2: bool,
    /// `robustStorageBufferAccessSizeAlignment` is 1 (VK_EXT_robustness2 / VK_KHR_robustness2):
    /// under `robust_buffer_access2` the driver checks storage-buffer accesses against the
    /// descriptor's range to the byte (4: the range rounded up to whole words). The raw-chain
    /// lowering then leaves the checks of per-component accesses made of one access per
    /// component to the driver ([`crate::byte_address::AccessShape::components_checked_by_driver`]).
    pub robust_storage_byte_exact: bool,
    /// Driver quirk (lavapipe, Mesa 25.0): under `robust_buffer_access2` and
    /// `robust_storage_byte_exact`, each component of a vector storage-buffer access is checked
    /// on its own against the range (gallivm compares every component's index with the range
    /// in components: a load reads 0 for the components outside, a store writes only those
    /// inside), where the Vulkan rules let a driver check a vector access as a whole. The
    /// raw-chain lowering then leaves the checks of per-component accesses of 32/64-bit
    /// components to the driver also where they move as whole vectors (`uvec2`/`uvec4` views,
    /// `u64vec2` with Int64):
    /// [`crate::byte_address::AccessShape::vectors_checked_by_driver`]. Shown on the driver
    /// itself by the `driver_vector_robustness` e2e test.
    pub robust_vector_components: bool,
}

impl Target {
    /// Every optional feature the lowering can use (lavapipe has all of these).
    pub const fn all() -> Self {
        Target {
            storage_buffer_8bit: true,
            uniform_and_storage_buffer_8bit: true,
            storage_buffer_16bit: true,
            uniform_and_storage_buffer_16bit: true,
            storage_push_constant_8: true,
            storage_push_constant_16: true,
            storage_input_output_16: true,
            int8: true,
            float16: true,
            int16: true,
            int64: true,
            nonuniform_array_length_broken: false,
            nonuniform_access_per_lane: false,
            robust_buffer_access2: true,
            robust_storage_byte_exact: true,
            robust_vector_components: false,
        }
    }
    /// What the layer finds on lavapipe (Mesa 25.0): every optional feature but
    /// storageInputOutput16, robustBufferAccess2 (its default robustness, to the byte), and its
    /// three quirks.
    pub const fn lavapipe() -> Self {
        Target {
            storage_input_output_16: false,
            nonuniform_array_length_broken: true,
            nonuniform_access_per_lane: true,
            robust_vector_components: true,
            ..Target::all()
        }
    }
    /// Only what Vulkan 1.0 guarantees.
    pub const fn core() -> Self {
        Target {
            storage_buffer_8bit: false,
            uniform_and_storage_buffer_8bit: false,
            storage_buffer_16bit: false,
            uniform_and_storage_buffer_16bit: false,
            storage_push_constant_8: false,
            storage_push_constant_16: false,
            storage_input_output_16: false,
            int8: false,
            float16: false,
            int16: false,
            int64: false,
            nonuniform_array_length_broken: false,
            nonuniform_access_per_lane: false,
            robust_buffer_access2: false,
            robust_storage_byte_exact: false,
            robust_vector_components: false,
        }
    }
}

impl Default for Target {
    fn default() -> Self {
        Target::all()
    }
}

/// The 8/16-bit storage capabilities (SPV_KHR_16bit_storage, SPV_KHR_8bit_storage) — which a
/// module declares ([`crate::scan`]), or which to emulate ([`Options::emulate_storage`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SmallStorage {
    /// StorageBuffer16BitAccess (4433)
    pub storage_buffer_16bit: bool,
    /// UniformAndStorageBuffer16BitAccess (4434)
    pub uniform_and_storage_buffer_16bit: bool,
    /// StoragePushConstant16 (4435)
    pub storage_push_constant_16: bool,
    /// StorageInputOutput16 (4436)
    pub storage_input_output_16: bool,
    /// StorageBuffer8BitAccess (4448)
    pub storage_buffer_8bit: bool,
    /// UniformAndStorageBuffer8BitAccess (4449)
    pub uniform_and_storage_buffer_8bit: bool,
    /// StoragePushConstant8 (4450)
    pub storage_push_constant_8: bool,
}

impl SmallStorage {
    /// (capability, field) pairs in capability order.
    pub const CAPS: [u32; 7] = [4433, 4434, 4435, 4436, 4448, 4449, 4450];

    pub fn get(&self, cap: u32) -> bool {
        match cap {
            4433 => self.storage_buffer_16bit,
            4434 => self.uniform_and_storage_buffer_16bit,
            4435 => self.storage_push_constant_16,
            4436 => self.storage_input_output_16,
            4448 => self.storage_buffer_8bit,
            4449 => self.uniform_and_storage_buffer_8bit,
            4450 => self.storage_push_constant_8,
            _ => false,
        }
    }
    pub fn set(&mut self, cap: u32, on: bool) {
        match cap {
            4433 => self.storage_buffer_16bit = on,
            4434 => self.uniform_and_storage_buffer_16bit = on,
            4435 => self.storage_push_constant_16 = on,
            4436 => self.storage_input_output_16 = on,
            4448 => self.storage_buffer_8bit = on,
            4449 => self.uniform_and_storage_buffer_8bit = on,
            4450 => self.storage_push_constant_8 = on,
            _ => {}
        }
    }
    /// Every capability `target` lacks (what `--target core` emulates).
    pub fn missing_from(target: &Target) -> Self {
        SmallStorage {
            storage_buffer_16bit: !target.storage_buffer_16bit,
            uniform_and_storage_buffer_16bit: !target.uniform_and_storage_buffer_16bit,
            storage_push_constant_16: !target.storage_push_constant_16,
            storage_input_output_16: !target.storage_input_output_16,
            storage_buffer_8bit: !target.storage_buffer_8bit,
            uniform_and_storage_buffer_8bit: !target.uniform_and_storage_buffer_8bit,
            storage_push_constant_8: !target.storage_push_constant_8,
        }
    }
    pub fn any(&self) -> bool {
        Self::CAPS.iter().any(|&c| self.get(c))
    }
    /// Is any capability set in both? (`and(other).any()` without the loops: this is on the
    /// per-module pass-through path.)
    pub fn intersects(&self, o: &SmallStorage) -> bool {
        (self.storage_buffer_16bit && o.storage_buffer_16bit)
            || (self.uniform_and_storage_buffer_16bit && o.uniform_and_storage_buffer_16bit)
            || (self.storage_push_constant_16 && o.storage_push_constant_16)
            || (self.storage_input_output_16 && o.storage_input_output_16)
            || (self.storage_buffer_8bit && o.storage_buffer_8bit)
            || (self.uniform_and_storage_buffer_8bit && o.uniform_and_storage_buffer_8bit)
            || (self.storage_push_constant_8 && o.storage_push_constant_8)
    }
    /// Capabilities set in both.
    pub fn and(&self, other: &SmallStorage) -> SmallStorage {
        let mut out = SmallStorage::default();
        for c in Self::CAPS {
            out.set(c, self.get(c) && other.get(c));
        }
        out
    }
    /// Capability names, for logs.
    pub fn names(&self) -> Vec<&'static str> {
        let all = [
            "StorageBuffer16BitAccess",
            "UniformAndStorageBuffer16BitAccess",
            "StoragePushConstant16",
            "StorageInputOutput16",
            "StorageBuffer8BitAccess",
            "UniformAndStorageBuffer8BitAccess",
            "StoragePushConstant8",
        ];
        Self::CAPS.iter().zip(all).filter(|(c, _)| self.get(**c)).map(|(_, n)| n).collect()
    }
}

/// Options for one rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Options {
    pub target: Target,
    /// Lower `OpRawAccessChainNV` (capability RawAccessChainsNV).
    pub emulate_raw_access_chains: bool,
    /// 8/16-bit storage capabilities to lower into 32-bit accesses when a module declares them.
    /// The target should not claim the matching features (the lowering must not use them).
    pub emulate_storage: SmallStorage,
    /// Debug aid: out-of-bounds loads caught by the emulated robustness checks return this
    /// byte pattern (repeated) instead of 0, so tests and users can see the layer caught them.
    pub oob_poison: Option<u8>,
    /// Lower SPV_NV_bindless_texture (capability BindlessTextureNV) onto this descriptor table;
    /// `None` leaves such modules alone.
    pub bindless: Option<BindlessTable>,
    /// Lower SPV_KHR_physical_storage_buffer (capability PhysicalStorageBufferAddresses) onto
    /// this table of storage buffers, for devices without `bufferDeviceAddress`; `None` leaves
    /// such modules alone.
    pub bda: Option<crate::bda::BdaTable>,
}

impl Options {
    /// The buffer-device-address lowering leaves its bounds checks to the driver: the target has
    /// robustBufferAccess2 on, and no debug poison byte is asked for (only the lowering's own
    /// checks can return it).
    pub fn bda_bounds_by_driver(&self) -> bool {
        self.target.robust_buffer_access2 && self.oob_poison.is_none()
    }

    /// The raw-chain lowering leaves the checks of per-component accesses made of one scalar
    /// access per component to the driver: its checks are robustBufferAccess2's, exact to the
    /// byte, and no debug poison byte is asked for.
    pub fn component_bounds_by_driver(&self) -> bool {
        component_bounds_by_driver(&self.target, self.oob_poison)
    }
}

/// [`Options::component_bounds_by_driver`] of a target and poison byte (what the byte-address
/// backend holds).
pub(crate) fn component_bounds_by_driver(target: &Target, oob_poison: Option<u8>) -> bool {
    target.robust_buffer_access2 && target.robust_storage_byte_exact && oob_poison.is_none()
}

/// The layer-owned descriptor table that SPV_NV_bindless_texture handles index.
///
/// A handle (a u32, or the low 32 bits of a u64 / the `.x` of a uvec2 under addressing mode 64;
/// the high word is ignored) holds an image slot in bits 0..20 and a sampler slot in bits 20..32
/// (the layout NVK uses). Sampled images (`Sampled` = 1, or 0) index the sampled-image array,
/// storage images (`Sampled` = 2) the storage-image array, samplers the sampler array. The
/// lowering keeps each slot inside its array (`slot & (count - 1)` where the count is a power of
/// two, else `min(slot, count - 1)`), so a garbage handle cannot index past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BindlessTable {
    /// Descriptor set index of the table.
    pub set: u32,
    /// Binding of the `VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE` array and its descriptor count.
    pub sampled_images_binding: u32,
    pub sampled_images_count: u32,
    /// Binding of the `VK_DESCRIPTOR_TYPE_STORAGE_IMAGE` array and its descriptor count.
    pub storage_images_binding: u32,
    pub storage_images_count: u32,
    /// Binding of the `VK_DESCRIPTOR_TYPE_SAMPLER` array and its descriptor count.
    pub samplers_binding: u32,
    pub samplers_count: u32,
}

impl BindlessTable {
    /// Bits of a handle that hold the image slot.
    pub const IMAGE_SLOT_BITS: u32 = 20;
    /// Bits above them that hold the sampler slot.
    pub const SAMPLER_SLOT_BITS: u32 = 12;

    /// The table at `set` with the CLI's and the C API's default layout: binding 0 = 65536
    /// sampled images, 1 = 65536 storage images, 2 = 4096 samplers.
    pub const fn with_defaults(set: u32) -> Self {
        BindlessTable {
            set,
            sampled_images_binding: 0,
            sampled_images_count: 65536,
            storage_images_binding: 1,
            storage_images_count: 65536,
            samplers_binding: 2,
            samplers_count: 4096,
        }
    }

    /// Handle for an image slot and a sampler slot (the layer hands these out).
    pub const fn handle(image_slot: u32, sampler_slot: u32) -> u32 {
        (image_slot & ((1 << Self::IMAGE_SLOT_BITS) - 1)) | (sampler_slot << Self::IMAGE_SLOT_BITS)
    }
}

impl Default for Options {
    fn default() -> Self {
        Options { target: Target::all(), emulate_raw_access_chains: true, emulate_storage: SmallStorage::default(), oob_poison: None, bindless: None, bda: None }
    }
}

#[cfg(test)]
mod tests {
    use super::SmallStorage;

    fn from_bits(bits: u32) -> SmallStorage {
        let mut s = SmallStorage::default();
        for (k, &cap) in SmallStorage::CAPS.iter().enumerate() {
            s.set(cap, bits & (1 << k) != 0);
        }
        s
    }

    #[test]
    fn intersects_is_and_then_any() {
        for a in 0..128 {
            for b in 0..128 {
                let (x, y) = (from_bits(a), from_bits(b));
                assert_eq!(x.intersects(&y), x.and(&y).any(), "{a:#09b} {b:#09b}");
            }
        }
    }
}
