//! SPV_NV_bindless_texture → core SPIR-V on a layer-owned descriptor table ([`BindlessTable`]).
//!
//! A bindless image, sampler or sampled image is an integer handle (image slot in bits 0..20,
//! sampler slot in bits 20..32 of its low word). The lowering keeps it one:
//!
//! 1. `handles`: which values come from handles (OpConvertUTo*NV, loads from Function/Private
//!    variables and buffer members, and what flows from them through OpPhi, OpSelect, composites,
//!    copies and calls) and which from ordinary descriptors (loads from UniformConstant), by a
//!    fixed point over the whole module. Handle values, and the memory, members and parameters
//!    that hold them, are retyped to the handle integer type (u32 under addressing mode 32; u64
//!    or uvec2 under mode 64, 8 bytes like the opaque type was in explicit layouts).
//! 2. `materialize`: only where an image instruction consumes such a value does it become a
//!    descriptor: an access chain into an alias array of the table with the slot kept inside
//!    it (`materialize::index`), an OpLoad, and an OpSampledImage where a sampled image is
//!    needed, all NonUniform and in the consumer's block (core SPIR-V consumes OpSampledImage
//!    results in their own block).
//! 3. `table`: the alias arrays (one UniformConstant variable per image type, one for samplers,
//!    on the table's set and bindings), the descriptor-indexing capabilities, and the entry
//!    points' interface lists.
//! 4. The extension's capability, OpExtension, addressing mode and decorations go, and so do the
//!    types nothing uses any more (a sampled image of a storage image, which Slang declares, is
//!    invalid in core SPIR-V).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::builder::sc::UNIFORM_CONSTANT;
use crate::builder::{cap, deco, Builder, Emitter};
use crate::error::RewriteError;
use crate::module::{op, opcode_name, Function, Inst, Module};
use crate::ops;
use crate::stats::Stats;
use crate::target::{BindlessTable, Options};

use super::util::{add_to_interfaces, forget_ids, merge_pointer_types, sweep_dead_globals};

mod handles;
mod materialize;
mod table;

use handles::{Repr, Types};
use table::Table;

const CAP_BINDLESS: u32 = crate::scan::CAP_BINDLESS_TEXTURE_NV;
/// Decorations BindlessSamplerNV, BindlessImageNV, BoundSamplerNV, BoundImageNV.
const BINDLESS_DECORATIONS: std::ops::RangeInclusive<u32> = 5398..=5401;

/// The extension's instructions (SPV_NV_bindless_texture "Token Number Assignments").
const CONVERT_U_TO_IMAGE: u32 = 5391;
const CONVERT_U_TO_SAMPLER: u32 = 5392;
const CONVERT_IMAGE_TO_U: u32 = 5393;
const CONVERT_SAMPLER_TO_U: u32 = 5394;
const CONVERT_U_TO_SAMPLED_IMAGE: u32 = 5395;
const CONVERT_SAMPLED_IMAGE_TO_U: u32 = 5396;

pub fn run(m: &mut Module, table: &BindlessTable, _options: &Options, stats: &mut Stats) -> Result<(), RewriteError> {
    let width = addressing_width(m)?;
    let words_in = m.word_count();
    let mut functions = std::mem::take(&mut m.functions);
    let result = lower(m, &mut functions, table, width, stats);
    m.functions = functions;
    let mut dropped = result?;
    // Handles decoded again at every use (the same slot, the same descriptor loaded): once,
    // where the repeats more than doubled the module. Below that the cleanup buys only words:
    // drivers merge the repeats themselves (on the BDA kernels it left lavapipe's pipeline
    // creation within the spread), and it costs a quarter of a small module's rewrite and
    // 20-65 % more on the first call.
    if m.word_count() > 2 * words_in {
        dropped.extend(super::tidy::tidy(m, Default::default()));
    }
    remove_extension(m);
    forget_ids(m, &dropped);
    // retype_globals kept the pointer types' ids (the lowering tells handle memory by them).
    merge_pointer_types(m);
    // Old function types (with opaque parameters) and opaque types only handles used.
    sweep_dead_globals(m, |g| matches!(g.op, op::TYPE_IMAGE | op::TYPE_SAMPLER | op::TYPE_SAMPLED_IMAGE | op::TYPE_FUNCTION));
    Ok(())
}

/// Bit width of OpSamplerImageAddressingModeNV (32 or 64); 64 when absent (what GLSL's
/// ARB_bindless_texture and Slang use).
fn addressing_width(m: &Module) -> Result<u32, RewriteError> {
    match m.memory_model.iter().find(|i| i.op == op::SAMPLER_IMAGE_ADDRESSING_MODE_NV).map(|i| i.ops.first().copied()) {
        None => Ok(64),
        Some(Some(w @ (32 | 64))) => Ok(w),
        Some(w) => Err(RewriteError::malformed(0, format!("OpSamplerImageAddressingModeNV {w:?}: the bit width must be 32 or 64"))),
    }
}

/// Returns the ids whose definitions were dropped (their names and decorations must go).
fn lower(m: &mut Module, functions: &mut [Function], cfg: &BindlessTable, width: u32, stats: &mut Stats) -> Result<HashSet<u32>, RewriteError> {
    let types = Types::read(m)?;
    // Types of every id before anything is retyped.
    let mut ty_of: HashMap<u32, u32> = m.globals.iter().filter(|g| g.id != 0).map(|g| (g.id, g.ty)).collect();
    for f in functions.iter() {
        for i in f.params.iter().chain(f.blocks.iter().flat_map(|b| b.insts.iter())) {
            if i.id != 0 {
                ty_of.insert(i.id, i.ty);
            }
        }
    }
    let kinds = handles::analyze(&types, &ty_of, functions)?;
    let repr = Repr::declare(m, width);
    handles::retype_globals(m, &types, repr.ty, stats);
    let mut b = Builder::new(m);
    let mut table = Table::new(*cfg, &b);
    let dropped = materialize::rewrite_functions(&mut b, functions, &types, &kinds, &ty_of, repr, &mut table, stats)?;
    table.finish(&mut b, functions);
    Ok(dropped)
}

/// Drops the capability, the OpExtension, the addressing mode and the decorations (also as
/// OpMemberDecorate / OpDecorateId).
fn remove_extension(m: &mut Module) {
    m.remove_capability(CAP_BINDLESS);
    m.remove_extension("SPV_NV_bindless_texture");
    m.memory_model.retain(|i| i.op != op::SAMPLER_IMAGE_ADDRESSING_MODE_NV);
    m.annotations.retain(|a| {
        let d = match a.op {
            op::DECORATE | op::DECORATE_ID => a.ops.get(1),
            op::MEMBER_DECORATE => a.ops.get(2),
            _ => None,
        };
        !d.is_some_and(|d| BINDLESS_DECORATIONS.contains(d))
    });
}

/// `%id = OpName` (or `OpName %first-operand` for instructions without a result), for errors.
pub(crate) fn describe(inst: &Inst) -> String {
    if inst.id != 0 {
        format!("%{} = {}", inst.id, opcode_name(inst.op))
    } else {
        format!("{} %{}", opcode_name(inst.op), inst.ops.first().copied().unwrap_or(0))
    }
}
