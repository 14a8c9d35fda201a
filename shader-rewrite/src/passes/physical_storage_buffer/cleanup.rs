//! After the lowering: no trace of physical pointers, and what the table needs declared.
use std::collections::BTreeSet;

use super::*;
use crate::builder::{cap, deco, model};
use crate::byte_address::AliasKind;
use crate::passes::util::{add_to_interfaces, forget_ids, sweep_dead_globals};
use crate::scan::CAP_PHYSICAL_STORAGE_BUFFER_ADDRESSES;

const ADDRESSING_LOGICAL: u32 = 0;
const CAP_STORAGE_BUFFER_ARRAY_NON_UNIFORM_INDEXING: u32 = 5308;
const RESTRICT_POINTER: u32 = 5355;
const ALIASED_POINTER: u32 = 5356;

pub(super) fn finish(m: &mut Module, mut table: Table, addr_values: &HashSet<u32>, elided: &HashSet<u32>) {
    // Access chains only accessed through are not defined: their names and decorations go.
    forget_ids(m, elided);
    // A view whose pointers were all made for nothing (every access takes the word view's
    // pointer with its own, tidy drops the unused ones) is not used by that function.
    for f in m.functions.iter() {
        if let Some(vars) = table.used_by.get_mut(&f.def.id) {
            let named: HashSet<u32> = f.blocks.iter().flat_map(|b| b.insts.iter()).flat_map(|i| i.ops.iter().copied()).filter(|w| vars.contains(w)).collect();
            vars.retain(|v| named.contains(v));
        }
    }
    // Views no access used go (an 8-bit or 16-bit one would need its capability).
    let unused = table.unused_declarations(m);
    m.globals.retain(|g| !unused.contains(&g.id));
    forget_ids(m, &unused);
    let used: BTreeSet<u32> = table.used_by.values().flatten().copied().collect();

    // SPV_KHR_physical_storage_buffer: the capability, the extension (or its EXT twin), the
    // addressing model, and the decorations only pointers to physical pointers may have.
    m.remove_capability(CAP_PHYSICAL_STORAGE_BUFFER_ADDRESSES);
    m.remove_extension("SPV_KHR_physical_storage_buffer");
    m.remove_extension("SPV_EXT_physical_storage_buffer");
    for mm in m.memory_model.iter_mut().filter(|mm| mm.ops.first() == Some(&model::ADDRESSING_PHYSICAL_STORAGE_BUFFER_64)) {
        mm.ops[0] = ADDRESSING_LOGICAL;
    }
    // Restrict/Aliased on an address (a former pointer parameter) no longer apply (SPIR-V spec
    // 2.18.2: they decorate memory object declarations and pointers).
    m.annotations.retain(|a| {
        let restrict_or_aliased = a.op == op::DECORATE && matches!(a.ops.get(1), Some(&19) | Some(&20)) && addr_values.contains(&a.ops[0]);
        let pointer_deco = a.op == op::DECORATE && matches!(a.ops.get(1), Some(&RESTRICT_POINTER) | Some(&ALIASED_POINTER));
        !restrict_or_aliased && !pointer_deco
    });

    if used.is_empty() {
        return;
    }
    // Chains into the table at a dynamically uniform slot are not NonUniform (`Table::uniform_slots`):
    // where none is, the table needs only dynamic indexing (core SPIR-V, a Vulkan feature).
    if m.annotations.iter().any(|a| a.op == op::DECORATE && a.ops.get(1) == Some(&deco::NON_UNIFORM)) {
        m.add_capability(cap::SHADER_NON_UNIFORM);
        m.add_capability(CAP_STORAGE_BUFFER_ARRAY_NON_UNIFORM_INDEXING);
        if m.version() < (1, 5) {
            m.add_extension("SPV_EXT_descriptor_indexing");
        }
    }
    if m.version() < (1, 3) {
        m.add_extension("SPV_KHR_storage_buffer_storage_class");
    }
    for kind in used.iter().filter_map(|&v| table.kind_of(v)) {
        match kind {
            AliasKind::U8 => {
                m.add_capability(cap::STORAGE_BUFFER_8);
                m.add_extension("SPV_KHR_8bit_storage");
            }
            AliasKind::U16 => {
                m.add_capability(cap::STORAGE_BUFFER_16);
                m.add_extension("SPV_KHR_16bit_storage");
            }
            _ => {}
        }
    }
    let functions = std::mem::take(&mut m.functions);
    add_to_interfaces(m, &functions, &table.used_by);
    m.functions = functions;
    // Types, constants and function types nothing uses any more (the views' element types,
    // the pointer types' pointees, the inlined helpers' function types).
    sweep_dead_globals(m, |g| g.op == op::TYPE_FUNCTION);
}
