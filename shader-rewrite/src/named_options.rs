//! [`Options`] fields by name: one table for the CLI's `--set NAME=VALUE` and the C API's
//! `spvpf_options_set_bool` / `spvpf_options_set_uint`, so both accept the same names and values.
use crate::target::{BindlessTable, Options};

/// The type of value a named option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 0 or 1.
    Bool,
    /// Any `u32` the option's own check accepts.
    Uint,
}

/// `oob_poison` value that turns the poison off (loads caught out of bounds return 0).
pub const OOB_POISON_OFF: u32 = u32::MAX;

/// One settable field of [`Options`].
pub struct NamedOption {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    apply: fn(&mut Options, u32) -> Result<(), String>,
}

impl NamedOption {
    /// Sets the option; a bool takes 0 or 1, anything else is refused with the reason.
    pub fn set(&self, options: &mut Options, value: u32) -> Result<(), String> {
        if self.kind == Kind::Bool && value > 1 {
            return Err(format!("{}: a bool option takes 0 or 1, not {value}", self.name));
        }
        (self.apply)(options, value).map_err(|e| format!("{}: {e}", self.name))
    }
}

/// The option called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static NamedOption> {
    NAMED_OPTIONS.iter().find(|o| o.name == name)
}

/// Parses `NAME=VALUE` (bools: 0/1/true/false; numbers: decimal or 0x hex) and sets it.
pub fn set_from_str(options: &mut Options, assignment: &str) -> Result<(), String> {
    let (name, value) = assignment.split_once('=').ok_or_else(|| format!("`{assignment}` is not NAME=VALUE"))?;
    let option = find(name).ok_or_else(|| format!("unknown option `{name}`"))?;
    let number = match (option.kind, value) {
        (Kind::Bool, "true") => Ok(1),
        (Kind::Bool, "false") => Ok(0),
        (_, v) => match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
            Some(hex) => u32::from_str_radix(hex, 16),
            None => v.parse(),
        },
    };
    option.set(options, number.map_err(|_| format!("{name}: `{value}` is not a value"))?)
}

fn bindless(o: &mut Options) -> &mut BindlessTable {
    o.bindless.get_or_insert(BindlessTable::with_defaults(0))
}

fn count(v: u32) -> Result<u32, String> {
    if v == 0 {
        Err("a descriptor count must be at least 1".into())
    } else {
        Ok(v)
    }
}

macro_rules! target_bool {
    ($name:literal, $field:ident, $help:literal) => {
        NamedOption { name: $name, kind: Kind::Bool, help: $help, apply: |o, v| {
            o.target.$field = v != 0;
            Ok(())
        } }
    };
}

/// Every named option. Target features default to what [`Options::default`] has (all of them);
/// setting any `bindless_*` option turns the bindless lowering on (table at set 0, bindings
/// 0/1/2, counts 65536/65536/4096 until set).
pub const NAMED_OPTIONS: &[NamedOption] = &[
    target_bool!("storage_buffer_8bit", storage_buffer_8bit, "target has storageBuffer8BitAccess"),
    target_bool!("uniform_and_storage_buffer_8bit", uniform_and_storage_buffer_8bit, "target has uniformAndStorageBuffer8BitAccess"),
    target_bool!("storage_push_constant_8", storage_push_constant_8, "target has storagePushConstant8"),
    target_bool!("storage_buffer_16bit", storage_buffer_16bit, "target has storageBuffer16BitAccess"),
    target_bool!("uniform_and_storage_buffer_16bit", uniform_and_storage_buffer_16bit, "target has uniformAndStorageBuffer16BitAccess"),
    target_bool!("storage_push_constant_16", storage_push_constant_16, "target has storagePushConstant16"),
    target_bool!("storage_input_output_16", storage_input_output_16, "target has storageInputOutput16"),
    target_bool!("int8", int8, "target has shaderInt8"),
    target_bool!("int16", int16, "target has shaderInt16"),
    target_bool!("int64", int64, "target has shaderInt64"),
    target_bool!(
        "quirk_nonuniform_array_length",
        nonuniform_array_length_broken,
        "target returns one OpArrayLength per subgroup for non-uniform descriptor indices (lavapipe)"
    ),
    NamedOption {
        name: "emulate_raw_access_chains",
        kind: Kind::Bool,
        help: "lower OpRawAccessChainNV (default 1)",
        apply: |o, v| {
            o.emulate_raw_access_chains = v != 0;
            Ok(())
        },
    },
    NamedOption {
        name: "oob_poison",
        kind: Kind::Uint,
        help: "out-of-bounds loads caught by emulated robustness return this byte (0..255; 4294967295: off, the default)",
        apply: |o, v| {
            o.oob_poison = match v {
                OOB_POISON_OFF => None,
                b => Some(u8::try_from(b).map_err(|_| format!("{b} is not a byte (0..255) or {OOB_POISON_OFF} (off)"))?),
            };
            Ok(())
        },
    },
    NamedOption { name: "bindless_set", kind: Kind::Uint, help: "descriptor set of the bindless table", apply: |o, v| {
            bindless(o).set = v;
            Ok(())
        } },
    NamedOption {
        name: "bindless_sampled_images_binding",
        kind: Kind::Uint,
        help: "binding of the table's sampled-image array",
        apply: |o, v| {
            bindless(o).sampled_images_binding = v;
            Ok(())
        },
    },
    NamedOption {
        name: "bindless_sampled_images_count",
        kind: Kind::Uint,
        help: "descriptor count of the sampled-image array",
        apply: |o, v| {
            bindless(o).sampled_images_count = count(v)?;
            Ok(())
        },
    },
    NamedOption {
        name: "bindless_storage_images_binding",
        kind: Kind::Uint,
        help: "binding of the table's storage-image array",
        apply: |o, v| {
            bindless(o).storage_images_binding = v;
            Ok(())
        },
    },
    NamedOption {
        name: "bindless_storage_images_count",
        kind: Kind::Uint,
        help: "descriptor count of the storage-image array",
        apply: |o, v| {
            bindless(o).storage_images_count = count(v)?;
            Ok(())
        },
    },
    NamedOption {
        name: "bindless_samplers_binding",
        kind: Kind::Uint,
        help: "binding of the table's sampler array",
        apply: |o, v| {
            bindless(o).samplers_binding = v;
            Ok(())
        },
    },
    NamedOption {
        name: "bindless_samplers_count",
        kind: Kind::Uint,
        help: "descriptor count of the sampler array",
        apply: |o, v| {
            bindless(o).samplers_count = count(v)?;
            Ok(())
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_values_checked() {
        for (i, o) in NAMED_OPTIONS.iter().enumerate() {
            assert!(NAMED_OPTIONS[..i].iter().all(|p| p.name != o.name), "{} twice", o.name);
        }
        let mut o = Options::default();
        set_from_str(&mut o, "int64=false").unwrap();
        set_from_str(&mut o, "oob_poison=0xAB").unwrap();
        set_from_str(&mut o, "bindless_samplers_count=7").unwrap();
        assert!(!o.target.int64);
        assert_eq!(o.oob_poison, Some(0xAB));
        assert_eq!(o.bindless, Some(BindlessTable { samplers_count: 7, ..BindlessTable::with_defaults(0) }));
        for bad in ["int64=2", "oob_poison=256", "bindless_set=x", "nope=1", "int8", "bindless_samplers_count=0"] {
            assert!(set_from_str(&mut o, bad).is_err(), "{bad}");
        }
        set_from_str(&mut o, &format!("oob_poison={OOB_POISON_OFF}")).unwrap();
        assert_eq!(o.oob_poison, None);
    }
}
