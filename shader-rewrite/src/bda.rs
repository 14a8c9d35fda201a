//! The buffer-device-address contract between the layer and the shader rewriter, for devices
//! without `bufferDeviceAddress` (SPV_KHR_physical_storage_buffer emulated).
//!
//! The layer hands out fake 64-bit addresses in Dozen's encoding, the offset biased by 2^31:
//! `ADDRESS_TAG << 56 | slot << 32 | (offset ^ 2^31)`, and puts the buffer behind every slot in a
//! layer-owned array of storage-buffer descriptors ([`BdaTable`]). The rewritten shader decodes
//! an address into (slot, offset) and accesses `table[slot]` at byte `offset`. Where the
//! lowering checks bounds, an address whose tag is not [`ADDRESS_TAG`], or whose slot is
//! `>= count`, lies outside every buffer. Where the driver checks them and `count` is a power of
//! two (the layer's always is), the slot is the high word's low bits, `hi & (count - 1)`: one
//! instruction instead of three (lavapipe creates the bda bench's pipelines 4-13 % faster), and
//! an address the layer did not make, undefined behaviour natively, names some slot below
//! `count`, which always holds a valid or null descriptor; the null address names slot 0.
//!
//! Slot 0 is never handed out: the rewritten shader sends every access outside a buffer there
//! (at offset 0, without a branch), so the layer keeps a null descriptor in it (or, without
//! `nullDescriptor`, a buffer of at least 16 bytes that nothing reads), and a valid or null
//! descriptor in every other slot below `count`.
//!
//! Where the options say the driver checks bounds ([`crate::Options::bda_bounds_by_driver`]:
//! `Target::robust_buffer_access2`, no poison byte), the rewritten shader takes no buffer length
//! and checks nothing: the device must have `robustBufferAccess2` enabled and no pipeline may opt
//! out of it, so an access outside a slot's descriptor range reads 0 and writes nothing.

/// Where the layer's array of storage-buffer descriptors lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BdaTable {
    /// Descriptor set index of the array.
    pub set: u32,
    /// Binding of the `VK_DESCRIPTOR_TYPE_STORAGE_BUFFER` array.
    pub binding: u32,
    /// Descriptors in the array: slots `0..count` are addressable.
    pub count: u32,
}

/// Bytes of a slot's buffer its addresses reach: offsets below 2^31. The offset word of an
/// address is the offset plus 2^31 (wrapping), so the 2^32 addresses of a slot's window run
/// from 2^31 bytes below its buffer to 2^31 bytes past its start: a pointer the application
/// makes a little below a buffer (its address minus 16, say, a 64-bit subtraction) stays in
/// the buffer's slot and names the buffer again where it is accessed back inside it, as
/// natively. The layer's descriptors cover at most this many bytes of a buffer.
pub const OFFSET_LIMIT: u32 = 1 << 31;

/// The top byte of every address the layer hands out.
pub const ADDRESS_TAG: u64 = 0xD3;

/// Bits of the slot, between the tag (bits 56..64) and the offset (bits 0..32).
pub const SLOT_BITS: u32 = 24;

/// The address of byte `offset` of the buffer in `slot` (`slot` must fit in [`SLOT_BITS`]).
pub const fn encode_address(slot: u32, offset: u32) -> u64 {
    debug_assert!(slot < 1 << SLOT_BITS);
    (ADDRESS_TAG << 56) | (((slot & ((1 << SLOT_BITS) - 1)) as u64) << 32) | (offset ^ OFFSET_LIMIT) as u64
}

/// `(slot, offset)` of an address, or `None` when its tag is not [`ADDRESS_TAG`].
pub const fn decode_address(a: u64) -> Option<(u32, u32)> {
    if a >> 56 != ADDRESS_TAG {
        return None;
    }
    Some((((a >> 32) as u32) & ((1 << SLOT_BITS) - 1), a as u32 ^ OFFSET_LIMIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for (slot, offset) in [(0, 0), (1, 16), ((1 << SLOT_BITS) - 1, u32::MAX)] {
            let a = encode_address(slot, offset);
            assert_eq!(a >> 56, ADDRESS_TAG);
            assert_eq!(decode_address(a), Some((slot, offset)));
        }
        assert_eq!(encode_address(2, 5), 0xD300_0002_8000_0005);
        // 16 bytes below slot 2's buffer is still slot 2 (offset 2^32 - 16).
        assert_eq!(decode_address(encode_address(2, 0) - 16), Some((2, u32::MAX - 15)));
        assert_eq!(decode_address(0x1234_5678), None);
        assert_eq!(decode_address(0xD200_0000_0000_0000), None);
    }
}
