//! `OpImageTexelPointer` on bindless images (image atomics through handles).
//!
//! Two input shapes reach it:
//! - the extension's memory shape: Image is a pointer to Function/Private memory or a block
//!   member holding the image, i.e. a handle after retyping;
//! - Slang's value shape (`-capability spvBindlessTextureNV`, `InterlockedAdd` on a
//!   `RWTexture2D<uint>.Handle`): Image is an image *value* from OpConvertUTo(Sampled)ImageNV /
//!   OpImage, which core SPIR-V forbids ("Image must have a type of OpTypePointer with Type
//!   OpTypeImage", spec OpImageTexelPointer).
//!
//! Both become a texel pointer into the table's storage-image alias array at the handle's slot
//! (NonUniform). Atomics need a format: VUID-StandaloneSpirv-OpImageTexelPointer-04658 allows
//! R64i, R64ui, R32f, R32i and R32ui only, so an `Unknown` format is inferred from the sampled
//! type (the view of a storage image used with atomics has exactly that format in Vulkan).
use super::*;

/// Image Format enumerants (SPIR-V spec 3.11).
const FORMAT_UNKNOWN: u32 = 0;
const FORMAT_R32F: u32 = 3;
const FORMAT_R32I: u32 = 24;
const FORMAT_R32UI: u32 = 33;
const FORMAT_R64UI: u32 = 40;
const FORMAT_R64I: u32 = 41;
/// Capability Int64ImageEXT (SPV_EXT_shader_image_int64): 64-bit sampled types and formats.
const CAP_INT64_IMAGE: u32 = 5016;
/// Index of the Image Format operand of OpTypeImage (after Sampled Type, Dim, Depth, Arrayed,
/// MS, Sampled).
const IMAGE_FORMAT_OPERAND: usize = 6;

impl Ctx<'_> {
    /// Points `inst` (an OpImageTexelPointer) at a descriptor when its Image comes from a
    /// handle; leaves pointers to ordinary descriptors alone.
    pub(super) fn texel_pointer(&mut self, e: &mut Emitter, b: &mut Builder, inst: &mut Inst) -> Result<(), RewriteError> {
        let x = inst.ops[0];
        let xt = self.ty(x);
        let (h, image) = if let Some(image) = self.types.handle_memory(xt) {
            // The handle is in memory: read it.
            (e.op(b, op::LOAD, self.repr.ty, ops![x]), image)
        } else if self.types.leaf.contains_key(&xt) {
            match self.kind(x) {
                HANDLE => (x, xt),
                // An image value loaded from an ordinary descriptor: its pointer is what the
                // instruction takes.
                BOUND if self.image_loads.contains_key(&x) => {
                    inst.ops[0] = self.image_loads[&x];
                    return Ok(());
                }
                _ => {
                    return Err(RewriteError::unsupported(
                        describe(inst),
                        format!("its Image %{x} is an image value that is neither from a bindless handle nor loaded from a descriptor variable; core SPIR-V needs a pointer to the image here"),
                    ))
                }
            }
        } else {
            return Ok(()); // a pointer to an ordinary descriptor
        };
        let elem = self.atomic_image_type(b, inst, image)?;
        inst.ops[0] = self.element(e, b, Array::StorageImages, elem, h);
        // Atomics through it access a non-uniform descriptor (Vulkan "Descriptor indexing").
        b.decorate(inst.id, deco::NON_UNIFORM, &[]);
        self.stats.bindless_descriptor_loads += 1;
        Ok(())
    }

    /// The storage image type the alias array for atomics on `ty` has: `ty` itself when its
    /// format allows atomics, else `ty` with the format its sampled type implies.
    fn atomic_image_type(&mut self, b: &mut Builder, inst: &Inst, ty: u32) -> Result<u32, RewriteError> {
        let sampled = self.table_image(inst, ty)?;
        if sampled != 2 {
            return Err(RewriteError::unsupported(
                describe(inst),
                format!("image %{ty} is not a storage image (Sampled {sampled}); texel pointers and atomics need Sampled 2"),
            ));
        }
        if let Some(&t) = self.atomic_types.get(&ty) {
            return Ok(t);
        }
        let Some(decl) = b.global(ty).cloned() else {
            return Err(RewriteError::malformed(0, format!("{}: image type %{ty} is not declared", describe(inst))));
        };
        let format = match decl.ops[IMAGE_FORMAT_OPERAND] {
            FORMAT_R32F | FORMAT_R32I | FORMAT_R32UI | FORMAT_R64UI | FORMAT_R64I => return Ok(ty),
            FORMAT_UNKNOWN => self.format_for(b, inst, decl.ops[0])?,
            other => {
                return Err(RewriteError::unsupported(
                    describe(inst),
                    format!("image %{ty} has format {other}; atomics need R32ui, R32i, R32f, R64ui or R64i (VUID-StandaloneSpirv-OpImageTexelPointer-04658)"),
                ))
            }
        };
        let mut ops = decl.ops.clone();
        ops[IMAGE_FORMAT_OPERAND] = format;
        // Non-aggregate types are unique (SPIR-V spec 2.8): reuse an existing declaration.
        let t = match b.m.globals.iter().find(|g| g.op == op::TYPE_IMAGE && g.ops == ops) {
            Some(g) => g.id,
            None => {
                let id = b.id();
                b.add_global(Inst::new(op::TYPE_IMAGE, 0, id, ops))
            }
        };
        self.atomic_types.insert(ty, t);
        Ok(t)
    }

    /// The atomic-capable format for sampled type `sampled`.
    fn format_for(&self, b: &Builder, inst: &Inst, sampled: u32) -> Result<u32, RewriteError> {
        let s = b.scalar_vec(sampled).filter(|s| s.n == 1);
        match s.map(|s| (s.float, s.width, s.signed)) {
            Some((true, 32, _)) => Ok(FORMAT_R32F),
            Some((false, 32, signed)) => Ok(if signed { FORMAT_R32I } else { FORMAT_R32UI }),
            Some((false, 64, signed)) if b.m.has_capability(CAP_INT64_IMAGE) => Ok(if signed { FORMAT_R64I } else { FORMAT_R64UI }),
            Some((false, 64, _)) => Err(RewriteError::unsupported(describe(inst), "a 64-bit image atomic in a module without the Int64ImageEXT capability")),
            _ => Err(RewriteError::unsupported(
                describe(inst),
                format!("the image's sampled type %{sampled} has no format that allows atomics (32-bit int or float, 64-bit int)"),
            )),
        }
    }
}
