//! Reference model of the `OpRawAccessChainNV` semantics the layer implements (pure Rust, no
//! Vulkan, no SPIR-V). Everything the conformance matrix and the dxil-spirv corpus test expect
//! comes from here.
//!
//! - byte address of an access = `(Offset + Stride × Index) mod 2^32` (wrapping 32-bit
//!   arithmetic, what NVIDIA does), relative to the start of the bound descriptor range;
//!   `len` = the bound range in bytes (exact; ranges need not be multiples of 4).
//! - element = scalar or vector of `comps` (1–4) components of `comp_bytes` (1, 2, 4, 8) bytes.
//! - [`Robustness::None`]: plain access; the model refuses (panics on) out-of-bounds accesses,
//!   since they are undefined behaviour and the generator must not produce them.
//! - [`Robustness::PerElement`] (stride ≠ 0): in bounds iff `len ≥ Stride` and
//!   `(Stride × Index mod 2^32) ≤ len − Stride`; out of bounds, the whole load returns zero (or the
//!   poison byte) and the whole store writes nothing.
//! - [`Robustness::PerComponent`]: component `k` at `a_k = (addr + k·C) mod 2^32` is in bounds iff
//!   `len ≥ C` and `a_k ≤ len − C`, each component on its own.
//! - word-granular bounds (`word_granular`, the lowering without 8-bit storage, e.g. the layer's
//!   `debug_target=core`): the checks above use `len` rounded down to a multiple of 4
//!   (`OpArrayLength` of the word view × 4), see [`checked_len`]; unchecked accesses are unchanged.

/// The optional Raw Access Chain Operands of `OpRawAccessChainNV`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Robustness {
    /// No operand (or `None`): no bounds checking.
    None,
    /// `RobustnessPerComponentNV` (0x1).
    PerComponent,
    /// `RobustnessPerElementNV` (0x2).
    PerElement,
}

impl Robustness {
    pub const ALL: [Robustness; 3] = [
        Robustness::None,
        Robustness::PerComponent,
        Robustness::PerElement,
    ];

    /// The operand as SPIR-V assembly writes it (empty for none).
    pub fn asm_operand(self) -> &'static str {
        match self {
            Robustness::None => "",
            Robustness::PerComponent => " RobustnessPerComponentNV",
            Robustness::PerElement => " RobustnessPerElementNV",
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Robustness::None => "none",
            Robustness::PerComponent => "per-component",
            Robustness::PerElement => "per-element",
        }
    }
}

/// One raw access: the operands of the chain plus the element shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    pub stride: u32,
    pub index: u32,
    pub offset: u32,
    /// C: bytes per component (1, 2, 4, 8).
    pub comp_bytes: u32,
    /// N: number of components (1–4).
    pub comps: u32,
    pub robustness: Robustness,
}

impl Access {
    /// Bytes of the whole element.
    pub fn elem_bytes(&self) -> u32 {
        self.comp_bytes * self.comps
    }

    /// The byte address: `(Offset + Stride × Index) mod 2^32`.
    pub fn address(&self) -> u32 {
        self.offset
            .wrapping_add(self.stride.wrapping_mul(self.index))
    }

    /// Per component: `Some(byte address)` if the component is accessed, `None` if the
    /// robustness check drops it. For [`Robustness::None`] every component is `Some` (the
    /// caller must make sure it is in range: [`Access::in_range_unchecked`]).
    pub fn component_addresses(&self, len: u64) -> Vec<Option<u32>> {
        let c = self.comp_bytes;
        let addr = self.address();
        let each = |k: u32| addr.wrapping_add(k * c);
        match self.robustness {
            Robustness::None => (0..self.comps).map(|k| Some(each(k))).collect(),
            Robustness::PerElement => {
                assert!(
                    self.stride != 0,
                    "RobustnessPerElementNV with stride 0 is invalid"
                );
                let s = self.stride as u64;
                let si = self.stride.wrapping_mul(self.index) as u64;
                let ok = len >= s && si <= len - s;
                (0..self.comps)
                    .map(|k| if ok { Some(each(k)) } else { None })
                    .collect()
            }
            Robustness::PerComponent => (0..self.comps)
                .map(|k| {
                    let a = each(k);
                    let ok = len >= c as u64 && (a as u64) <= len - c as u64;
                    if ok {
                        Some(a)
                    } else {
                        None
                    }
                })
                .collect(),
        }
    }

    /// True if every byte of the element (at the wrapped address) lies inside `len` without
    /// wrapping inside the element: what a [`Robustness::None`] access must satisfy.
    pub fn in_range_unchecked(&self, len: u64) -> bool {
        let a = self.address() as u64;
        a + self.elem_bytes() as u64 <= len
    }

    /// Bytes this access would write (relative to the range start), for a store.
    pub fn written_bytes(&self, len: u64) -> Vec<u32> {
        let mut out = Vec::new();
        for a in self.component_addresses(len).into_iter().flatten() {
            for b in 0..self.comp_bytes {
                out.push(a + b);
            }
        }
        out
    }
}

/// The `len` the robustness checks compare against for a bound range of `len` bytes: `len`
/// itself, or with `word_granular` bounds (no 8-bit view: the word view's `OpArrayLength` × 4)
/// `len` rounded down to a multiple of 4.
pub fn checked_len(len: u64, word_granular: bool) -> u64 {
    if word_granular {
        len / 4 * 4
    } else {
        len
    }
}

/// With word-granular bounds the lowering reaches 8/16-bit data through the 32-bit word holding
/// it, so an *unchecked* ([`Robustness::None`]) access to the last 1–3 bytes of a range whose
/// size is not a multiple of 4 goes through a word that extends past the range: undefined
/// without `robustBufferAccess` (lavapipe reads 0 and drops the write). The byte offsets, within
/// the element, of such bytes (empty for checked accesses and without `word_granular`).
pub fn undefined_bytes(acc: &Access, len: u64, word_granular: bool) -> Vec<u32> {
    let cl = checked_len(len, word_granular);
    if acc.robustness != Robustness::None || cl == len {
        return Vec::new();
    }
    let a = acc.address() as u64;
    (0..acc.elem_bytes())
        .filter(|&b| a + b as u64 >= cl)
        .collect()
}

/// Loads through the access from `range` (the bytes of the bound range; `len = range.len()`).
/// Out-of-bounds components (or the whole element) read `poison` bytes, or 0 without poison.
pub fn load(acc: &Access, range: &[u8], poison: Option<u8>) -> Vec<u8> {
    load_with(acc, range, poison, false)
}

/// [`load`] with word-granular bounds when `word_granular` (see [`checked_len`]).
pub fn load_with(acc: &Access, range: &[u8], poison: Option<u8>, word_granular: bool) -> Vec<u8> {
    let len = range.len() as u64;
    if acc.robustness == Robustness::None {
        assert!(
            acc.in_range_unchecked(len),
            "model: unchecked out-of-bounds load {acc:?} (len {len})"
        );
    }
    let c = acc.comp_bytes as usize;
    let mut out = Vec::with_capacity(acc.elem_bytes() as usize);
    for a in acc.component_addresses(checked_len(len, word_granular)) {
        match a {
            Some(a) => out.extend_from_slice(&range[a as usize..a as usize + c]),
            None => out.extend(std::iter::repeat_n(poison.unwrap_or(0), c)),
        }
    }
    out
}

/// Stores `value` (`elem_bytes` bytes) through the access into `range`.
pub fn store(acc: &Access, range: &mut [u8], value: &[u8]) {
    store_with(acc, range, value, false)
}

/// [`store`] with word-granular bounds when `word_granular` (see [`checked_len`]).
pub fn store_with(acc: &Access, range: &mut [u8], value: &[u8], word_granular: bool) {
    let len = range.len() as u64;
    assert_eq!(value.len(), acc.elem_bytes() as usize);
    if acc.robustness == Robustness::None {
        assert!(
            acc.in_range_unchecked(len),
            "model: unchecked out-of-bounds store {acc:?} (len {len})"
        );
    }
    let c = acc.comp_bytes as usize;
    for (k, a) in acc
        .component_addresses(checked_len(len, word_granular))
        .into_iter()
        .enumerate()
    {
        if let Some(a) = a {
            range[a as usize..a as usize + c].copy_from_slice(&value[k * c..(k + 1) * c]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(stride: u32, index: u32, offset: u32, c: u32, n: u32, r: Robustness) -> Access {
        Access {
            stride,
            index,
            offset,
            comp_bytes: c,
            comps: n,
            robustness: r,
        }
    }

    #[test]
    fn per_element_straddling_is_out() {
        // 11 elements of 16 bytes minus one scalar: element 10 straddles the end.
        let len = 11 * 16 - 4;
        let a = acc(16, 10, 0, 4, 4, Robustness::PerElement);
        assert!(a.component_addresses(len).iter().all(|x| x.is_none()));
        let a = acc(16, 9, 0, 4, 4, Robustness::PerElement);
        assert!(a.component_addresses(len).iter().all(|x| x.is_some()));
    }

    #[test]
    fn per_component_partial() {
        let len = 11 * 16 - 4;
        let a = acc(16, 10, 0, 4, 4, Robustness::PerComponent);
        let v = a.component_addresses(len);
        assert_eq!(v, vec![Some(160), Some(164), Some(168), None]);
        // 43-byte range, 2×int8 at 42: component 0 in, component 1 out.
        let a = acc(0, 0, 42, 1, 2, Robustness::PerComponent);
        assert_eq!(a.component_addresses(43), vec![Some(42), None]);
    }

    #[test]
    fn wraps_in_32_bits() {
        // stride × index wraps to 0 → element 0 is in bounds.
        let a = acc(16, 1 << 28, 4, 4, 1, Robustness::PerElement);
        assert_eq!(a.address(), 4);
        assert_eq!(a.component_addresses(64), vec![Some(4)]);
        // A component wrapping past 2^32 lands at 0.
        let a = acc(0, 0, u32::MAX - 3, 4, 2, Robustness::PerComponent);
        assert_eq!(a.component_addresses(64), vec![None, Some(0)]);
    }

    #[test]
    fn load_store_poison() {
        let range: Vec<u8> = (0..10u8).collect();
        let a = acc(0, 7, 8, 2, 2, Robustness::PerComponent);
        assert_eq!(load(&a, &range, Some(0xAB)), vec![8, 9, 0xAB, 0xAB]);
        assert_eq!(load(&a, &range, None), vec![8, 9, 0, 0]);
        let mut t = vec![0xCC; 10];
        store(&a, &mut t, &[1, 2, 3, 4]);
        assert_eq!(&t[8..], &[1, 2]);
        let e = acc(4, 2, 0, 2, 2, Robustness::PerElement);
        let mut t = vec![0xCC; 10];
        store(&e, &mut t, &[1, 2, 3, 4]);
        assert_eq!(t, vec![0xCC; 10], "straddling element is not written");
        assert_eq!(load(&e, &range, Some(0xAB)), vec![0xAB; 4]);
    }

    #[test]
    fn word_granular_rounds_len_down() {
        assert_eq!(checked_len(43, true), 40);
        assert_eq!(checked_len(43, false), 43);
        assert_eq!(checked_len(40, true), 40);
        assert_eq!(checked_len(3, true), 0);
        let range: Vec<u8> = (0..43u8).collect();
        // u8 at 40: in bounds exactly, out word-granularly.
        let a = acc(0, 0, 40, 1, 1, Robustness::PerComponent);
        assert_eq!(load_with(&a, &range, Some(0xAB), false), vec![40]);
        assert_eq!(load_with(&a, &range, Some(0xAB), true), vec![0xAB]);
        // 2×u16 at 38: component 0 (38..40) in, component 1 (40..42) out.
        let a = acc(0, 0, 38, 2, 2, Robustness::PerComponent);
        assert_eq!(load_with(&a, &range, None, true), vec![38, 39, 0, 0]);
        let mut t = vec![0xCC; 43];
        store_with(&a, &mut t, &[1, 2, 3, 4], true);
        assert_eq!(&t[36..], &[0xCC, 0xCC, 1, 2, 0xCC, 0xCC, 0xCC]);
        // Per element, stride 4: element 9 (36..40) in, element 10 (40..44) out either way.
        let e = acc(4, 9, 0, 1, 4, Robustness::PerElement);
        assert_eq!(load_with(&e, &range, None, true), vec![36, 37, 38, 39]);
        // Unchecked accesses ignore the granularity, but bytes in the last partial word are
        // reached through a word past the range: undefined.
        let n = acc(0, 0, 41, 1, 2, Robustness::None);
        assert_eq!(load_with(&n, &range, None, true), vec![41, 42]);
        assert_eq!(undefined_bytes(&n, 43, true), vec![0, 1]);
        assert_eq!(undefined_bytes(&n, 43, false), Vec::<u32>::new());
        let n = acc(0, 0, 39, 1, 2, Robustness::None);
        assert_eq!(undefined_bytes(&n, 43, true), vec![1]);
        assert_eq!(undefined_bytes(&n, 44, true), Vec::<u32>::new());
        assert_eq!(
            undefined_bytes(&a, 43, true),
            Vec::<u32>::new(),
            "checked accesses are defined"
        );
    }
}
