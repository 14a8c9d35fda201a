//! Integer arithmetic of constants and identities (`x + 0`, `x * 1`, `x & 0`): what the
//! clean-up pass (`passes::tidy`) and the physical-storage-buffer lowering's address folding
//! compute at rewrite time instead of handing the driver.
use crate::module::op;

pub(crate) const OP_NOT: u32 = 200;

/// What an integer instruction comes to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Folded {
    /// A 32-bit value (meaningful only where the result is 32 bits wide).
    Value(u32),
    /// One of its operands.
    Same(u32),
}

/// `x op y` (`!x` for OpNot) of integer scalars whose constant values are `vx`, `vy`.
pub(crate) fn fold_int(opcode: u32, vx: Option<u64>, vy: Option<u64>, x: u32, y: u32) -> Option<Folded> {
    use Folded::{Same, Value};
    let (p, q) = (vx.map(|v| v as u32), vy.map(|v| v as u32));
    Some(match (opcode, p, q) {
        (OP_NOT, Some(p), _) => Value(!p),
        (op::I_ADD, Some(p), Some(q)) => Value(p.wrapping_add(q)),
        (op::I_SUB, Some(p), Some(q)) => Value(p.wrapping_sub(q)),
        (op::I_MUL, Some(p), Some(q)) => Value(p.wrapping_mul(q)),
        (op::U_DIV, Some(p), Some(q)) if q != 0 => Value(p / q),
        (op::BITWISE_AND, Some(p), Some(q)) => Value(p & q),
        (op::BITWISE_OR, Some(p), Some(q)) => Value(p | q),
        // Shifts by 32 or more are undefined (SPIR-V spec OpShiftLeftLogical): left alone.
        (op::SHIFT_LEFT_LOGICAL, Some(p), Some(q)) if q < 32 => Value(p << q),
        (op::SHIFT_RIGHT_LOGICAL, Some(p), Some(q)) if q < 32 => Value(p >> q),
        // Identities on the whole value, of any width.
        _ => match (opcode, vx, vy) {
            (op::I_ADD | op::BITWISE_OR, Some(0), _) => Same(y),
            (op::I_ADD | op::I_SUB | op::BITWISE_OR | op::SHIFT_LEFT_LOGICAL | op::SHIFT_RIGHT_LOGICAL, _, Some(0)) => Same(x),
            (op::I_MUL, Some(1), _) => Same(y),
            (op::I_MUL | op::U_DIV, _, Some(1)) => Same(x),
            (op::I_MUL | op::BITWISE_AND, Some(0), _) | (op::I_MUL | op::BITWISE_AND, _, Some(0)) => Value(0),
            (op::SHIFT_LEFT_LOGICAL | op::SHIFT_RIGHT_LOGICAL, Some(0), _) => Value(0),
            _ => return None,
        },
    })
}

/// Opcodes [`fold_int`] folds.
pub(crate) fn folds(opcode: u32) -> bool {
    matches!(opcode, OP_NOT | op::I_ADD | op::I_SUB | op::I_MUL | op::U_DIV | op::BITWISE_AND | op::BITWISE_OR | op::SHIFT_LEFT_LOGICAL | op::SHIFT_RIGHT_LOGICAL)
}

