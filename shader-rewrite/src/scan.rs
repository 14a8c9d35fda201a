//! Cheap decision: walk only the leading OpCapability/OpExtension instructions (the logical
//! layout puts them first, SPIR-V spec 2.4) and stop at the first other instruction. No
//! allocation; the cost is a few words per module.
use crate::error::RewriteError;
use crate::module::{op, HEADER_WORDS, MAGIC};
use crate::target::{Options, SmallStorage};

/// Capability RawAccessChainsNV (SPV_NV_raw_access_chains).
pub const CAP_RAW_ACCESS_CHAINS_NV: u32 = 5414;

/// Capability BindlessTextureNV (SPV_NV_bindless_texture).
pub const CAP_BINDLESS_TEXTURE_NV: u32 = 5390;

/// Capability PhysicalStorageBufferAddresses (SPV_KHR_physical_storage_buffer).
pub const CAP_PHYSICAL_STORAGE_BUFFER_ADDRESSES: u32 = 5347;

/// Which emulated features a module declares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanResult {
    pub raw_access_chains: bool,
    /// The 8/16-bit storage capabilities declared.
    pub small_storage: SmallStorage,
    pub bindless_texture: bool,
    pub physical_storage_buffer: bool,
}

impl ScanResult {
    /// Does anything found need emulating under `options`?
    pub fn any(&self, options: &Options) -> bool {
        (self.raw_access_chains && options.emulate_raw_access_chains)
            || self.small_storage.intersects(&options.emulate_storage)
            || (self.bindless_texture && options.bindless.is_some())
            || (self.physical_storage_buffer && options.bda.is_some())
    }
    fn any_declared(&self) -> bool {
        self.raw_access_chains || self.small_storage.any() || self.bindless_texture || self.physical_storage_buffer
    }
}

/// Looks at the header and the capability section. Errors on a header that is not SPIR-V, and on
/// a damaged instruction in that section unless an emulated capability was declared before it.
pub fn scan(words: &[u32]) -> Result<ScanResult, RewriteError> {
    if words.len() < HEADER_WORDS {
        return Err(RewriteError::malformed(0, format!("{} words is shorter than the 5-word header", words.len())));
    }
    if words[0] != MAGIC {
        return Err(RewriteError::malformed(0, format!("bad magic number {:#010x}", words[0])));
    }
    let mut result = ScanResult::default();
    let mut at = HEADER_WORDS;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let opcode = words[at] & 0xffff;
        if count == 0 || at + count > words.len() {
            // A module that already declared an emulated capability must not slip through as
            // "unreadable, pass it on" (the layer would hand RawAccessChainsNV to a driver
            // without it): report it, and the full parse in `rewrite` fails with the precise
            // error.
            if result.any_declared() {
                break;
            }
            return Err(RewriteError::malformed(at, "instruction word count runs past the end"));
        }
        match opcode {
            op::CAPABILITY if count >= 2 => {
                let cap = words[at + 1];
                if cap == CAP_RAW_ACCESS_CHAINS_NV {
                    result.raw_access_chains = true;
                }
                if cap == CAP_BINDLESS_TEXTURE_NV {
                    result.bindless_texture = true;
                }
                if cap == CAP_PHYSICAL_STORAGE_BUFFER_ADDRESSES {
                    result.physical_storage_buffer = true;
                }
                result.small_storage.set(cap, true);
            }
            op::EXTENSION | op::NOP => {}
            _ => break,
        }
        at += count;
    }
    Ok(result)
}

/// True when [`crate::rewrite`] would change the module under `options`. Malformed headers
/// count as "no": the driver gets them unchanged and reports its own error.
pub fn needs_rewrite(words: &[u32], options: &Options) -> bool {
    // The layer asks this for every module an application creates; nearly all declare nothing
    // this library emulates. A bare walk of the capability section settles those (the same walk
    // as `scan`, stopping where it stops), and only a module with an emulated capability pays
    // for the full scan and the comparison with `options`.
    if words.len() < HEADER_WORDS || words[0] != MAGIC {
        return false;
    }
    let mut at = HEADER_WORDS;
    while let Some(&first) = words.get(at) {
        let count = (first >> 16) as usize;
        match first & 0xffff {
            op::CAPABILITY if count >= 2 => match words.get(at + 1) {
                Some(&cap) if is_emulated(cap) => return scan(words).is_ok_and(|s| s.any(options)),
                _ => {}
            },
            op::EXTENSION | op::NOP => {}
            _ => return false,
        }
        if count == 0 {
            return false; // damaged before any emulated capability: `scan` errs, so "no"
        }
        at += count;
    }
    false
}

/// A capability some pass emulates.
fn is_emulated(cap: u32) -> bool {
    matches!(cap, CAP_RAW_ACCESS_CHAINS_NV | CAP_BINDLESS_TEXTURE_NV | CAP_PHYSICAL_STORAGE_BUFFER_ADDRESSES) || SmallStorage::CAPS.contains(&cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW_CAP: [u32; 2] = [(2 << 16) | op::CAPABILITY, CAP_RAW_ACCESS_CHAINS_NV];

    #[test]
    fn bad_header_is_an_error() {
        assert!(scan(&[MAGIC, 0x0001_0300, 0, 1]).is_err());
        assert!(scan(&[0xdead_beef, 0x0001_0300, 0, 1, 0]).is_err());
    }

    #[test]
    fn damage_after_the_capability_still_reports_it() {
        let mut w = vec![MAGIC, 0x0001_0300, 0, 16, 0];
        w.extend(raw_cap_then(&[(2 << 16) | op::CAPABILITY])); // truncated instruction
        assert!(scan(&w).unwrap().raw_access_chains);
        let mut w = vec![MAGIC, 0x0001_0300, 0, 16, 0];
        w.extend(raw_cap_then(&[0])); // word count 0
        assert!(scan(&w).unwrap().raw_access_chains);
        // Damage before the capability: an error, as before (the module is passed on as-is).
        assert!(scan(&[MAGIC, 0x0001_0300, 0, 16, 0, (9 << 16) | op::CAPABILITY]).is_err());
    }

    /// The fast path agrees with `scan` on every prefix of some modules (damaged ones included).
    #[test]
    fn needs_rewrite_agrees_with_scan() {
        let options = Options { target: crate::target::Target::core(), emulate_storage: SmallStorage::missing_from(&crate::target::Target::core()), ..Options::default() };
        let ext = [(3 << 16) | op::EXTENSION, 0x6162_6364, 0];
        let bodies: Vec<Vec<u32>> = vec![
            vec![(2 << 16) | op::CAPABILITY, 1],
            raw_cap_then(&[(3 << 16) | 14, 0, 1]),
            [&[(2 << 16) | op::CAPABILITY, 1][..], &ext, &[(2 << 16) | op::CAPABILITY, 4433, (3 << 16) | 14, 0, 1]].concat(),
            [&[(2 << 16) | op::CAPABILITY, 1, 0][..], &RAW_CAP].concat(),
            [&ext[..], &[(2 << 16) | op::CAPABILITY, CAP_BINDLESS_TEXTURE_NV, (9 << 16) | op::CAPABILITY]].concat(),
            vec![(2 << 16) | op::CAPABILITY, 4436],
            vec![(1 << 16) | op::NOP, (2 << 16) | op::CAPABILITY, 4450],
            vec![(2 << 16) | op::CAPABILITY, CAP_PHYSICAL_STORAGE_BUFFER_ADDRESSES, (3 << 16) | 14, 5348, 1],
        ];
        let bda = Options { bda: Some(crate::bda::BdaTable { set: 0, binding: 0, count: 1 }), ..Options::default() };
        for body in bodies {
            let w: Vec<u32> = [MAGIC, 0x0001_0300, 0, 16, 0].iter().chain(&body).copied().collect();
            for n in 0..=w.len() {
                for o in [Options::default(), options, bda] {
                    let expected = scan(&w[..n]).map(|s| s.any(&o)).unwrap_or(false);
                    assert_eq!(needs_rewrite(&w[..n], &o), expected, "{:x?}", &w[..n]);
                }
            }
        }
    }

    fn raw_cap_then(rest: &[u32]) -> Vec<u32> {
        RAW_CAP.iter().chain(rest).copied().collect()
    }
}
