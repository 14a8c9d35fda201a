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

/// Which emulated features a module declares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanResult {
    pub raw_access_chains: bool,
    /// The 8/16-bit storage capabilities declared.
    pub small_storage: SmallStorage,
    pub bindless_texture: bool,
}

impl ScanResult {
    /// Does anything found need emulating under `options`?
    pub fn any(&self, options: &Options) -> bool {
        (self.raw_access_chains && options.emulate_raw_access_chains)
            || self.small_storage.and(&options.emulate_storage).any()
            || (self.bindless_texture && options.bindless.is_some())
    }
    fn any_declared(&self) -> bool {
        self.raw_access_chains || self.small_storage.any() || self.bindless_texture
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
    scan(words).map(|s| s.any(options)).unwrap_or(false)
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

    fn raw_cap_then(rest: &[u32]) -> Vec<u32> {
        RAW_CAP.iter().chain(rest).copied().collect()
    }
}
