//! Offscreen rendering on a [`Context`]'s device and queue (no window): one render pass with
//! color attachments, one vertex buffer, one draw, every attachment read back.
//!
//! ```ignore
//! let out = polyfill_e2e::graphics::draw(&ctx, &vs_words, &fs_words, &job)?;
//! // out[i]: attachment i, rows of `width` texels, tightly packed
//! ```

use crate::vk::Context;
use ash::vk;
use std::ffi::CString;
use std::time::Duration;

/// One vertex attribute (binding 0).
#[derive(Debug, Clone, Copy)]
pub struct VertexAttribute {
    pub location: u32,
    pub format: vk::Format,
    pub offset: u32,
}

/// An offscreen draw.
#[derive(Debug, Clone)]
pub struct DrawJob {
    pub width: u32,
    pub height: u32,
    /// Vertex buffer (binding 0, per-vertex rate).
    pub vertices: Vec<u8>,
    pub vertex_stride: u32,
    pub attributes: Vec<VertexAttribute>,
    pub vertex_count: u32,
    /// Color attachment formats, by location.
    pub attachments: Vec<vk::Format>,
    /// Clear value of each attachment as raw 32-bit words (float bits for float formats).
    pub clear: Vec<[u32; 4]>,
    /// Push constants for the vertex and fragment stages (offset 0).
    pub push_constants: Vec<u8>,
}

/// Bytes per texel of the formats the tests use.
pub fn texel_size(f: vk::Format) -> Result<usize, String> {
    Ok(match f {
        vk::Format::R8G8B8A8_UNORM | vk::Format::R32_UINT | vk::Format::R32_SINT | vk::Format::R32_SFLOAT => 4,
        vk::Format::R16_UINT | vk::Format::R16_SINT | vk::Format::R16_SFLOAT => 2,
        vk::Format::R16G16_UINT | vk::Format::R16G16_SINT | vk::Format::R16G16_SFLOAT => 4,
        vk::Format::R16G16B16A16_UINT | vk::Format::R16G16B16A16_SINT | vk::Format::R16G16B16A16_SFLOAT => 8,
        vk::Format::R32G32B32A32_UINT | vk::Format::R32G32B32A32_SINT | vk::Format::R32G32B32A32_SFLOAT => 16,
        _ => return Err(format!("texel_size: format {f:?} not in the table")),
    })
}

/// Everything a draw creates; destroyed in reverse order on drop.
struct Gfx<'a> {
    d: &'a ash::Device,
    images: Vec<vk::Image>,
    views: Vec<vk::ImageView>,
    buffers: Vec<vk::Buffer>,
    memories: Vec<vk::DeviceMemory>,
    modules: Vec<vk::ShaderModule>,
    render_pass: vk::RenderPass,
    framebuffer: vk::Framebuffer,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    pool: vk::CommandPool,
    fence: vk::Fence,
}

impl Drop for Gfx<'_> {
    fn drop(&mut self) {
        let d = self.d;
        unsafe {
            crate::vk::destroy_submission(d, self.fence, self.pool, self.pipeline, self.layout);
            if self.framebuffer != vk::Framebuffer::null() {
                d.destroy_framebuffer(self.framebuffer, None);
            }
            if self.render_pass != vk::RenderPass::null() {
                d.destroy_render_pass(self.render_pass, None);
            }
            for &m in &self.modules {
                d.destroy_shader_module(m, None);
            }
            for &v in &self.views {
                d.destroy_image_view(v, None);
            }
            for &i in &self.images {
                d.destroy_image(i, None);
            }
            for &b in &self.buffers {
                d.destroy_buffer(b, None);
            }
            for &m in &self.memories {
                d.free_memory(m, None);
            }
        }
    }
}

fn memory_type(ctx: &Context, bits: u32, want: vk::MemoryPropertyFlags) -> Result<u32, String> {
    let props = unsafe { ctx.instance().get_physical_device_memory_properties(ctx.physical_device()) };
    (0..props.memory_type_count)
        .find(|&i| bits & (1 << i) != 0 && props.memory_types[i as usize].property_flags.contains(want))
        .ok_or_else(|| format!("no memory type with {want:?} in {bits:#x}"))
}

/// Creates a host-visible buffer with `data` (or zeros of `size`); returns (buffer, mapped ptr).
fn host_buffer(ctx: &Context, g: &mut Gfx, usage: vk::BufferUsageFlags, size: usize, data: Option<&[u8]>) -> Result<(vk::Buffer, *mut u8), String> {
    let d = ctx.device();
    let bci = vk::BufferCreateInfo::default().size(size.max(4) as u64).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE);
    let buf = unsafe { d.create_buffer(&bci, None) }.map_err(|e| format!("vkCreateBuffer: {e:?}"))?;
    g.buffers.push(buf);
    let req = unsafe { d.get_buffer_memory_requirements(buf) };
    let mt = memory_type(ctx, req.memory_type_bits, vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT)?;
    let mem = unsafe { d.allocate_memory(&vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(mt), None) }
        .map_err(|e| format!("vkAllocateMemory: {e:?}"))?;
    g.memories.push(mem);
    unsafe { d.bind_buffer_memory(buf, mem, 0) }.map_err(|e| format!("vkBindBufferMemory: {e:?}"))?;
    let ptr = unsafe { d.map_memory(mem, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }.map_err(|e| format!("vkMapMemory: {e:?}"))? as *mut u8;
    unsafe {
        std::ptr::write_bytes(ptr, 0, size);
        if let Some(data) = data {
            std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len().min(size));
        }
    }
    Ok((buf, ptr))
}

/// Renders `job` with the vertex shader `vs` and fragment shader `fs` (entry points `main`;
/// modules created through whatever layers the context has) and returns every attachment's
/// texels (row-major, `width × height × texel_size`).
/// A one-subpass render pass writing one color attachment per format (cleared, stored, left in
/// `final_layout`), with the dependency that makes the writes visible to transfer reads.
pub fn color_render_pass(d: &ash::Device, formats: &[vk::Format], final_layout: vk::ImageLayout) -> Result<vk::RenderPass, String> {
    let descs: Vec<vk::AttachmentDescription> = formats
        .iter()
        .map(|&f| {
            vk::AttachmentDescription::default()
                .format(f)
                .samples(vk::SampleCountFlags::TYPE_1)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
                .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
                .initial_layout(vk::ImageLayout::UNDEFINED)
                .final_layout(final_layout)
        })
        .collect();
    let refs: Vec<vk::AttachmentReference> =
        (0..formats.len() as u32).map(|i| vk::AttachmentReference { attachment: i, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }).collect();
    let subpass = [vk::SubpassDescription::default().pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS).color_attachments(&refs)];
    let deps = [vk::SubpassDependency {
        src_subpass: 0,
        dst_subpass: vk::SUBPASS_EXTERNAL,
        src_stage_mask: vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
        dst_stage_mask: vk::PipelineStageFlags::TRANSFER,
        src_access_mask: vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
        dst_access_mask: vk::AccessFlags::TRANSFER_READ,
        dependency_flags: vk::DependencyFlags::empty(),
    }];
    let rpci = vk::RenderPassCreateInfo::default().attachments(&descs).subpasses(&subpass).dependencies(&deps);
    unsafe { d.create_render_pass(&rpci, None) }.map_err(|e| format!("vkCreateRenderPass: {e:?}"))
}

/// A triangle-list graphics pipeline for an offscreen draw: `modules` = (vertex, fragment)
/// with entry points "main", the given vertex input, a `width`×`height` viewport and scissor, no
/// culling, and `attachments` colour attachments written without blending (subpass 0).
#[allow(clippy::too_many_arguments)]
pub fn triangle_pipeline(
    d: &ash::Device,
    modules: [vk::ShaderModule; 2],
    vi: &vk::PipelineVertexInputStateCreateInfo,
    attachments: usize,
    layout: vk::PipelineLayout,
    render_pass: vk::RenderPass,
    width: u32,
    height: u32,
) -> Result<vk::Pipeline, String> {
    let main = CString::new("main").unwrap();
    let stages = [
        vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::VERTEX).module(modules[0]).name(&main),
        vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::FRAGMENT).module(modules[1]).name(&main),
    ];
    let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_LIST);
    let viewports = [vk::Viewport { x: 0.0, y: 0.0, width: width as f32, height: height as f32, min_depth: 0.0, max_depth: 1.0 }];
    let scissors = [vk::Rect2D { offset: vk::Offset2D { x: 0, y: 0 }, extent: vk::Extent2D { width, height } }];
    let vp = vk::PipelineViewportStateCreateInfo::default().viewports(&viewports).scissors(&scissors);
    let rs = vk::PipelineRasterizationStateCreateInfo::default()
        .polygon_mode(vk::PolygonMode::FILL)
        .cull_mode(vk::CullModeFlags::NONE)
        .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
        .line_width(1.0);
    let ms = vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(vk::SampleCountFlags::TYPE_1);
    let blend = vec![vk::PipelineColorBlendAttachmentState::default().blend_enable(false).color_write_mask(vk::ColorComponentFlags::RGBA); attachments];
    let cb = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend);
    let ci = [vk::GraphicsPipelineCreateInfo::default()
        .stages(&stages)
        .vertex_input_state(vi)
        .input_assembly_state(&ia)
        .viewport_state(&vp)
        .rasterization_state(&rs)
        .multisample_state(&ms)
        .color_blend_state(&cb)
        .layout(layout)
        .render_pass(render_pass)
        .subpass(0)];
    Ok(unsafe { d.create_graphics_pipelines(vk::PipelineCache::null(), &ci, None) }.map_err(|(_, e)| format!("vkCreateGraphicsPipelines: {e:?}"))?[0])
}

pub fn draw(ctx: &Context, vs: &[u32], fs: &[u32], job: &DrawJob) -> Result<Vec<Vec<u8>>, String> {
    let d = ctx.device();
    let mut g = Gfx {
        d,
        images: vec![],
        views: vec![],
        buffers: vec![],
        memories: vec![],
        modules: vec![],
        render_pass: vk::RenderPass::null(),
        framebuffer: vk::Framebuffer::null(),
        layout: vk::PipelineLayout::null(),
        pipeline: vk::Pipeline::null(),
        pool: vk::CommandPool::null(),
        fence: vk::Fence::null(),
    };
    let extent = vk::Extent2D { width: job.width, height: job.height };

    // --- attachments
    for &format in &job.attachments {
        let ici = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format)
            .extent(vk::Extent3D { width: job.width, height: job.height, depth: 1 })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        let img = unsafe { d.create_image(&ici, None) }.map_err(|e| format!("vkCreateImage({format:?}): {e:?}"))?;
        g.images.push(img);
        let req = unsafe { d.get_image_memory_requirements(img) };
        let mt = memory_type(ctx, req.memory_type_bits, vk::MemoryPropertyFlags::empty())?;
        let mem = unsafe { d.allocate_memory(&vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(mt), None) }
            .map_err(|e| format!("vkAllocateMemory: {e:?}"))?;
        g.memories.push(mem);
        unsafe { d.bind_image_memory(img, mem, 0) }.map_err(|e| format!("vkBindImageMemory: {e:?}"))?;
        let vci = vk::ImageViewCreateInfo::default()
            .image(img)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(format)
            .subresource_range(vk::ImageSubresourceRange { aspect_mask: vk::ImageAspectFlags::COLOR, base_mip_level: 0, level_count: 1, base_array_layer: 0, layer_count: 1 });
        let view = unsafe { d.create_image_view(&vci, None) }.map_err(|e| format!("vkCreateImageView: {e:?}"))?;
        g.views.push(view);
    }

    // --- render pass + framebuffer
    g.render_pass = color_render_pass(d, &job.attachments, vk::ImageLayout::TRANSFER_SRC_OPTIMAL)?;
    let fci = vk::FramebufferCreateInfo::default().render_pass(g.render_pass).attachments(&g.views).width(job.width).height(job.height).layers(1);
    g.framebuffer = unsafe { d.create_framebuffer(&fci, None) }.map_err(|e| format!("vkCreateFramebuffer: {e:?}"))?;

    // --- shaders + pipeline
    for (words, what) in [(vs, "vertex"), (fs, "fragment")] {
        let m = ctx.create_shader_module(words).map_err(|e| format!("vkCreateShaderModule ({what} shader): {e:?}"))?;
        g.modules.push(m);
    }
    let stages_flags = vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT;
    let pc_len = job.push_constants.len().div_ceil(4) * 4;
    let pcr = [vk::PushConstantRange::default().stage_flags(stages_flags).offset(0).size(pc_len as u32)];
    let mut plci = vk::PipelineLayoutCreateInfo::default();
    if pc_len > 0 {
        plci = plci.push_constant_ranges(&pcr);
    }
    g.layout = unsafe { d.create_pipeline_layout(&plci, None) }.map_err(|e| format!("vkCreatePipelineLayout: {e:?}"))?;
    let vb = [vk::VertexInputBindingDescription { binding: 0, stride: job.vertex_stride, input_rate: vk::VertexInputRate::VERTEX }];
    let va: Vec<vk::VertexInputAttributeDescription> =
        job.attributes.iter().map(|a| vk::VertexInputAttributeDescription { location: a.location, binding: 0, format: a.format, offset: a.offset }).collect();
    let vi = vk::PipelineVertexInputStateCreateInfo::default().vertex_binding_descriptions(&vb).vertex_attribute_descriptions(&va);
    let modules = [g.modules[0], g.modules[1]];
    g.pipeline = triangle_pipeline(d, modules, &vi, job.attachments.len(), g.layout, g.render_pass, job.width, job.height)?;

    // --- buffers
    let (vbuf, _) = host_buffer(ctx, &mut g, vk::BufferUsageFlags::VERTEX_BUFFER, job.vertices.len(), Some(&job.vertices))?;
    let mut readbacks = Vec::new();
    for &f in &job.attachments {
        let size = (job.width * job.height) as usize * texel_size(f)?;
        let (b, p) = host_buffer(ctx, &mut g, vk::BufferUsageFlags::TRANSFER_DST, size, None)?;
        readbacks.push((b, p, size));
    }

    // --- commands
    let cpi = vk::CommandPoolCreateInfo::default().queue_family_index(ctx.queue_family()).flags(vk::CommandPoolCreateFlags::TRANSIENT);
    g.pool = unsafe { d.create_command_pool(&cpi, None) }.map_err(|e| format!("vkCreateCommandPool: {e:?}"))?;
    let cbai = vk::CommandBufferAllocateInfo::default().command_pool(g.pool).level(vk::CommandBufferLevel::PRIMARY).command_buffer_count(1);
    let cmd = unsafe { d.allocate_command_buffers(&cbai) }.map_err(|e| format!("vkAllocateCommandBuffers: {e:?}"))?[0];
    let clears: Vec<vk::ClearValue> = job
        .attachments
        .iter()
        .enumerate()
        .map(|(i, _)| vk::ClearValue { color: vk::ClearColorValue { uint32: job.clear.get(i).copied().unwrap_or([0; 4]) } })
        .collect();
    unsafe {
        d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT))
            .map_err(|e| format!("vkBeginCommandBuffer: {e:?}"))?;
        let rpbi = vk::RenderPassBeginInfo::default()
            .render_pass(g.render_pass)
            .framebuffer(g.framebuffer)
            .render_area(vk::Rect2D { offset: vk::Offset2D { x: 0, y: 0 }, extent })
            .clear_values(&clears);
        d.cmd_begin_render_pass(cmd, &rpbi, vk::SubpassContents::INLINE);
        d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, g.pipeline);
        d.cmd_bind_vertex_buffers(cmd, 0, &[vbuf], &[0]);
        if pc_len > 0 {
            let mut pc = job.push_constants.clone();
            pc.resize(pc_len, 0);
            d.cmd_push_constants(cmd, g.layout, stages_flags, 0, &pc);
        }
        d.cmd_draw(cmd, job.vertex_count, 1, 0, 0);
        d.cmd_end_render_pass(cmd);
        for (i, (b, _, _)) in readbacks.iter().enumerate() {
            let region = vk::BufferImageCopy {
                buffer_offset: 0,
                buffer_row_length: 0,
                buffer_image_height: 0,
                image_subresource: vk::ImageSubresourceLayers { aspect_mask: vk::ImageAspectFlags::COLOR, mip_level: 0, base_array_layer: 0, layer_count: 1 },
                image_offset: vk::Offset3D { x: 0, y: 0, z: 0 },
                image_extent: vk::Extent3D { width: job.width, height: job.height, depth: 1 },
            };
            d.cmd_copy_image_to_buffer(cmd, g.images[i], vk::ImageLayout::TRANSFER_SRC_OPTIMAL, *b, &[region]);
        }
        let barrier = [vk::MemoryBarrier::default().src_access_mask(vk::AccessFlags::TRANSFER_WRITE).dst_access_mask(vk::AccessFlags::HOST_READ)];
        d.cmd_pipeline_barrier(cmd, vk::PipelineStageFlags::TRANSFER, vk::PipelineStageFlags::HOST, vk::DependencyFlags::empty(), &barrier, &[], &[]);
        d.end_command_buffer(cmd).map_err(|e| format!("vkEndCommandBuffer: {e:?}"))?;
    }
    g.fence = unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }.map_err(|e| format!("vkCreateFence: {e:?}"))?;
    let cbs = [cmd];
    let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
    {
        let q = ctx.queue();
        unsafe { d.queue_submit(*q, &submit, g.fence) }.map_err(|e| format!("vkQueueSubmit: {e:?}"))?;
    }
    unsafe { d.wait_for_fences(&[g.fence], true, Duration::from_secs(120).as_nanos() as u64) }.map_err(|e| format!("vkWaitForFences: {e:?}"))?;
    Ok(readbacks
        .iter()
        .map(|&(_, p, size)| {
            let mut v = vec![0u8; size];
            unsafe { std::ptr::copy_nonoverlapping(p, v.as_mut_ptr(), size) };
            v
        })
        .collect())
}
