//! The alias variables: arrays of the table's descriptors, typed as the module needs them.
//! Vulkan lets several variables share a set and binding when each type is compatible with the
//! binding's descriptor type (aliased descriptor variables, as in the "Shader Resource
//! Interface" chapter), so every image type gets its own array on the sampled- or storage-image
//! binding.
use crate::builder::cap;
use std::collections::{BTreeMap, BTreeSet};

use super::*;

const CAP_SAMPLED_IMAGE_ARRAY_NON_UNIFORM: u32 = 5307;
const CAP_STORAGE_IMAGE_ARRAY_NON_UNIFORM: u32 = 5309;

/// The three arrays of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Array {
    SampledImages,
    StorageImages,
    Samplers,
}

pub(super) struct Table {
    cfg: BindlessTable,
    /// (array, element type) → alias variable.
    vars: BTreeMap<(Array, u32), u32>,
    /// Function → alias variables it loads from (for the entry points' interfaces).
    used_by: BTreeMap<u32, BTreeSet<u32>>,
    /// The module's OpTypeSampler, once found or declared.
    sampler_ty: Option<u32>,
}

impl Table {
    pub fn new(cfg: BindlessTable, b: &Builder) -> Self {
        let sampler_ty = b.m.globals.iter().find(|g| g.op == op::TYPE_SAMPLER).map(|g| g.id);
        Table { cfg, vars: BTreeMap::new(), used_by: BTreeMap::new(), sampler_ty }
    }

    /// Descriptor count of an array (at least 1: a zero-length array is invalid).
    pub fn count(&self, a: Array) -> u32 {
        let c = match a {
            Array::SampledImages => self.cfg.sampled_images_count,
            Array::StorageImages => self.cfg.storage_images_count,
            Array::Samplers => self.cfg.samplers_count,
        };
        c.max(1)
    }

    fn binding(&self, a: Array) -> u32 {
        match a {
            Array::SampledImages => self.cfg.sampled_images_binding,
            Array::StorageImages => self.cfg.storage_images_binding,
            Array::Samplers => self.cfg.samplers_binding,
        }
    }

    pub fn sampler_ty(&mut self, b: &mut Builder) -> u32 {
        if let Some(t) = self.sampler_ty {
            return t;
        }
        let id = b.id();
        b.add_global(Inst::new(op::TYPE_SAMPLER, 0, id, ops![]));
        self.sampler_ty = Some(id);
        id
    }

    /// The alias array of `elem` descriptors in `a`, declared on first use; `function` uses it.
    pub fn var(&mut self, b: &mut Builder, a: Array, elem: u32, function: u32) -> u32 {
        let var = match self.vars.get(&(a, elem)) {
            Some(&v) => v,
            None => {
                let len = b.c_u32(self.count(a));
                let arr = b.id();
                b.add_global(Inst::new(op::TYPE_ARRAY, 0, arr, ops![elem, len]));
                let ptr = b.t_ptr(UNIFORM_CONSTANT, arr);
                let v = b.id();
                b.add_global(Inst::new(op::VARIABLE, ptr, v, ops![UNIFORM_CONSTANT]));
                b.decorate(v, deco::DESCRIPTOR_SET, &[self.cfg.set]);
                b.decorate(v, deco::BINDING, &[self.binding(a)]);
                self.vars.insert((a, elem), v);
                v
            }
        };
        self.used_by.entry(function).or_default().insert(var);
        var
    }

    /// Capabilities for non-uniform indexing of the arrays used, and the alias variables in the
    /// interface of every entry point whose call tree uses them (SPIR-V ≥ 1.4 lists every
    /// global variable there, SPIR-V spec "OpEntryPoint").
    pub fn finish(self, b: &mut Builder, functions: &[Function]) {
        if self.vars.is_empty() {
            return;
        }
        b.m.add_capability(cap::SHADER_NON_UNIFORM);
        for &(a, _) in self.vars.keys() {
            b.m.add_capability(match a {
                Array::StorageImages => CAP_STORAGE_IMAGE_ARRAY_NON_UNIFORM,
                Array::SampledImages | Array::Samplers => CAP_SAMPLED_IMAGE_ARRAY_NON_UNIFORM,
            });
        }
        if b.m.version() < (1, 5) {
            b.m.add_extension("SPV_EXT_descriptor_indexing");
        }
        add_to_interfaces(b.m, functions, &self.used_by);
    }
}
