//! PhysicalStorageBuffer bases: a chain is plain address arithmetic.
use super::*;

/// `result = base + addr` for a PhysicalStorageBuffer base, through a uvec2 bitcast and an
/// add with carry (SPV_KHR_physical_storage_buffer allows OpBitcast between a physical pointer
/// and a vector of two 32-bit integers; no Int64 needed).
/// `carry_ty` caches the `struct { uint; uint; }` OpIAddCarry returns (one per module).
pub(super) fn physical_address(e: &mut Emitter, b: &mut Builder, chain: &Chain, addr: u32, result: u32, carry_ty: &mut Option<u32>) {
    let u32t = b.t_u32();
    let uv2 = b.t_vec(u32t, 2);
    let v = e.op(b, op::BITCAST, uv2, ops![chain.base]);
    let lo = e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![v, 0]);
    let hi = e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![v, 1]);
    let carry_ty = *carry_ty.get_or_insert_with(|| b.t_struct(&[u32t, u32t]));
    let sum = e.op(b, op::I_ADD_CARRY, carry_ty, ops![lo, addr]);
    let new_lo = e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![sum, 0]);
    let carry = e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![sum, 1]);
    let new_hi = e.op(b, op::I_ADD, u32t, ops![hi, carry]);
    let nv = e.op(b, op::COMPOSITE_CONSTRUCT, uv2, ops![new_lo, new_hi]);
    e.push(Inst::new(op::BITCAST, chain.ty, result, ops![nv]));
}
