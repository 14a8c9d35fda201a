//! The one description of the layer's settings: key, type, default, label, description, and
//! whether it is a debugging aid. `Settings::set` parses them; the manifests' `features.settings`
//! (vkconfig) and the README's settings table are generated from this table
//! (layer/tests/generated_files.rs fails when a generated file is stale).

/// One value of an enumerated setting.
#[derive(Debug)]
pub struct Flag {
    pub key: &'static str,
    pub label: &'static str,
    pub description: &'static str,
}

/// The type of a setting's value (vkconfig's setting types).
#[derive(Debug)]
pub enum Value {
    Bool,
    Enum(&'static [Flag]),
    Uint { min: u32, max: u32 },
    String,
    /// A file the layer writes (vkconfig `SAVE_FILE`).
    SaveFile,
    /// A folder the layer writes into (vkconfig `SAVE_FOLDER`).
    SaveFolder,
}

#[derive(Debug)]
pub struct Spec {
    pub key: &'static str,
    pub label: &'static str,
    pub description: &'static str,
    pub value: Value,
    /// As written in a settings file (`""`: unset).
    pub default: &'static str,
    /// A debugging or testing aid (vkconfig shows it as such).
    pub debug: bool,
}

const EXTENSION_MODES: &[Flag] = &[
    Flag { key: "auto", label: "Auto", description: "Emulate only when the driver lacks the extension (client quirks may change this default: see the README)." },
    Flag { key: "force", label: "Force", description: "Emulate even when the driver supports the extension." },
    Flag { key: "off", label: "Off", description: "Do not advertise or emulate the extension." },
];

const FEATURE_MODES: &[Flag] = &[
    Flag { key: "auto", label: "Auto", description: "Emulate only when the driver lacks the feature." },
    Flag { key: "force", label: "Force", description: "Emulate even when the driver supports the feature." },
    Flag { key: "off", label: "Off", description: "Do not report or emulate the feature beyond what the driver has." },
];

macro_rules! feature {
    ($key:literal, $label:literal, $what:literal) => {
        Spec {
            key: $key,
            label: $label,
            description: concat!("The ", $label, " feature, ", $what, ": ", "auto: emulate only when the driver lacks the feature; force: always emulate (shaders declaring the capability are rewritten into 32-bit accesses); off: never touch it."),
            value: Value::Enum(FEATURE_MODES),
            default: "auto",
            debug: false,
        }
    };
}

/// Every setting, in the order the manifests and the README list them.
pub static SPECS: &[Spec] = &[
    Spec {
        key: "force_enable",
        label: "Force emulation",
        description: "Emulate every supported extension and 8/16-bit storage feature even where the driver implements it natively (for testing). A per-extension or per-feature 'off' still wins.",
        value: Value::Bool,
        default: "false",
        debug: true,
    },
    Spec {
        key: "raw_access_chains",
        label: "VK_NV_raw_access_chains",
        description: "auto: emulate only when the driver lacks VK_NV_raw_access_chains (not for clients whose quirk says otherwise, e.g. vkd3d-proton where minStorageBufferOffsetAlignment > 4); force: always emulate; off: never touch it.",
        value: Value::Enum(EXTENSION_MODES),
        default: "auto",
        debug: false,
    },
    Spec {
        key: "image_view_handle",
        label: "VK_NVX_image_view_handle",
        description: "Bindless textures: auto: emulate VK_NVX_image_view_handle (handles index a layer-owned descriptor table) only when the driver lacks it; force: always emulate; off: never touch it.",
        value: Value::Enum(EXTENSION_MODES),
        default: "auto",
        debug: false,
    },
    Spec {
        key: "buffer_device_address",
        label: "VK_KHR_buffer_device_address",
        description: "Buffer device addresses: auto: emulate VK_KHR_buffer_device_address and bufferDeviceAddress (addresses name slots of a storage-buffer array in the layer-owned descriptor table) only when the driver lacks it; force: always emulate (the driver never sees the feature); off: never touch it.",
        value: Value::Enum(EXTENSION_MODES),
        default: "auto",
        debug: false,
    },
    feature!("storage_buffer_16bit_access", "storageBuffer16BitAccess", "16-bit members of storage buffers (SPIR-V StorageBuffer16BitAccess)"),
    feature!("uniform_and_storage_buffer_16bit_access", "uniformAndStorageBuffer16BitAccess", "16-bit members of uniform and storage buffers (UniformAndStorageBuffer16BitAccess)"),
    feature!("storage_push_constant_16", "storagePushConstant16", "16-bit push-constant members (StoragePushConstant16)"),
    feature!("storage_input_output_16", "storageInputOutput16", "16-bit shader inputs and outputs (StorageInputOutput16)"),
    feature!("storage_buffer_8bit_access", "storageBuffer8BitAccess", "8-bit members of storage buffers (StorageBuffer8BitAccess)"),
    feature!("uniform_and_storage_buffer_8bit_access", "uniformAndStorageBuffer8BitAccess", "8-bit members of uniform and storage buffers (UniformAndStorageBuffer8BitAccess)"),
    feature!("storage_push_constant_8", "storagePushConstant8", "8-bit push-constant members (StoragePushConstant8)"),
    Spec {
        key: "log_level",
        label: "Log level",
        description: "Messages up to this level are written ('[polyfill] LEVEL: ...' lines) and reach the application's debug messengers.",
        value: Value::Enum(&[
            Flag { key: "error", label: "Error", description: "Only failures." },
            Flag { key: "warn", label: "Warning", description: "Failures and the warnings a user should act on (e.g. unknown settings)." },
            Flag { key: "info", label: "Info", description: "Plus one line per decision: per-device emulation status, each rewritten module." },
            Flag { key: "debug", label: "Debug", description: "Plus pass-through decisions and rewrite options." },
        ]),
        default: "warn",
        debug: false,
    },
    Spec {
        key: "log_file",
        label: "Log file",
        description: "Append log lines to this file instead of stderr.",
        value: Value::SaveFile,
        default: "",
        debug: false,
    },
    Spec {
        key: "duplicate_message_limit",
        label: "Duplicate message limit",
        description: "How many messages of one kind (message ID) each debug messenger of an instance gets; the last one says that the kind is now suppressed. 0: unlimited. The text log is not limited.",
        value: Value::Uint { min: 0, max: u32::MAX },
        default: "10",
        debug: false,
    },
    Spec {
        key: "rewrite_cache_mb",
        label: "Rewrite cache (MiB)",
        description: "Rewrites kept per device, in MiB, for code that comes again (the same module created twice, or stages given inline to many pipelines): a repeat costs a lookup and a copy instead of a rewrite. Least recently used out first; 0: off.",
        value: Value::Uint { min: 0, max: super::REWRITE_CACHE_MAX_MB },
        default: "64",
        debug: false,
    },
    Spec {
        key: "dump_shaders_dir",
        label: "Dump shaders to folder",
        description: "Write <hash>.before.spv and <hash>.after.spv for every rewritten module (hash = FNV-1a 64 of the input, 16 hex digits).",
        value: Value::SaveFolder,
        default: "",
        debug: true,
    },
    Spec {
        key: "debug_oob_poison",
        label: "Out-of-bounds poison byte",
        description: "Debug aid: out-of-bounds loads caught by the emulated robustness checks return this byte pattern (e.g. 0xAB) instead of zero. With buffer-device-address emulation it also keeps the lowering's own bounds checks (robustBufferAccess2 is not turned on for them).",
        value: Value::String,
        default: "",
        debug: true,
    },
    Spec {
        key: "debug_inject_panic",
        label: "Inject panic in hook",
        description: "Testing aid: the named hook (e.g. vkCreateShaderModule) panics deliberately to prove the layer turns panics into error results.",
        value: Value::String,
        default: "",
        debug: true,
    },
    Spec {
        key: "debug_target",
        label: "Rewrite target",
        description: "Testing aid: which device features the shader rewrite may use. device: the features enabled on the device; core: pretend the device lacks 8/16-bit storage, Int8/16/64, nullDescriptor and robustBufferAccess2, to exercise the word-granular bounds checks, the atomic sub-word stores, the descriptor table's filler buffer and the buffer-device-address lowering's own bounds checks.",
        value: Value::Enum(&[
            Flag { key: "device", label: "Device", description: "Use the features enabled on the device." },
            Flag { key: "core", label: "Core", description: "Use only what Vulkan 1.0 guarantees: bounds to the 4-byte word, 8/16-bit stores as atomic and/or pairs, no null descriptors in the descriptor table, no robustBufferAccess2." },
        ]),
        default: "device",
        debug: true,
    },
];

/// A vkconfig preset: a named set of values.
#[derive(Debug)]
pub struct Preset {
    pub label: &'static str,
    pub description: &'static str,
    pub settings: &'static [(&'static str, &'static str)],
}

pub static PRESETS: &[Preset] = &[
    Preset {
        label: "vkd3d-proton on non-NVIDIA drivers",
        description: "vkd3d-proton keeps its SSBO offset-buffer path (no raw access chains: they ignore the offset buffer where minStorageBufferOffsetAlignment > 4) and gets no NVX image view handles (it uses them only for CUDA/NVAPI interop); 16-bit I/O and the other emulations stay automatic.",
        settings: &[("raw_access_chains", "off"), ("image_view_handle", "off")],
    },
    Preset {
        label: "Force lowering on NVIDIA",
        description: "Rewrite raw access chains into core SPIR-V even where the driver has VK_NV_raw_access_chains (to work around driver bugs, or to compare native and emulated results).",
        settings: &[("raw_access_chains", "force")],
    },
];

/// The setting called `key`.
pub fn find(key: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.key == key)
}
