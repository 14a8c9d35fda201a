//! [`Options`] fields by name: one table for the CLI's `--set NAME=VALUE` (and its flags such as
//! `--bda-set`, which set these same options) and the C API's `spvpf_options_set_bool` /
//! `spvpf_options_set_uint`, so both accept the same names and values. `spirv-polyfill targets`
//! prints every option's value from it.
use crate::bda::{BdaTable, SLOT_BITS};
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
    read: fn(&Options) -> Option<u32>,
}

impl NamedOption {
    /// Sets the option; a bool takes 0 or 1, anything else is refused with the reason.
    pub fn set(&self, options: &mut Options, value: u32) -> Result<(), String> {
        if self.kind == Kind::Bool && value > 1 {
            return Err(format!("{}: a bool option takes 0 or 1, not {value}", self.name));
        }
        (self.apply)(options, value).map_err(|e| format!("{}: {e}", self.name))
    }
    /// The option's value in `options`; `None` where it is off (no `oob_poison`, no bindless or
    /// buffer-device-address table).
    pub fn get(&self, options: &Options) -> Option<u32> {
        (self.read)(options)
    }
}

/// The option called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static NamedOption> {
    NAMED_OPTIONS.iter().find(|o| o.name == name)
}

/// Parses a value for `option`: bools 0/1/true/false; numbers decimal or 0x hex.
pub fn parse_value(option: &NamedOption, value: &str) -> Result<u32, String> {
    let number = match (option.kind, value) {
        (Kind::Bool, "true") => Ok(1),
        (Kind::Bool, "false") => Ok(0),
        (_, v) => match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
            Some(hex) => u32::from_str_radix(hex, 16),
            None => v.parse(),
        },
    };
    number.map_err(|_| format!("{}: `{value}` is not a value", option.name))
}

/// Parses `NAME=VALUE` (see [`parse_value`]) and sets it.
pub fn set_from_str(options: &mut Options, assignment: &str) -> Result<(), String> {
    let (name, value) = assignment.split_once('=').ok_or_else(|| format!("`{assignment}` is not NAME=VALUE"))?;
    let option = find(name).ok_or_else(|| format!("unknown option `{name}`"))?;
    option.set(options, parse_value(option, value)?)
}

fn bindless(o: &mut Options) -> &mut BindlessTable {
    o.bindless.get_or_insert(BindlessTable::with_defaults(0))
}

/// The buffer-device-address table where no `bda_*` option says otherwise: the layer's layout
/// (binding 3, after the bindless arrays at 0/1/2, 65536 slots) at `set`.
pub const fn bda_with_defaults(set: u32) -> BdaTable {
    BdaTable { set, binding: 3, count: 65536 }
}

fn bda(o: &mut Options) -> &mut BdaTable {
    o.bda.get_or_insert(bda_with_defaults(0))
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
        NamedOption {
            name: $name,
            kind: Kind::Bool,
            help: $help,
            apply: |o, v| {
                o.target.$field = v != 0;
                Ok(())
            },
            read: |o| Some(o.target.$field as u32),
        }
    };
}

/// A `u32` field of an optional table (`bindless` or `bda`); `$check` vets the value.
macro_rules! table_uint {
    ($name:literal, $table:ident, $field:ident, $check:expr, $help:literal) => {
        NamedOption {
            name: $name,
            kind: Kind::Uint,
            help: $help,
            apply: |o, v| {
                $table(o).$field = $check(v)?;
                Ok(())
            },
            read: |o| o.$table.map(|t| t.$field),
        }
    };
}

fn any(v: u32) -> Result<u32, String> {
    Ok(v)
}

fn slots(v: u32) -> Result<u32, String> {
    if v > 1 << SLOT_BITS {
        return Err(format!("{v} slots do not fit the address's {SLOT_BITS}-bit slot field"));
    }
    count(v)
}

/// Every named option. Target features default to what [`Options::default`] has (all of them);
/// setting any `bindless_*` option turns the bindless lowering on (table at set 0, bindings
/// 0/1/2, counts 65536/65536/4096 until set); setting any `bda_*` option turns the lowering of
/// PhysicalStorageBuffer pointers on (table at set 0, binding 3, 65536 slots until set).
/// The lowering carries addresses as `u64` where the target has `int64`, else as `uvec2`.
pub const NAMED_OPTIONS: &[NamedOption] = &[
    target_bool!("storage_buffer_8bit", storage_buffer_8bit, "target has storageBuffer8BitAccess"),
    target_bool!("uniform_and_storage_buffer_8bit", uniform_and_storage_buffer_8bit, "target has uniformAndStorageBuffer8BitAccess"),
    target_bool!("storage_push_constant_8", storage_push_constant_8, "target has storagePushConstant8"),
    target_bool!("storage_buffer_16bit", storage_buffer_16bit, "target has storageBuffer16BitAccess"),
    target_bool!("uniform_and_storage_buffer_16bit", uniform_and_storage_buffer_16bit, "target has uniformAndStorageBuffer16BitAccess"),
    target_bool!("storage_push_constant_16", storage_push_constant_16, "target has storagePushConstant16"),
    target_bool!("storage_input_output_16", storage_input_output_16, "target has storageInputOutput16"),
    target_bool!("int8", int8, "target has shaderInt8"),
    target_bool!("float16", float16, "target has shaderFloat16: f32 -> f16 roundings of modules without 16-bit float arithmetic use the driver's conversion (adding Float16)"),
    target_bool!("int16", int16, "target has shaderInt16"),
    target_bool!("int64", int64, "target has shaderInt64 (buffer device addresses are then carried as u64, else as uvec2)"),
    target_bool!(
        "quirk_nonuniform_array_length",
        nonuniform_array_length_broken,
        "target returns one OpArrayLength per subgroup for non-uniform descriptor indices (lavapipe)"
    ),
    target_bool!(
        "quirk_nonuniform_access_per_lane",
        nonuniform_access_per_lane,
        "target expands each non-uniformly indexed storage-buffer access per lane (lavapipe): loops holding lowered address accesses are marked DontUnroll"
    ),
    target_bool!(
        "robust_buffer_access2",
        robust_buffer_access2,
        "target has robustBufferAccess2 enabled (and no pipeline robustness): lowered buffer-device-address accesses leave their bounds checks to the driver"
    ),
    target_bool!(
        "robust_storage_byte_exact",
        robust_storage_byte_exact,
        "target's robustStorageBufferAccessSizeAlignment is 1: with robust_buffer_access2, per-component raw-chain accesses made of one access per component leave their bounds checks to the driver"
    ),
    target_bool!(
        "quirk_robust_vector_components",
        robust_vector_components,
        "target checks each component of a vector storage-buffer access on its own (lavapipe): with robust_storage_byte_exact, per-component raw-chain accesses of 32/64-bit components leave their bounds checks to the driver also as whole vectors"
    ),
    NamedOption {
        name: "emulate_raw_access_chains",
        kind: Kind::Bool,
        help: "lower OpRawAccessChainNV (default 1)",
        apply: |o, v| {
            o.emulate_raw_access_chains = v != 0;
            Ok(())
        },
        read: |o| Some(o.emulate_raw_access_chains as u32),
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
        read: |o| o.oob_poison.map(u32::from),
    },
    table_uint!("bindless_set", bindless, set, any, "descriptor set of the bindless table (lowers SPV_NV_bindless_texture onto it)"),
    table_uint!("bindless_sampled_images_binding", bindless, sampled_images_binding, any, "binding of the table's sampled-image array (default 0)"),
    table_uint!("bindless_sampled_images_count", bindless, sampled_images_count, count, "descriptor count of the sampled-image array (default 65536)"),
    table_uint!("bindless_storage_images_binding", bindless, storage_images_binding, any, "binding of the table's storage-image array (default 1)"),
    table_uint!("bindless_storage_images_count", bindless, storage_images_count, count, "descriptor count of the storage-image array (default 65536)"),
    table_uint!("bindless_samplers_binding", bindless, samplers_binding, any, "binding of the table's sampler array (default 2)"),
    table_uint!("bindless_samplers_count", bindless, samplers_count, count, "descriptor count of the sampler array (default 4096)"),
    table_uint!("bda_set", bda, set, any, "descriptor set of the buffer-device-address table (lowers PhysicalStorageBuffer pointers onto it)"),
    table_uint!("bda_binding", bda, binding, any, "binding of the table's storage-buffer array (default 3)"),
    table_uint!("bda_count", bda, count, slots, "descriptor count of the storage-buffer array: the slots addresses can name (default 65536)"),
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
        assert_eq!(o.bda, None);
        set_from_str(&mut o, "bda_binding=5").unwrap();
        assert_eq!(o.bda, Some(BdaTable { set: 0, binding: 5, count: 65536 }));
        set_from_str(&mut o, "bda_set=7").unwrap();
        set_from_str(&mut o, "bda_count=0x1000000").unwrap();
        assert_eq!(o.bda, Some(BdaTable { set: 7, binding: 5, count: 1 << 24 }));
        for bad in ["int64=2", "oob_poison=256", "bindless_set=x", "nope=1", "int8", "bindless_samplers_count=0", "bda_count=0", "bda_count=16777217"] {
            assert!(set_from_str(&mut o, bad).is_err(), "{bad}");
        }
        set_from_str(&mut o, &format!("oob_poison={OOB_POISON_OFF}")).unwrap();
        assert_eq!(o.oob_poison, None);
    }

    /// Every option reads back what was set, and setting it changes no other option (a `read`
    /// or `apply` wired to the wrong field fails here).
    #[test]
    fn every_option_reads_back_what_was_set() {
        for option in NAMED_OPTIONS {
            let (a, b) = if option.kind == Kind::Bool { (0, 1) } else { (5, 200) };
            let (mut x, mut y) = (Options::default(), Options::default());
            option.set(&mut x, a).unwrap();
            option.set(&mut y, b).unwrap();
            assert_eq!((option.get(&x), option.get(&y)), (Some(a), Some(b)), "{}", option.name);
            for other in NAMED_OPTIONS.iter().filter(|p| p.name != option.name) {
                assert_eq!(other.get(&x), other.get(&y), "setting {} changed {}", option.name, other.name);
            }
        }
        assert_eq!(find("oob_poison").unwrap().get(&Options::default()), None);
        assert_eq!(find("bda_set").unwrap().get(&Options::default()), None);
    }
}
