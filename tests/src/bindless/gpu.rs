//! GPU objects for the bindless tests: a [`Scope`] owns everything it creates (buffers,
//! images, views, samplers, layouts, pipelines, ...) and destroys it in reverse order on drop.
//! Every call goes through the context's device, i.e. through our layer when it is enabled.

use crate::vk::Context;
use ash::vk;
use std::ffi::CString;
use std::time::Duration;

/// A host-visible, coherent, persistently mapped buffer (with a device address where the
/// device has bufferDeviceAddress).
#[derive(Debug, Clone, Copy)]
pub struct Buf {
    pub buffer: vk::Buffer,
    pub ptr: *mut u8,
    pub size: usize,
    /// 0 without bufferDeviceAddress.
    pub address: u64,
}

impl Buf {
    pub fn write(&self, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= self.size, "write {}+{} past {}", offset, data.len(), self.size);
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(offset), data.len()) };
    }
    pub fn fill(&self, byte: u8) {
        unsafe { std::ptr::write_bytes(self.ptr, byte, self.size) };
    }
    pub fn read(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.size];
        unsafe { std::ptr::copy_nonoverlapping(self.ptr, v.as_mut_ptr(), self.size) };
        v
    }
    pub fn whole(&self, binding: u32, ty: vk::DescriptorType) -> Write {
        Write::Buffer { binding, ty, buffer: self.buffer, offset: 0, range: vk::WHOLE_SIZE }
    }
}

/// A 2D image with one view.
#[derive(Debug, Clone, Copy)]
pub struct Img {
    pub image: vk::Image,
    pub view: vk::ImageView,
    pub format: vk::Format,
    pub width: u32,
    pub height: u32,
    /// Layout the image was left in.
    pub layout: vk::ImageLayout,
}

/// An RGBA8 color attachment left in TRANSFER_SRC_OPTIMAL, with its render pass and framebuffer.
#[derive(Debug, Clone, Copy)]
pub struct ColorTarget {
    pub image: Img,
    pub render_pass: vk::RenderPass,
    pub framebuffer: vk::Framebuffer,
}

impl ColorTarget {
    /// Records `vkCmdBeginRenderPass` over the whole target, cleared to zero.
    ///
    /// # Safety
    /// `cmd` is a command buffer of `d` in the recording state, outside a render pass.
    pub unsafe fn begin(&self, d: &ash::Device, cmd: vk::CommandBuffer) {
        let clear = [vk::ClearValue { color: vk::ClearColorValue { uint32: [0; 4] } }];
        let area = vk::Rect2D { offset: vk::Offset2D { x: 0, y: 0 }, extent: vk::Extent2D { width: self.image.width, height: self.image.height } };
        let rpbi = vk::RenderPassBeginInfo::default().render_pass(self.render_pass).framebuffer(self.framebuffer).render_area(area).clear_values(&clear);
        d.cmd_begin_render_pass(cmd, &rpbi, vk::SubpassContents::INLINE);
    }
}

/// One descriptor write.
#[derive(Debug, Clone, Copy)]
pub enum Write {
    Buffer { binding: u32, ty: vk::DescriptorType, buffer: vk::Buffer, offset: u64, range: u64 },
    Image { binding: u32, element: u32, ty: vk::DescriptorType, view: vk::ImageView, layout: vk::ImageLayout, sampler: vk::Sampler },
}

enum Obj {
    Buffer(vk::Buffer),
    Memory(vk::DeviceMemory),
    Image(vk::Image),
    View(vk::ImageView),
    Sampler(vk::Sampler),
    SetLayout(vk::DescriptorSetLayout),
    PipelineLayout(vk::PipelineLayout),
    Pool(vk::DescriptorPool),
    Pipeline(vk::Pipeline),
    Module(vk::ShaderModule),
    RenderPass(vk::RenderPass),
    Framebuffer(vk::Framebuffer),
    CommandPool(vk::CommandPool),
}

/// Owner of GPU objects (destroyed in reverse creation order on drop, after a device wait).
pub struct Scope<'a> {
    pub ctx: &'a Context,
    objs: Vec<Obj>,
    cmd_pool: vk::CommandPool,
}

fn err(what: &str) -> impl FnOnce(vk::Result) -> String + '_ {
    move |e| format!("{what}: {e:?}")
}

pub const ALL_STAGES: vk::ShaderStageFlags = vk::ShaderStageFlags::from_raw(
    vk::ShaderStageFlags::COMPUTE.as_raw() | vk::ShaderStageFlags::VERTEX.as_raw() | vk::ShaderStageFlags::FRAGMENT.as_raw(),
);

impl<'a> Scope<'a> {
    pub fn new(ctx: &'a Context) -> Result<Scope<'a>, String> {
        let d = ctx.device();
        let cpi = vk::CommandPoolCreateInfo::default().queue_family_index(ctx.queue_family()).flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        let cmd_pool = unsafe { d.create_command_pool(&cpi, None) }.map_err(err("vkCreateCommandPool"))?;
        Ok(Scope { ctx, objs: vec![Obj::CommandPool(cmd_pool)], cmd_pool })
    }

    pub fn device(&self) -> &ash::Device {
        self.ctx.device()
    }

    fn memory_type(&self, bits: u32, want: vk::MemoryPropertyFlags) -> Result<u32, String> {
        let props = unsafe { self.ctx.instance().get_physical_device_memory_properties(self.ctx.physical_device()) };
        (0..props.memory_type_count)
            .find(|&i| bits & (1 << i) != 0 && props.memory_types[i as usize].property_flags.contains(want))
            .ok_or_else(|| format!("no memory type with {want:?} in {bits:#x}"))
    }

    /// A mapped buffer of `size` bytes (zeroed) usable as storage/uniform/transfer (and by
    /// device address where the device has it).
    pub fn buffer(&mut self, size: usize) -> Result<Buf, String> {
        let d = self.ctx.device();
        let bda = self.ctx.features().buffer_device_address;
        let mut usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::UNIFORM_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST
            | vk::BufferUsageFlags::VERTEX_BUFFER;
        if bda {
            usage |= vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS;
        }
        let size = size.max(16);
        let bci = vk::BufferCreateInfo::default().size(size as u64).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE);
        let buffer = unsafe { d.create_buffer(&bci, None) }.map_err(err("vkCreateBuffer"))?;
        self.objs.push(Obj::Buffer(buffer));
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        let mt = self.memory_type(req.memory_type_bits, vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT)?;
        let mut flags = vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let mut mai = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(mt);
        if bda {
            mai = mai.push_next(&mut flags);
        }
        let mem = unsafe { d.allocate_memory(&mai, None) }.map_err(err("vkAllocateMemory"))?;
        self.objs.push(Obj::Memory(mem));
        unsafe { d.bind_buffer_memory(buffer, mem, 0) }.map_err(err("vkBindBufferMemory"))?;
        let ptr = unsafe { d.map_memory(mem, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }.map_err(err("vkMapMemory"))? as *mut u8;
        unsafe { std::ptr::write_bytes(ptr, 0, size) };
        let address = if bda { unsafe { d.get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(buffer)) } } else { 0 };
        Ok(Buf { buffer, ptr, size, address })
    }

    /// A buffer holding `data`.
    pub fn buffer_with(&mut self, data: &[u8]) -> Result<Buf, String> {
        let b = self.buffer(data.len())?;
        b.write(0, data);
        Ok(b)
    }

    /// A 2D image (one mip, one layer, optimal tiling) with `data` uploaded (tightly packed
    /// rows) or cleared to zero, a view of it, left in `layout`.
    pub fn image(&mut self, format: vk::Format, width: u32, height: u32, usage: vk::ImageUsageFlags, data: Option<&[u8]>, layout: vk::ImageLayout) -> Result<Img, String> {
        let d = self.ctx.device();
        let ici = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format)
            .extent(vk::Extent3D { width, height, depth: 1 })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage | vk::ImageUsageFlags::TRANSFER_DST | vk::ImageUsageFlags::TRANSFER_SRC)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        let image = unsafe { d.create_image(&ici, None) }.map_err(|e| format!("vkCreateImage({format:?}): {e:?}"))?;
        self.objs.push(Obj::Image(image));
        let req = unsafe { d.get_image_memory_requirements(image) };
        let mt = self.memory_type(req.memory_type_bits, vk::MemoryPropertyFlags::empty())?;
        let mem = unsafe { d.allocate_memory(&vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(mt), None) }
            .map_err(err("vkAllocateMemory(image)"))?;
        self.objs.push(Obj::Memory(mem));
        unsafe { d.bind_image_memory(image, mem, 0) }.map_err(err("vkBindImageMemory"))?;
        let view = self.view(image, format)?;
        let img = Img { image, view, format, width, height, layout };
        let staging = match data {
            Some(bytes) => Some(self.buffer_with(bytes)?),
            None => None,
        };
        self.submit(|d, cmd| unsafe {
            barrier(d, cmd, image, vk::ImageLayout::UNDEFINED, vk::ImageLayout::TRANSFER_DST_OPTIMAL);
            match staging {
                Some(b) => d.cmd_copy_buffer_to_image(cmd, b.buffer, image, vk::ImageLayout::TRANSFER_DST_OPTIMAL, &[region(width, height)]),
                None => d.cmd_clear_color_image(
                    cmd,
                    image,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    &vk::ClearColorValue { uint32: [0; 4] },
                    &[color_range()],
                ),
            }
            barrier(d, cmd, image, vk::ImageLayout::TRANSFER_DST_OPTIMAL, layout);
        })?;
        Ok(img)
    }

    /// Another view of `image` (2D, whole image).
    pub fn view(&mut self, image: vk::Image, format: vk::Format) -> Result<vk::ImageView, String> {
        let v = create_view(self.ctx.device(), image, format)?;
        self.objs.push(Obj::View(v));
        Ok(v)
    }

    pub fn sampler(&mut self, filter: vk::Filter, mode: vk::SamplerAddressMode) -> Result<vk::Sampler, String> {
        let s = create_sampler(self.ctx.device(), filter, mode)?;
        self.objs.push(Obj::Sampler(s));
        Ok(s)
    }

    /// Reads an image back (tightly packed rows). The image must be in `img.layout`, which
    /// it is left in.
    pub fn read_image(&mut self, img: &Img, texel_size: usize) -> Result<Vec<u8>, String> {
        let b = self.buffer(img.width as usize * img.height as usize * texel_size)?;
        let (image, layout, w, h) = (img.image, img.layout, img.width, img.height);
        self.submit(|d, cmd| unsafe {
            let mb = [vk::MemoryBarrier::default().src_access_mask(vk::AccessFlags::MEMORY_WRITE).dst_access_mask(vk::AccessFlags::TRANSFER_READ)];
            d.cmd_pipeline_barrier(cmd, vk::PipelineStageFlags::ALL_COMMANDS, vk::PipelineStageFlags::TRANSFER, vk::DependencyFlags::empty(), &mb, &[], &[]);
            barrier(d, cmd, image, layout, vk::ImageLayout::TRANSFER_SRC_OPTIMAL);
            d.cmd_copy_image_to_buffer(cmd, image, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, b.buffer, &[region(w, h)]);
            barrier(d, cmd, image, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, layout);
        })?;
        Ok(b.read())
    }

    /// A set layout; `bindings`: (binding, type, count).
    pub fn set_layout(&mut self, bindings: &[(u32, vk::DescriptorType, u32)]) -> Result<vk::DescriptorSetLayout, String> {
        let b: Vec<vk::DescriptorSetLayoutBinding> = bindings
            .iter()
            .map(|&(binding, ty, n)| vk::DescriptorSetLayoutBinding::default().binding(binding).descriptor_type(ty).descriptor_count(n).stage_flags(ALL_STAGES))
            .collect();
        let l = unsafe { self.ctx.device().create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&b), None) }
            .map_err(err("vkCreateDescriptorSetLayout"))?;
        self.objs.push(Obj::SetLayout(l));
        Ok(l)
    }

    /// A pipeline layout with push constants `[0, push_size)` for all stages (none if 0).
    pub fn pipeline_layout(&mut self, sets: &[vk::DescriptorSetLayout], push_size: u32) -> Result<vk::PipelineLayout, String> {
        let pcr = [vk::PushConstantRange::default().stage_flags(ALL_STAGES).offset(0).size(push_size)];
        let mut ci = vk::PipelineLayoutCreateInfo::default().set_layouts(sets);
        if push_size > 0 {
            ci = ci.push_constant_ranges(&pcr);
        }
        let l = unsafe { self.ctx.device().create_pipeline_layout(&ci, None) }.map_err(|e| format!("vkCreatePipelineLayout ({} sets): {e:?}", sets.len()))?;
        self.objs.push(Obj::PipelineLayout(l));
        Ok(l)
    }

    /// A descriptor set of `layout` with `writes` applied (own pool).
    pub fn descriptor_set(&mut self, layout: vk::DescriptorSetLayout, writes: &[Write]) -> Result<vk::DescriptorSet, String> {
        let d = self.ctx.device();
        let types = [
            vk::DescriptorType::STORAGE_BUFFER,
            vk::DescriptorType::UNIFORM_BUFFER,
            vk::DescriptorType::SAMPLED_IMAGE,
            vk::DescriptorType::STORAGE_IMAGE,
            vk::DescriptorType::SAMPLER,
            vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
        ];
        let sizes: Vec<vk::DescriptorPoolSize> = types.iter().map(|&ty| vk::DescriptorPoolSize { ty, descriptor_count: 16 }).collect();
        let pool = unsafe { d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None) }
            .map_err(err("vkCreateDescriptorPool"))?;
        self.objs.push(Obj::Pool(pool));
        let l = [layout];
        let set = unsafe { d.allocate_descriptor_sets(&vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&l)) }
            .map_err(err("vkAllocateDescriptorSets"))?[0];
        self.update(set, writes);
        Ok(set)
    }

    pub fn update(&self, set: vk::DescriptorSet, writes: &[Write]) {
        let buf_infos: Vec<[vk::DescriptorBufferInfo; 1]> = writes
            .iter()
            .map(|w| match *w {
                Write::Buffer { buffer, offset, range, .. } => [vk::DescriptorBufferInfo { buffer, offset, range }],
                _ => [vk::DescriptorBufferInfo::default()],
            })
            .collect();
        let img_infos: Vec<[vk::DescriptorImageInfo; 1]> = writes
            .iter()
            .map(|w| match *w {
                Write::Image { view, layout, sampler, .. } => [vk::DescriptorImageInfo { sampler, image_view: view, image_layout: layout }],
                _ => [vk::DescriptorImageInfo::default()],
            })
            .collect();
        let vw: Vec<vk::WriteDescriptorSet> = writes
            .iter()
            .enumerate()
            .map(|(i, w)| match *w {
                Write::Buffer { binding, ty, .. } => vk::WriteDescriptorSet::default().dst_set(set).dst_binding(binding).descriptor_type(ty).buffer_info(&buf_infos[i]),
                Write::Image { binding, element, ty, .. } => {
                    vk::WriteDescriptorSet::default().dst_set(set).dst_binding(binding).dst_array_element(element).descriptor_type(ty).image_info(&img_infos[i])
                }
            })
            .collect();
        unsafe { self.ctx.device().update_descriptor_sets(&vw, &[]) };
    }

    pub fn module(&mut self, words: &[u32]) -> Result<vk::ShaderModule, String> {
        let m = self.ctx.create_shader_module(words).map_err(|e| format!("vkCreateShaderModule: {e:?}"))?;
        self.objs.push(Obj::Module(m));
        Ok(m)
    }

    pub fn compute_pipeline(&mut self, words: &[u32], layout: vk::PipelineLayout) -> Result<vk::Pipeline, String> {
        let module = self.module(words)?;
        let main = CString::new("main").unwrap();
        let stage = vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::COMPUTE).module(module).name(&main);
        let ci = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)];
        let p = unsafe { self.ctx.device().create_compute_pipelines(vk::PipelineCache::null(), &ci, None) }
            .map_err(|(_, e)| format!("vkCreateComputePipelines: {e:?}"))?[0];
        self.objs.push(Obj::Pipeline(p));
        Ok(p)
    }

    /// A render pass with one color attachment of `format` (cleared, stored, left in
    /// TRANSFER_SRC_OPTIMAL) and a framebuffer for `target`.
    pub fn render_target(&mut self, target: &Img) -> Result<(vk::RenderPass, vk::Framebuffer), String> {
        let d = self.ctx.device();
        let rp = crate::graphics::color_render_pass(d, &[target.format], target.layout)?;
        self.objs.push(Obj::RenderPass(rp));
        let views = [target.view];
        let fb = unsafe {
            d.create_framebuffer(&vk::FramebufferCreateInfo::default().render_pass(rp).attachments(&views).width(target.width).height(target.height).layers(1), None)
        }
        .map_err(err("vkCreateFramebuffer"))?;
        self.objs.push(Obj::Framebuffer(fb));
        Ok((rp, fb))
    }

    /// A `width`×`height` RGBA8 [`ColorTarget`].
    pub fn color_target(&mut self, width: u32, height: u32) -> Result<ColorTarget, String> {
        let image = self.image(vk::Format::R8G8B8A8_UNORM, width, height, vk::ImageUsageFlags::COLOR_ATTACHMENT, None, vk::ImageLayout::TRANSFER_SRC_OPTIMAL)?;
        let (render_pass, framebuffer) = self.render_target(&image)?;
        Ok(ColorTarget { image, render_pass, framebuffer })
    }

    /// A graphics pipeline without vertex input (triangle list), viewport = `width`×`height`.
    pub fn graphics_pipeline(&mut self, vs: &[u32], fs: &[u32], layout: vk::PipelineLayout, render_pass: vk::RenderPass, width: u32, height: u32) -> Result<vk::Pipeline, String> {
        let vm = self.module(vs)?;
        let fm = self.module(fs)?;
        let vi = vk::PipelineVertexInputStateCreateInfo::default();
        let p = crate::graphics::triangle_pipeline(self.ctx.device(), [vm, fm], &vi, 1, layout, render_pass, width, height)?;
        self.objs.push(Obj::Pipeline(p));
        Ok(p)
    }

    /// A primary command buffer from the scope's pool.
    pub fn command_buffer(&mut self) -> Result<vk::CommandBuffer, String> {
        let ai = vk::CommandBufferAllocateInfo::default().command_pool(self.cmd_pool).level(vk::CommandBufferLevel::PRIMARY).command_buffer_count(1);
        Ok(unsafe { self.ctx.device().allocate_command_buffers(&ai) }.map_err(err("vkAllocateCommandBuffers"))?[0])
    }

    /// Submits `cmd` (already recorded) and waits.
    pub fn submit_recorded(&self, cmd: vk::CommandBuffer) -> Result<(), String> {
        let d = self.ctx.device();
        let fence = unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }.map_err(err("vkCreateFence"))?;
        let cbs = [cmd];
        let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
        let r = {
            let q = self.ctx.queue();
            unsafe { d.queue_submit(*q, &submit, fence) }.map_err(err("vkQueueSubmit"))
        };
        let r = r.and_then(|_| unsafe { d.wait_for_fences(&[fence], true, Duration::from_secs(120).as_nanos() as u64) }.map_err(err("vkWaitForFences")));
        unsafe { d.destroy_fence(fence, None) };
        r
    }

    /// Records with `f` into a fresh command buffer (with a final all-commands → host barrier),
    /// submits and waits.
    pub fn submit(&mut self, f: impl FnOnce(&ash::Device, vk::CommandBuffer)) -> Result<(), String> {
        let cmd = self.command_buffer()?;
        let d = self.ctx.device();
        unsafe {
            d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT))
                .map_err(err("vkBeginCommandBuffer"))?;
            f(d, cmd);
            let mb = [vk::MemoryBarrier::default().src_access_mask(vk::AccessFlags::MEMORY_WRITE).dst_access_mask(vk::AccessFlags::HOST_READ | vk::AccessFlags::MEMORY_READ)];
            d.cmd_pipeline_barrier(cmd, vk::PipelineStageFlags::ALL_COMMANDS, vk::PipelineStageFlags::ALL_COMMANDS | vk::PipelineStageFlags::HOST, vk::DependencyFlags::empty(), &mb, &[], &[]);
            d.end_command_buffer(cmd).map_err(err("vkEndCommandBuffer"))?;
        }
        let r = self.submit_recorded(cmd);
        unsafe { d.free_command_buffers(self.cmd_pool, &[cmd]) };
        r
    }
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        let d = self.ctx.device();
        unsafe {
            let _ = d.device_wait_idle();
            for o in self.objs.drain(..).rev() {
                match o {
                    Obj::Buffer(x) => d.destroy_buffer(x, None),
                    Obj::Memory(x) => d.free_memory(x, None),
                    Obj::Image(x) => d.destroy_image(x, None),
                    Obj::View(x) => d.destroy_image_view(x, None),
                    Obj::Sampler(x) => d.destroy_sampler(x, None),
                    Obj::SetLayout(x) => d.destroy_descriptor_set_layout(x, None),
                    Obj::PipelineLayout(x) => d.destroy_pipeline_layout(x, None),
                    Obj::Pool(x) => d.destroy_descriptor_pool(x, None),
                    Obj::Pipeline(x) => d.destroy_pipeline(x, None),
                    Obj::Module(x) => d.destroy_shader_module(x, None),
                    Obj::RenderPass(x) => d.destroy_render_pass(x, None),
                    Obj::Framebuffer(x) => d.destroy_framebuffer(x, None),
                    Obj::CommandPool(x) => d.destroy_command_pool(x, None),
                }
            }
        }
    }
}

pub fn color_range() -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange { aspect_mask: vk::ImageAspectFlags::COLOR, base_mip_level: 0, level_count: 1, base_array_layer: 0, layer_count: 1 }
}

fn region(width: u32, height: u32) -> vk::BufferImageCopy {
    vk::BufferImageCopy {
        buffer_offset: 0,
        buffer_row_length: 0,
        buffer_image_height: 0,
        image_subresource: vk::ImageSubresourceLayers { aspect_mask: vk::ImageAspectFlags::COLOR, mip_level: 0, base_array_layer: 0, layer_count: 1 },
        image_offset: vk::Offset3D { x: 0, y: 0, z: 0 },
        image_extent: vk::Extent3D { width, height, depth: 1 },
    }
}

/// A full layout transition with conservative access masks.
///
/// # Safety
/// `cmd` must be recording.
pub unsafe fn barrier(d: &ash::Device, cmd: vk::CommandBuffer, image: vk::Image, from: vk::ImageLayout, to: vk::ImageLayout) {
    if from == to {
        return;
    }
    let b = [vk::ImageMemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
        .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE)
        .old_layout(from)
        .new_layout(to)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(color_range())];
    d.cmd_pipeline_barrier(cmd, vk::PipelineStageFlags::ALL_COMMANDS, vk::PipelineStageFlags::ALL_COMMANDS, vk::DependencyFlags::empty(), &[], &[], &b);
}

/// `vkCreateImageView` (2D, whole image), not owned by any scope.
pub fn create_view(d: &ash::Device, image: vk::Image, format: vk::Format) -> Result<vk::ImageView, String> {
    let vci = vk::ImageViewCreateInfo::default().image(image).view_type(vk::ImageViewType::TYPE_2D).format(format).subresource_range(color_range());
    unsafe { d.create_image_view(&vci, None) }.map_err(err("vkCreateImageView"))
}

/// `vkCreateSampler` (one filter for min/mag, nearest mips, lod 0, unnormalized off), not owned.
pub fn create_sampler(d: &ash::Device, filter: vk::Filter, mode: vk::SamplerAddressMode) -> Result<vk::Sampler, String> {
    let ci = vk::SamplerCreateInfo::default()
        .mag_filter(filter)
        .min_filter(filter)
        .mipmap_mode(vk::SamplerMipmapMode::NEAREST)
        .address_mode_u(mode)
        .address_mode_v(mode)
        .address_mode_w(mode)
        .max_lod(0.0)
        .border_color(vk::BorderColor::FLOAT_TRANSPARENT_BLACK);
    unsafe { d.create_sampler(&ci, None) }.map_err(err("vkCreateSampler"))
}
