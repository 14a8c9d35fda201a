//! Binding the table before work that needs it.
//!
//! Per command buffer and bind point the layer knows the bound pipeline using the table's layout (or
//! that the bound pipeline is not bindless), the layouts of shader objects using the table bound to
//! the bind point's stages (VK_EXT_shader_object; see shader_objects.rs), and the layout it last
//! bound the table with. Binding a pipeline unbinds the bind point's shader objects and binding
//! shader objects unbinds its pipeline (VK_EXT_shader_object), so either decides the layout. Before
//! a draw / dispatch / trace whose bound pipeline uses the table, if the table is not known to be
//! bound compatibly, it calls the next layer's vkCmdBindDescriptorSets(bind point, *the
//! pipeline's own layout*, reserved set, [table]). Using the pipeline's layout matters: the
//! application's sets were bound with a layout compatible with it for their indices, and binding
//! with the same layout at the highest index disturbs none of them (spec "Pipeline Layout
//! Compatibility"). Any application bind / push with another layout conservatively marks the
//! table unbound; vkCmdExecuteCommands makes all state unknown, vkBeginCommandBuffer /
//! vkResetCommandBuffer start afresh.
//!
//! These hooks are handed out only for devices with a table.
use super::{table_device_of_cb, TableDevice};
use crate::ffi_guard::guard;
use crate::log_error;
use ash::vk::{self, Handle};
use std::ffi::{c_void, CStr};

/// Graphics, compute, ray tracing.
pub const BIND_POINTS: usize = 3;

pub fn bind_point_index(bp: vk::PipelineBindPoint) -> Option<usize> {
    match bp {
        vk::PipelineBindPoint::GRAPHICS => Some(0),
        vk::PipelineBindPoint::COMPUTE => Some(1),
        vk::PipelineBindPoint::RAY_TRACING_KHR => Some(2),
        _ => None,
    }
}

const BIND_POINT_VALUES: [vk::PipelineBindPoint; BIND_POINTS] =
    [vk::PipelineBindPoint::GRAPHICS, vk::PipelineBindPoint::COMPUTE, vk::PipelineBindPoint::RAY_TRACING_KHR];

/// Bind points whose shaders `stages` names (vkCmdBindDescriptorSets2KHR's stageFlags).
pub fn bind_points_of_stages(stages: vk::ShaderStageFlags) -> [bool; BIND_POINTS] {
    let rt = vk::ShaderStageFlags::RAYGEN_KHR
        | vk::ShaderStageFlags::ANY_HIT_KHR
        | vk::ShaderStageFlags::CLOSEST_HIT_KHR
        | vk::ShaderStageFlags::MISS_KHR
        | vk::ShaderStageFlags::INTERSECTION_KHR
        | vk::ShaderStageFlags::CALLABLE_KHR;
    let compute = vk::ShaderStageFlags::COMPUTE;
    let graphics = vk::ShaderStageFlags::from_raw(stages.as_raw() & !(rt | compute).as_raw());
    [!graphics.is_empty(), stages.intersects(compute), stages.intersects(rt)]
}

/// Shader-object stages tracked per bind point: stage bit index (VERTEX 0 .. MESH_EXT 7).
pub const SHADER_STAGES: usize = 8;

/// Bind point and stage slot of a shader-object stage (one bit), if it is one.
pub fn shader_stage_slot(stage: vk::ShaderStageFlags) -> Option<(usize, usize)> {
    let bits = stage.as_raw();
    if bits.count_ones() != 1 || bits.trailing_zeros() as usize >= SHADER_STAGES {
        return None;
    }
    let bp = if stage == vk::ShaderStageFlags::COMPUTE { 1 } else { 0 };
    Some((bp, bits.trailing_zeros() as usize))
}

/// One bind point's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Point {
    /// The layout to bind the table with for the bound work: the bound pipeline's layout when
    /// it uses the table (and its layout has the table), else that of the first bound
    /// shader object that uses it.
    pub pipeline_layout: Option<u64>,
    /// Per shader-object stage: the layer's layout of the shader using the table bound there.
    pub shader_layouts: [Option<u64>; SHADER_STAGES],
    /// The layout the table was last bound with, while no application bind may have disturbed it.
    pub table_layout: Option<u64>,
}

/// State of one command buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CbState {
    pub points: [Point; BIND_POINTS],
}

impl CbState {
    /// A pipeline was bound at `bp`: it replaces any shader objects bound there.
    pub fn bind_pipeline(&mut self, bp: usize, layout: Option<u64>) {
        let p = &mut self.points[bp];
        p.pipeline_layout = layout;
        p.shader_layouts = [None; SHADER_STAGES];
    }
    /// A shader object (or none: unbound) was bound to `stage` of `bp`; `layout` is the
    /// layer's layout for one that uses the table. Unbinds the bind point's pipeline.
    pub fn bind_shader(&mut self, bp: usize, stage: usize, layout: Option<u64>) {
        let p = &mut self.points[bp];
        p.shader_layouts[stage] = layout;
        p.pipeline_layout = p.shader_layouts.iter().find_map(|l| *l);
    }
    /// The application bound or pushed sets at `bp` with `layout` (`None`: unknown layout).
    pub fn app_bound_sets(&mut self, bp: usize, layout: Option<u64>) {
        let p = &mut self.points[bp];
        if p.table_layout.is_none() || p.table_layout != layout {
            p.table_layout = None;
        }
    }
    /// After vkCmdExecuteCommands every binding is undefined.
    pub fn forget_all(&mut self) {
        *self = CbState::default();
    }
    /// Before work at `bp`: the layout to bind the table with, if it must be bound now.
    pub fn before_work(&mut self, bp: usize) -> Option<u64> {
        let p = &mut self.points[bp];
        match p.pipeline_layout {
            Some(l) if p.table_layout != Some(l) => {
                p.table_layout = Some(l);
                Some(l)
            }
            _ => None,
        }
    }
}

impl TableDevice {
    fn with_cb<R>(&self, cb: vk::CommandBuffer, f: impl FnOnce(&mut CbState) -> R) -> R {
        let mut e = self.cbs.entry(cb.as_raw()).or_default();
        f(&mut e)
    }

    /// Binds the table if the bound pipeline at `bp` needs it.
    ///
    /// # Safety
    /// `cb` is a command buffer of this device in the recording state.
    unsafe fn before_work(&self, cb: vk::CommandBuffer, bp: usize) {
        // Fast path: a command buffer with no pipeline using the table bound has no entry at all, or one
        // with nothing to do.
        let layout = match self.cbs.get_mut(&cb.as_raw()) {
            Some(mut e) => e.before_work(bp),
            None => None,
        };
        if let (Some(layout), Some(bind)) = (layout, self.next.cmd_bind_descriptor_sets) {
            bind(
                cb,
                BIND_POINT_VALUES[bp],
                vk::PipelineLayout::from_raw(layout),
                self.table.config.set,
                1,
                &self.table.set,
                0,
                std::ptr::null(),
            );
        }
    }
}

macro_rules! cstr {
    ($s:literal) => {
        // SAFETY: literal with one terminating NUL.
        unsafe { CStr::from_bytes_with_nul_unchecked(concat!($s, "\0").as_bytes()) }
    };
}

/// Draw / dispatch / trace hooks: bind the table if needed, then call down.
macro_rules! work_hooks {
    ($( $hook:ident = $vkname:literal : $pfn:ident @ $bp:literal ( $($arg:ident : $ty:ty),* ); )*) => {
        /// Next-layer work commands.
        #[derive(Default, Clone, Copy)]
        #[allow(non_snake_case)]
        pub struct WorkNext { $( pub $hook: Option<vk::$pfn>, )* }

        impl WorkNext {
            /// # Safety
            /// Valid device and its next GetDeviceProcAddr.
            pub unsafe fn load(gdpa: vk::PFN_vkGetDeviceProcAddr, device: vk::Device) -> WorkNext {
                WorkNext { $( $hook: crate::dispatch::load_device(gdpa, device, cstr!($vkname)), )* }
            }
        }

        $(
            #[allow(non_snake_case)]
            pub unsafe extern "system" fn $hook(cb: vk::CommandBuffer, $($arg: $ty),*) {
                guard($vkname, (), || unsafe {
                    let Some(b) = table_device_of_cb(cb) else {
                        log_error!(LOADER_INTERFACE, "{}: command buffer {cb:?} of an unknown device", $vkname);
                        return;
                    };
                    b.before_work(cb, $bp);
                    if let Some(f) = b.next.work.$hook {
                        f(cb, $($arg),*)
                    }
                })
            }
        )*

        /// The hook for a work command name.
        pub fn work_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
            $( if name == $vkname.as_bytes() { return pfn!($hook as vk::$pfn); } )*
            None
        }

        /// Is this command available below (the hook is handed out only then)?
        pub fn work_next_has(next: &WorkNext, name: &[u8]) -> bool {
            $( if name == $vkname.as_bytes() { return next.$hook.is_some(); } )*
            false
        }
    };
}

work_hooks! {
    cmd_draw = "vkCmdDraw": PFN_vkCmdDraw @ 0 (a: u32, b: u32, c: u32, d: u32);
    cmd_draw_indexed = "vkCmdDrawIndexed": PFN_vkCmdDrawIndexed @ 0 (a: u32, b: u32, c: u32, d: i32, e: u32);
    cmd_draw_indirect = "vkCmdDrawIndirect": PFN_vkCmdDrawIndirect @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: u32, d: u32);
    cmd_draw_indexed_indirect = "vkCmdDrawIndexedIndirect": PFN_vkCmdDrawIndexedIndirect @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: u32, d: u32);
    cmd_draw_indirect_count = "vkCmdDrawIndirectCount": PFN_vkCmdDrawIndirectCount @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: vk::Buffer, d: vk::DeviceSize, e: u32, f: u32);
    cmd_draw_indirect_count_khr = "vkCmdDrawIndirectCountKHR": PFN_vkCmdDrawIndirectCount @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: vk::Buffer, d: vk::DeviceSize, e: u32, f: u32);
    cmd_draw_indirect_count_amd = "vkCmdDrawIndirectCountAMD": PFN_vkCmdDrawIndirectCount @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: vk::Buffer, d: vk::DeviceSize, e: u32, f: u32);
    cmd_draw_indexed_indirect_count = "vkCmdDrawIndexedIndirectCount": PFN_vkCmdDrawIndexedIndirectCount @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: vk::Buffer, d: vk::DeviceSize, e: u32, f: u32);
    cmd_draw_indexed_indirect_count_khr = "vkCmdDrawIndexedIndirectCountKHR": PFN_vkCmdDrawIndexedIndirectCount @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: vk::Buffer, d: vk::DeviceSize, e: u32, f: u32);
    cmd_draw_indexed_indirect_count_amd = "vkCmdDrawIndexedIndirectCountAMD": PFN_vkCmdDrawIndexedIndirectCount @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: vk::Buffer, d: vk::DeviceSize, e: u32, f: u32);
    cmd_draw_indirect_byte_count_ext = "vkCmdDrawIndirectByteCountEXT": PFN_vkCmdDrawIndirectByteCountEXT @ 0 (a: u32, b: u32, c: vk::Buffer, d: vk::DeviceSize, e: u32, f: u32);
    cmd_draw_multi_ext = "vkCmdDrawMultiEXT": PFN_vkCmdDrawMultiEXT @ 0 (a: u32, b: *const vk::MultiDrawInfoEXT, c: u32, d: u32, e: u32);
    cmd_draw_multi_indexed_ext = "vkCmdDrawMultiIndexedEXT": PFN_vkCmdDrawMultiIndexedEXT @ 0 (a: u32, b: *const vk::MultiDrawIndexedInfoEXT, c: u32, d: u32, e: u32, f: *const i32);
    cmd_draw_mesh_tasks_ext = "vkCmdDrawMeshTasksEXT": PFN_vkCmdDrawMeshTasksEXT @ 0 (a: u32, b: u32, c: u32);
    cmd_draw_mesh_tasks_indirect_ext = "vkCmdDrawMeshTasksIndirectEXT": PFN_vkCmdDrawMeshTasksIndirectEXT @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: u32, d: u32);
    cmd_draw_mesh_tasks_indirect_count_ext = "vkCmdDrawMeshTasksIndirectCountEXT": PFN_vkCmdDrawMeshTasksIndirectCountEXT @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: vk::Buffer, d: vk::DeviceSize, e: u32, f: u32);
    cmd_draw_mesh_tasks_nv = "vkCmdDrawMeshTasksNV": PFN_vkCmdDrawMeshTasksNV @ 0 (a: u32, b: u32);
    cmd_draw_mesh_tasks_indirect_nv = "vkCmdDrawMeshTasksIndirectNV": PFN_vkCmdDrawMeshTasksIndirectNV @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: u32, d: u32);
    cmd_draw_mesh_tasks_indirect_count_nv = "vkCmdDrawMeshTasksIndirectCountNV": PFN_vkCmdDrawMeshTasksIndirectCountNV @ 0 (a: vk::Buffer, b: vk::DeviceSize, c: vk::Buffer, d: vk::DeviceSize, e: u32, f: u32);
    cmd_dispatch = "vkCmdDispatch": PFN_vkCmdDispatch @ 1 (a: u32, b: u32, c: u32);
    cmd_dispatch_base = "vkCmdDispatchBase": PFN_vkCmdDispatchBase @ 1 (a: u32, b: u32, c: u32, d: u32, e: u32, f: u32);
    cmd_dispatch_base_khr = "vkCmdDispatchBaseKHR": PFN_vkCmdDispatchBase @ 1 (a: u32, b: u32, c: u32, d: u32, e: u32, f: u32);
    cmd_dispatch_indirect = "vkCmdDispatchIndirect": PFN_vkCmdDispatchIndirect @ 1 (a: vk::Buffer, b: vk::DeviceSize);
    cmd_trace_rays_khr = "vkCmdTraceRaysKHR": PFN_vkCmdTraceRaysKHR @ 2 (
        a: *const vk::StridedDeviceAddressRegionKHR, b: *const vk::StridedDeviceAddressRegionKHR,
        c: *const vk::StridedDeviceAddressRegionKHR, d: *const vk::StridedDeviceAddressRegionKHR, e: u32, f: u32, g: u32);
    cmd_trace_rays_indirect_khr = "vkCmdTraceRaysIndirectKHR": PFN_vkCmdTraceRaysIndirectKHR @ 2 (
        a: *const vk::StridedDeviceAddressRegionKHR, b: *const vk::StridedDeviceAddressRegionKHR,
        c: *const vk::StridedDeviceAddressRegionKHR, d: *const vk::StridedDeviceAddressRegionKHR, e: vk::DeviceAddress);
    cmd_trace_rays_indirect2_khr = "vkCmdTraceRaysIndirect2KHR": PFN_vkCmdTraceRaysIndirect2KHR @ 2 (a: vk::DeviceAddress);
    cmd_trace_rays_nv = "vkCmdTraceRaysNV": PFN_vkCmdTraceRaysNV @ 2 (
        a: vk::Buffer, b: vk::DeviceSize, c: vk::Buffer, d: vk::DeviceSize, e: vk::DeviceSize, f: vk::Buffer, g: vk::DeviceSize,
        h: vk::DeviceSize, i: vk::Buffer, j: vk::DeviceSize, k: vk::DeviceSize, l: u32, m: u32, n: u32);
}

// ---- state-changing commands -------------------------------------------------------------

unsafe fn device_for(cb: vk::CommandBuffer, hook: &str) -> Option<std::sync::Arc<TableDevice>> {
    let b = table_device_of_cb(cb);
    if b.is_none() {
        log_error!(LOADER_INTERFACE, "{hook}: command buffer {cb:?} of an unknown device");
    }
    b
}

pub unsafe extern "system" fn cmd_bind_pipeline(cb: vk::CommandBuffer, bp: vk::PipelineBindPoint, pipeline: vk::Pipeline) {
    guard("vkCmdBindPipeline", (), || unsafe {
        let Some(b) = device_for(cb, "vkCmdBindPipeline") else { return };
        if let Some(f) = b.next.cmd_bind_pipeline {
            f(cb, bp, pipeline);
        }
        if let Some(i) = bind_point_index(bp) {
            match b.pipelines.get(&pipeline.as_raw()).map(|l| l.as_raw()) {
                Some(layout) => b.with_cb(cb, |s| s.bind_pipeline(i, Some(layout))),
                None => {
                    if let Some(mut s) = b.cbs.get_mut(&cb.as_raw()) {
                        s.bind_pipeline(i, None);
                    }
                }
            }
        }
    })
}

/// vkCmdBindShadersEXT: each stage's shader (null: unbound; a null `pShaders`: all unbound).
pub unsafe extern "system" fn cmd_bind_shaders_ext(
    cb: vk::CommandBuffer,
    count: u32,
    stages: *const vk::ShaderStageFlags,
    shaders: *const vk::ShaderEXT,
) {
    guard("vkCmdBindShadersEXT", (), || unsafe {
        let Some(b) = device_for(cb, "vkCmdBindShadersEXT") else { return };
        if let Some(f) = b.next.cmd_bind_shaders_ext {
            f(cb, count, stages, shaders);
        }
        if stages.is_null() || count == 0 {
            return;
        }
        let stages = std::slice::from_raw_parts(stages, count as usize);
        let layouts: Vec<Option<u64>> = (0..stages.len())
            .map(|i| if shaders.is_null() { None } else { b.shader_layout(*shaders.add(i)).map(|l| l.as_raw()) })
            .collect();
        let apply = |s: &mut CbState| {
            for (stage, l) in stages.iter().zip(&layouts) {
                if let Some((bp, slot)) = shader_stage_slot(*stage) {
                    s.bind_shader(bp, slot, *l);
                }
            }
        };
        if layouts.iter().any(|l| l.is_some()) {
            b.with_cb(cb, apply);
        } else if let Some(mut s) = b.cbs.get_mut(&cb.as_raw()) {
            apply(&mut s);
        }
    })
}

/// An application bind/push at `bp` (all bind points when `None`) with `layout`.
unsafe fn app_bound(b: &TableDevice, cb: vk::CommandBuffer, bp: Option<usize>, layout: Option<u64>) {
    if let Some(mut s) = b.cbs.get_mut(&cb.as_raw()) {
        match bp {
            Some(i) => s.app_bound_sets(i, layout),
            None => (0..BIND_POINTS).for_each(|i| s.app_bound_sets(i, layout)),
        }
    }
}

/// The application bound or pushed sets for the bind points `stages` names (the *2 commands).
unsafe fn app_bound_stages(b: &TableDevice, cb: vk::CommandBuffer, stages: vk::ShaderStageFlags, layout: Option<u64>) {
    for (i, on) in bind_points_of_stages(stages).into_iter().enumerate() {
        if on {
            app_bound(b, cb, Some(i), layout);
        }
    }
}

fn raw_layout(l: vk::PipelineLayout) -> Option<u64> {
    (l != vk::PipelineLayout::null()).then(|| l.as_raw())
}

#[allow(clippy::too_many_arguments)]
pub unsafe extern "system" fn cmd_bind_descriptor_sets(
    cb: vk::CommandBuffer,
    bp: vk::PipelineBindPoint,
    layout: vk::PipelineLayout,
    first_set: u32,
    count: u32,
    sets: *const vk::DescriptorSet,
    dyn_count: u32,
    dyn_offsets: *const u32,
) {
    guard("vkCmdBindDescriptorSets", (), || unsafe {
        let Some(b) = device_for(cb, "vkCmdBindDescriptorSets") else { return };
        if let Some(f) = b.next.cmd_bind_descriptor_sets {
            f(cb, bp, layout, first_set, count, sets, dyn_count, dyn_offsets);
        }
        if let Some(i) = bind_point_index(bp) {
            app_bound(&b, cb, Some(i), raw_layout(layout));
        }
    })
}

/// vkCmdBindDescriptorSets2KHR / vkCmdBindDescriptorSets2 (VK_KHR_maintenance6, Vulkan 1.4).
unsafe fn bind_sets2(hook: &'static str, cb: vk::CommandBuffer, info: *const vk::BindDescriptorSetsInfoKHR, core: bool) {
    guard(hook, (), || unsafe {
        let Some(b) = device_for(cb, hook) else { return };
        let f = if core { b.next.cmd_bind_descriptor_sets2 } else { b.next.cmd_bind_descriptor_sets2_khr };
        if let Some(f) = f {
            f(cb, info);
        }
        if let Some(info) = info.as_ref() {
            app_bound_stages(&b, cb, info.stage_flags, raw_layout(info.layout));
        }
    })
}

pub unsafe extern "system" fn cmd_bind_descriptor_sets2_khr(cb: vk::CommandBuffer, info: *const vk::BindDescriptorSetsInfoKHR) {
    bind_sets2("vkCmdBindDescriptorSets2KHR", cb, info, false)
}

pub unsafe extern "system" fn cmd_bind_descriptor_sets2(cb: vk::CommandBuffer, info: *const vk::BindDescriptorSetsInfoKHR) {
    bind_sets2("vkCmdBindDescriptorSets2", cb, info, true)
}

/// vkCmdPushDescriptorSet(KHR): the KHR and core entry points, with their own next pointers.
#[allow(clippy::too_many_arguments)]
unsafe fn push_set(
    hook: &'static str,
    cb: vk::CommandBuffer,
    bp: vk::PipelineBindPoint,
    layout: vk::PipelineLayout,
    set: u32,
    count: u32,
    writes: *const vk::WriteDescriptorSet,
    core: bool,
) {
    guard(hook, (), || unsafe {
        let Some(b) = device_for(cb, hook) else { return };
        let f = if core { b.next.cmd_push_descriptor_set } else { b.next.cmd_push_descriptor_set_khr };
        if let Some(f) = f {
            f(cb, bp, layout, set, count, writes);
        }
        app_bound(&b, cb, bind_point_index(bp), raw_layout(layout));
    })
}

pub unsafe extern "system" fn cmd_push_descriptor_set_khr(
    cb: vk::CommandBuffer,
    bp: vk::PipelineBindPoint,
    layout: vk::PipelineLayout,
    set: u32,
    count: u32,
    writes: *const vk::WriteDescriptorSet,
) {
    push_set("vkCmdPushDescriptorSetKHR", cb, bp, layout, set, count, writes, false)
}

pub unsafe extern "system" fn cmd_push_descriptor_set(
    cb: vk::CommandBuffer,
    bp: vk::PipelineBindPoint,
    layout: vk::PipelineLayout,
    set: u32,
    count: u32,
    writes: *const vk::WriteDescriptorSet,
) {
    push_set("vkCmdPushDescriptorSet", cb, bp, layout, set, count, writes, true)
}

/// vkCmdPushDescriptorSetWithTemplate(KHR). The template's bind point is not known here:
/// every bind point counts as touched.
unsafe fn push_with_template(
    hook: &'static str,
    cb: vk::CommandBuffer,
    template: vk::DescriptorUpdateTemplate,
    layout: vk::PipelineLayout,
    set: u32,
    data: *const c_void,
    core: bool,
) {
    guard(hook, (), || unsafe {
        let Some(b) = device_for(cb, hook) else { return };
        let f = if core { b.next.cmd_push_descriptor_set_with_template } else { b.next.cmd_push_descriptor_set_with_template_khr };
        if let Some(f) = f {
            f(cb, template, layout, set, data);
        }
        app_bound(&b, cb, None, raw_layout(layout));
    })
}

pub unsafe extern "system" fn cmd_push_descriptor_set_with_template_khr(
    cb: vk::CommandBuffer,
    template: vk::DescriptorUpdateTemplate,
    layout: vk::PipelineLayout,
    set: u32,
    data: *const c_void,
) {
    push_with_template("vkCmdPushDescriptorSetWithTemplateKHR", cb, template, layout, set, data, false)
}

pub unsafe extern "system" fn cmd_push_descriptor_set_with_template(
    cb: vk::CommandBuffer,
    template: vk::DescriptorUpdateTemplate,
    layout: vk::PipelineLayout,
    set: u32,
    data: *const c_void,
) {
    push_with_template("vkCmdPushDescriptorSetWithTemplate", cb, template, layout, set, data, true)
}

/// vkCmdPushDescriptorSet2KHR (VK_KHR_maintenance6): the bind points its stageFlags name.
pub unsafe extern "system" fn cmd_push_descriptor_set2_khr(cb: vk::CommandBuffer, info: *const vk::PushDescriptorSetInfoKHR) {
    guard("vkCmdPushDescriptorSet2KHR", (), || unsafe {
        let Some(b) = device_for(cb, "vkCmdPushDescriptorSet2KHR") else { return };
        if let Some(f) = b.next.cmd_push_descriptor_set2_khr {
            f(cb, info);
        }
        if let Some(info) = info.as_ref() {
            app_bound_stages(&b, cb, info.stage_flags, raw_layout(info.layout));
        }
    })
}

/// The template's bind point is not known here: every bind point counts as touched.
pub unsafe extern "system" fn cmd_push_descriptor_set_with_template2_khr(
    cb: vk::CommandBuffer,
    info: *const vk::PushDescriptorSetWithTemplateInfoKHR,
) {
    guard("vkCmdPushDescriptorSetWithTemplate2KHR", (), || unsafe {
        let Some(b) = device_for(cb, "vkCmdPushDescriptorSetWithTemplate2KHR") else { return };
        if let Some(f) = b.next.cmd_push_descriptor_set_with_template2_khr {
            f(cb, info);
        }
        app_bound(&b, cb, None, info.as_ref().and_then(|i| raw_layout(i.layout)));
    })
}

pub unsafe extern "system" fn cmd_execute_commands(cb: vk::CommandBuffer, count: u32, cbs: *const vk::CommandBuffer) {
    guard("vkCmdExecuteCommands", (), || unsafe {
        let Some(b) = device_for(cb, "vkCmdExecuteCommands") else { return };
        if let Some(f) = b.next.cmd_execute_commands {
            f(cb, count, cbs);
        }
        if let Some(mut s) = b.cbs.get_mut(&cb.as_raw()) {
            s.forget_all();
        };
    })
}

pub unsafe extern "system" fn begin_command_buffer(cb: vk::CommandBuffer, info: *const vk::CommandBufferBeginInfo) -> vk::Result {
    guard("vkBeginCommandBuffer", vk::Result::ERROR_UNKNOWN, || unsafe {
        let Some(b) = device_for(cb, "vkBeginCommandBuffer") else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        b.cbs.remove(&cb.as_raw());
        match b.next.begin_command_buffer {
            Some(f) => f(cb, info),
            None => vk::Result::ERROR_INITIALIZATION_FAILED,
        }
    })
}

pub unsafe extern "system" fn reset_command_buffer(cb: vk::CommandBuffer, flags: vk::CommandBufferResetFlags) -> vk::Result {
    guard("vkResetCommandBuffer", vk::Result::ERROR_UNKNOWN, || unsafe {
        let Some(b) = device_for(cb, "vkResetCommandBuffer") else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        b.cbs.remove(&cb.as_raw());
        match b.next.reset_command_buffer {
            Some(f) => f(cb, flags),
            None => vk::Result::ERROR_INITIALIZATION_FAILED,
        }
    })
}

pub unsafe extern "system" fn allocate_command_buffers(
    device: vk::Device,
    info: *const vk::CommandBufferAllocateInfo,
    out: *mut vk::CommandBuffer,
) -> vk::Result {
    guard("vkAllocateCommandBuffers", vk::Result::ERROR_UNKNOWN, || unsafe {
        let Some(b) = super::table_device(device) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(f) = b.next.allocate_command_buffers else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let r = f(device, info, out);
        if r == vk::Result::SUCCESS {
            if let (Some(info), false) = (info.as_ref(), out.is_null()) {
                let list = std::slice::from_raw_parts(out, info.command_buffer_count as usize);
                b.pools.entry(info.command_pool.as_raw()).or_default().extend(list.iter().map(|c| c.as_raw()));
            }
        }
        r
    })
}

pub unsafe extern "system" fn free_command_buffers(device: vk::Device, pool: vk::CommandPool, count: u32, cbs: *const vk::CommandBuffer) {
    guard("vkFreeCommandBuffers", (), || unsafe {
        let Some(b) = super::table_device(device) else { return };
        if !cbs.is_null() {
            let list = std::slice::from_raw_parts(cbs, count as usize);
            for c in list {
                b.cbs.remove(&c.as_raw());
            }
            if let Some(mut p) = b.pools.get_mut(&pool.as_raw()) {
                p.retain(|c| !list.iter().any(|x| x.as_raw() == *c));
            }
        }
        if let Some(f) = b.next.free_command_buffers {
            f(device, pool, count, cbs);
        }
    })
}

pub unsafe extern "system" fn destroy_command_pool(device: vk::Device, pool: vk::CommandPool, p_allocator: *const vk::AllocationCallbacks) {
    guard("vkDestroyCommandPool", (), || unsafe {
        let Some(b) = super::table_device(device) else { return };
        if let Some((_, list)) = b.pools.remove(&pool.as_raw()) {
            for c in list {
                b.cbs.remove(&c);
            }
        }
        if let Some(f) = b.next.destroy_command_pool {
            f(device, pool, p_allocator);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_once_until_disturbed() {
        let mut s = CbState::default();
        // Nothing bound: nothing to do.
        assert_eq!(s.before_work(1), None);
        s.bind_pipeline(1, Some(100));
        assert_eq!(s.before_work(1), Some(100));
        assert_eq!(s.before_work(1), None, "bound already");
        // The application binds its sets with the same layout: the table stays bound.
        s.app_bound_sets(1, Some(100));
        assert_eq!(s.before_work(1), None);
        // ... with another layout: rebind.
        s.app_bound_sets(1, Some(200));
        assert_eq!(s.before_work(1), Some(100));
        // Unknown layout (maintenance6 with a chained layout info): rebind.
        s.app_bound_sets(1, None);
        assert_eq!(s.before_work(1), Some(100));
        // Other bind points are independent.
        assert_eq!(s.before_work(0), None);
        s.app_bound_sets(0, Some(300));
        assert_eq!(s.before_work(1), None);
    }

    #[test]
    fn pipeline_changes() {
        let mut s = CbState::default();
        s.bind_pipeline(0, Some(100));
        assert_eq!(s.before_work(0), Some(100));
        // A pipeline using the table with another layout: rebind with that one.
        s.bind_pipeline(0, Some(101));
        assert_eq!(s.before_work(0), Some(101));
        // Back to the first: its layout differs from the one the table was bound with.
        s.bind_pipeline(0, Some(100));
        assert_eq!(s.before_work(0), Some(100));
        // A plain pipeline: nothing; and the table binding is kept for a return.
        s.bind_pipeline(0, None);
        assert_eq!(s.before_work(0), None);
        s.bind_pipeline(0, Some(100));
        assert_eq!(s.before_work(0), None);
        // Secondary command buffers executed: everything unknown.
        s.forget_all();
        assert_eq!(s.before_work(0), None, "no pipeline known after vkCmdExecuteCommands");
        s.bind_pipeline(0, Some(100));
        assert_eq!(s.before_work(0), Some(100));
    }

    #[test]
    fn shader_objects() {
        type F = vk::ShaderStageFlags;
        let slot = |f| shader_stage_slot(f).unwrap();
        assert_eq!(slot(F::COMPUTE), (1, 5));
        assert_eq!(slot(F::VERTEX), (0, 0));
        assert_eq!(slot(F::FRAGMENT), (0, 4));
        assert_eq!(slot(F::MESH_EXT), (0, 7));
        assert_eq!(shader_stage_slot(F::RAYGEN_KHR), None);
        assert_eq!(shader_stage_slot(F::VERTEX | F::FRAGMENT), None);
        let mut s = CbState::default();
        // A bindless compute shader: the table is bound with its layout, once.
        let (c, cs) = slot(F::COMPUTE);
        s.bind_shader(c, cs, Some(500));
        assert_eq!(s.before_work(1), Some(500));
        assert_eq!(s.before_work(1), None);
        assert_eq!(s.before_work(0), None, "graphics untouched");
        // The application binds its sets (with its own layout): rebind.
        s.app_bound_sets(1, Some(100));
        assert_eq!(s.before_work(1), Some(500));
        // Unbinding the stage (null shader): nothing to bind.
        s.bind_shader(c, cs, None);
        assert_eq!(s.before_work(1), None);
        // A non-pipeline using the table replaces shaders; a shader using the table then replaces it.
        s.bind_shader(c, cs, Some(501));
        s.bind_pipeline(1, None);
        assert_eq!(s.before_work(1), None, "pipeline bind unbinds the shader objects");
        s.bind_shader(c, cs, Some(501));
        assert_eq!(s.before_work(1), Some(501));
        // A pipeline using the table after shaders: its layout.
        s.bind_pipeline(1, Some(100));
        assert_eq!(s.before_work(1), Some(100));
        // Binding shaders unbinds the pipeline: a plain shader leaves nothing to bind.
        s.bind_shader(c, cs, None);
        assert_eq!(s.before_work(1), None);
        // Graphics: any bindless stage decides; others unbinding leaves it.
        let (g, vs) = slot(F::VERTEX);
        let (_, fs) = slot(F::FRAGMENT);
        s.bind_shader(g, vs, None);
        s.bind_shader(g, fs, Some(600));
        assert_eq!(s.before_work(0), Some(600));
        s.bind_shader(g, vs, None);
        assert_eq!(s.before_work(0), None, "same layout still bound");
        s.bind_shader(g, vs, Some(601));
        assert_eq!(s.before_work(0), Some(601), "first bindless stage's layout");
        s.bind_shader(g, vs, None);
        s.bind_shader(g, fs, None);
        assert_eq!(s.before_work(0), None);
        // vkCmdExecuteCommands forgets shaders too.
        s.bind_shader(c, cs, Some(700));
        s.forget_all();
        assert_eq!(s.before_work(1), None);
    }

    #[test]
    fn stage_flags_to_bind_points() {
        assert_eq!(bind_points_of_stages(vk::ShaderStageFlags::COMPUTE), [false, true, false]);
        assert_eq!(bind_points_of_stages(vk::ShaderStageFlags::FRAGMENT | vk::ShaderStageFlags::VERTEX), [true, false, false]);
        assert_eq!(bind_points_of_stages(vk::ShaderStageFlags::RAYGEN_KHR), [false, false, true]);
        assert_eq!(bind_points_of_stages(vk::ShaderStageFlags::ALL), [true, true, true]);
        assert_eq!(bind_point_index(vk::PipelineBindPoint::RAY_TRACING_KHR), Some(2));
    }
}
