//! The command line, as one clap definition: parsing, `--help`, the man pages (`manual`) and the
//! shell completions (`completions`) all come from it.
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use shader_rewrite::named_options::{self, NAMED_OPTIONS};
use shader_rewrite::{Options, SmallStorage, Target};

pub const EXIT_STATUS: &str = "\
Exit status:
  0  success (also --help and --version)
  1  a module cannot be rewritten or is not valid SPIR-V, or a file cannot be read or written
  2  usage error: an unknown option or subcommand, a missing or extra argument, a bad value";

#[derive(Parser)]
#[command(
    name = "spirv-polyfill",
    version,
    about = "Rewrite SPIR-V modules the way the vkpolyfill layer does, offline",
    long_about = "Rewrite SPIR-V modules the way the vkpolyfill Vulkan layer \
        (VK_LAYER_POLYFILL_extensions) does: lower OpRawAccessChainNV (SPV_NV_raw_access_chains), \
        the 8/16-bit storage capabilities a target lacks (SPV_KHR_16bit_storage, \
        SPV_KHR_8bit_storage), bindless textures (SPV_NV_bindless_texture) onto a descriptor \
        table, and PhysicalStorageBuffer pointers (SPV_KHR_physical_storage_buffer) onto a table \
        of storage buffers, into core SPIR-V. A FILE argument of `-` is standard input or output. \
        Errors name the file and, where the input has one, the instruction (its index after the \
        header, its first word and its opcode).",
    after_help = EXIT_STATUS,
    propagate_version = true,
    subcommand_required = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Lower the emulated extensions of a module for a target
    #[command(after_help = EXIT_STATUS)]
    Rewrite(RewriteArgs),
    /// Say which emulated features modules use, and which device features the rewritten module
    /// needs
    #[command(after_help = EXIT_STATUS)]
    Scan(ScanArgs),
    /// Print what a target description holds: every named option's value, what is lowered and
    /// how
    Targets(TargetArgs),
    /// Print a shell completion script to standard output
    Completions {
        /// The shell
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) to standard output, or write one page per command into a
    /// directory
    Manual {
        /// Write spirv-polyfill.1 and spirv-polyfill-<command>.1 into this directory
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
}

#[derive(Args)]
pub struct RewriteArgs {
    /// The module (.spv, either byte order; `-`: standard input)
    #[arg(value_name = "FILE")]
    pub input: String,
    /// Where to write the rewritten module (`-`: standard output)
    #[arg(short, long, value_name = "FILE")]
    pub output: String,
    /// Print what was lowered, the sizes and the time to standard error
    #[arg(long)]
    pub stats: bool,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Args)]
pub struct ScanArgs {
    /// The modules (`-`: standard input)
    #[arg(value_name = "FILE", required = true)]
    pub inputs: Vec<String>,
    #[command(flatten)]
    pub target: TargetArgs,
}

/// A starting point for the target's features.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Preset {
    /// Every optional feature the lowering can use
    All,
    /// Only what Vulkan 1.0 guarantees (no 8/16-bit storage, no Int8/16/64)
    Core,
    /// What the layer finds on lavapipe: every optional feature but storageInputOutput16, and
    /// the three --quirk-* flags
    Lavapipe,
}

/// The target device and what to lower for it. Flags apply in the order listed; `--set`
/// assignments come last.
#[derive(Args)]
pub struct TargetArgs {
    /// Start from this preset
    #[arg(long, value_enum, default_value_t = Preset::All, help_heading = "Target")]
    pub target: Preset,
    /// The target lacks storageBuffer8BitAccess, uniformAndStorageBuffer8BitAccess and
    /// storagePushConstant8 (their capabilities are lowered to 32-bit accesses)
    #[arg(long = "no-8bit-storage", help_heading = "Target")]
    pub no_8bit_storage: bool,
    /// The target lacks the four 16-bit storage features (lowered to 32-bit accesses)
    #[arg(long = "no-16bit-storage", help_heading = "Target")]
    pub no_16bit_storage: bool,
    /// The target lacks storageInputOutput16 only (lavapipe, NVIDIA, NVK, ...)
    #[arg(long = "no-16bit-io", help_heading = "Target")]
    pub no_16bit_io: bool,
    /// The target lacks shaderInt64 (buffer device addresses are then carried as uvec2, not u64)
    #[arg(long = "no-int64", help_heading = "Target")]
    pub no_int64: bool,
    /// The target lacks shaderFloat16 (f32 -> f16 roundings of 16-bit storage are then made in
    /// integer code, not with the driver's conversion)
    #[arg(long = "no-float16", help_heading = "Target")]
    pub no_float16: bool,
    /// The target returns one OpArrayLength per subgroup for non-uniform descriptor indices
    /// (lavapipe): take such lengths in a subgroup loop
    #[arg(long, help_heading = "Target")]
    pub quirk_nonuniform_array_length: bool,
    /// The target expands each non-uniformly indexed storage-buffer access per lane (lavapipe):
    /// loops holding lowered buffer-device-address accesses are marked DontUnroll
    #[arg(long, help_heading = "Target")]
    pub quirk_nonuniform_access_per_lane: bool,
    /// The target checks each component of a vector storage-buffer access on its own
    /// (lavapipe): per-component raw-chain accesses of 32/64-bit components leave their bounds
    /// checks to it as whole vectors too (with robustBufferAccess2 to the byte)
    #[arg(long, help_heading = "Target")]
    pub quirk_robust_vector_components: bool,
    /// The target does not have robustBufferAccess2 enabled (or lets pipelines opt out of it):
    /// lowered buffer-device-address accesses check their bounds themselves
    #[arg(long = "no-robust-buffer-access2", help_heading = "Target")]
    pub no_robust_buffer_access2: bool,
    /// The target's robustStorageBufferAccessSizeAlignment is 4, not 1 (its robustBufferAccess2
    /// rounds storage-buffer ranges up to whole words): per-component raw-chain accesses check
    /// their bounds themselves
    #[arg(long = "robust-storage-alignment-4", help_heading = "Target")]
    pub robust_storage_alignment_4: bool,
    /// Leave OpRawAccessChainNV alone
    #[arg(long, help_heading = "Lowering")]
    pub no_raw_access_chains: bool,
    /// Out-of-bounds loads caught by the emulated robustness return this byte (a debug aid)
    #[arg(long, value_name = "BYTE", value_parser = option_value("oob_poison"), help_heading = "Lowering")]
    pub oob_poison: Option<u32>,
    /// Lower SPV_NV_bindless_texture onto a descriptor table in this set: sampled images,
    /// storage images and samplers at bindings 0, 1, 2; a handle holds the image slot in bits
    /// 0..20 and the sampler slot in bits 20..32
    #[arg(long, value_name = "SET", value_parser = option_value("bindless_set"), help_heading = "Bindless textures")]
    pub bindless_set: Option<u32>,
    /// Descriptor counts of the table's three arrays (default 65536,65536,4096)
    #[arg(long, value_name = "S,T,P", value_parser = triple, help_heading = "Bindless textures")]
    pub bindless_counts: Option<[u32; 3]>,
    /// Lower PhysicalStorageBuffer pointers onto a table of storage buffers in this set (as
    /// the layer does for devices without bufferDeviceAddress): an address is
    /// 0xD3 << 56 | slot << 32 | (offset ^ 0x80000000), offsets below 2^31
    #[arg(long, value_name = "SET", value_parser = option_value("bda_set"), help_heading = "Buffer device addresses")]
    pub bda_set: Option<u32>,
    /// Binding of the table's storage-buffer array (default 3)
    #[arg(long, value_name = "BINDING", value_parser = option_value("bda_binding"), help_heading = "Buffer device addresses")]
    pub bda_binding: Option<u32>,
    /// Descriptor count of the storage-buffer array, the slots an address can name (default 65536)
    #[arg(long, value_name = "COUNT", value_parser = option_value("bda_count"), help_heading = "Buffer device addresses")]
    pub bda_count: Option<u32>,
    /// Set a named option (the C API's names; see `spirv-polyfill targets`), after the flags
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = assignment, long_help = set_long_help(), help_heading = "Named options")]
    pub assignments: Vec<String>,
}

impl TargetArgs {
    /// The rewrite options these arguments describe.
    pub fn options(&self) -> Options {
        let mut o = Options {
            target: match self.target {
                Preset::All => Target::all(),
                Preset::Core => Target::core(),
                Preset::Lavapipe => Target::lavapipe(),
            },
            ..Options::default()
        };
        let t = &mut o.target;
        if self.no_8bit_storage {
            (t.storage_buffer_8bit, t.uniform_and_storage_buffer_8bit, t.storage_push_constant_8) = (false, false, false);
        }
        if self.no_16bit_storage {
            (t.storage_buffer_16bit, t.uniform_and_storage_buffer_16bit, t.storage_push_constant_16) = (false, false, false);
        }
        t.storage_input_output_16 &= !(self.no_16bit_storage || self.no_16bit_io);
        t.int64 &= !self.no_int64;
        t.float16 &= !self.no_float16;
        t.nonuniform_array_length_broken |= self.quirk_nonuniform_array_length;
        t.nonuniform_access_per_lane |= self.quirk_nonuniform_access_per_lane;
        t.robust_vector_components |= self.quirk_robust_vector_components;
        t.robust_buffer_access2 &= !self.no_robust_buffer_access2;
        t.robust_storage_byte_exact &= !self.robust_storage_alignment_4;
        o.emulate_raw_access_chains = !self.no_raw_access_chains;
        let counts = self.bindless_counts.map(|[s, t, p]| [("bindless_sampled_images_count", s), ("bindless_storage_images_count", t), ("bindless_samplers_count", p)]);
        let named = [("oob_poison", self.oob_poison), ("bindless_set", self.bindless_set), ("bda_set", self.bda_set), ("bda_binding", self.bda_binding), ("bda_count", self.bda_count)]
            .into_iter()
            .filter_map(|(name, v)| Some((name, v?)))
            .chain(counts.into_iter().flatten());
        for (name, value) in named {
            // Checked by the value parsers.
            named_options::find(name).expect("a named option").set(&mut o, value).expect("checked by the parser");
        }
        for a in &self.assignments {
            named_options::set_from_str(&mut o, a).expect("checked by the parser");
        }
        o.emulate_storage = SmallStorage::missing_from(&o.target);
        o
    }
}

/// A value parser for flag that sets the named option `name`: the table's own parsing and checks.
fn option_value(name: &'static str) -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync + 'static {
    move |s| {
        let option = named_options::find(name).expect("a named option");
        let value = named_options::parse_value(option, s)?;
        option.set(&mut Options::default(), value)?;
        Ok(value)
    }
}

/// `--set NAME=VALUE`, checked against the table.
fn assignment(s: &str) -> Result<String, String> {
    named_options::set_from_str(&mut Options::default(), s)?;
    Ok(s.to_string())
}

/// `S,T,P`: three descriptor counts.
fn triple(s: &str) -> Result<[u32; 3], String> {
    let names = ["bindless_sampled_images_count", "bindless_storage_images_count", "bindless_samplers_count"];
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let [a, b, c] = parts[..] else { return Err(format!("`{s}` is not three counts S,T,P")) };
    let mut out = [0; 3];
    for ((slot, part), name) in out.iter_mut().zip([a, b, c]).zip(names) {
        *slot = option_value(name)(part)?;
    }
    Ok(out)
}

fn set_long_help() -> String {
    let names: Vec<&str> = NAMED_OPTIONS.iter().map(|o| o.name).collect();
    format!(
        "Set a named option, after the flags above: the names the C API's spvpf_options_set_bool and \
         spvpf_options_set_uint take. Bools take 0/1/true/false, numbers decimal or 0x hex. \
         `spirv-polyfill targets` prints what each one means and its value. NAME is one of: {}.",
        names.join(", ")
    )
}
