//! The bench rig: host-visible buffers, and pipelines with pre-recorded command buffers
//! (timestamps around one dispatch) bound to one input and one of two outputs.
use super::*;
use polyfill_e2e::ash::vk;
use polyfill_e2e::Context;
use std::time::{Duration, Instant};

pub struct HostBuffer {
    pub buffer: vk::Buffer,
    pub memory: vk::DeviceMemory,
    pub ptr: *mut u8,
    pub size: usize,
}

impl HostBuffer {
    pub fn new(ctx: &Context, size: usize) -> HostBuffer {
        let d = ctx.device();
        let bci = vk::BufferCreateInfo::default()
            .size(size as u64)
            .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        let buffer = ok(unsafe { d.create_buffer(&bci, None) }, "vkCreateBuffer");
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        let props = unsafe { ctx.instance().get_physical_device_memory_properties(ctx.physical_device()) };
        let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let mt = (0..props.memory_type_count)
            .find(|&i| req.memory_type_bits & (1 << i) != 0 && props.memory_types[i as usize].property_flags.contains(want))
            .unwrap_or_else(|| fail("no host-visible coherent memory type"));
        let mai = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(mt);
        let memory = ok(unsafe { d.allocate_memory(&mai, None) }, "vkAllocateMemory");
        check(unsafe { d.bind_buffer_memory(buffer, memory, 0) }, "vkBindBufferMemory");
        let ptr = ok(unsafe { d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }, "vkMapMemory") as *mut u8;
        HostBuffer { buffer, memory, ptr, size }
    }
    pub fn write(&self, data: &[u8]) {
        assert!(data.len() <= self.size);
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr, data.len()) };
    }
    pub fn fill(&self, byte: u8) {
        unsafe { std::ptr::write_bytes(self.ptr, byte, self.size) };
    }
    pub fn read(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.size];
        unsafe { std::ptr::copy_nonoverlapping(self.ptr, v.as_mut_ptr(), self.size) };
        v
    }
    pub fn destroy(&self, ctx: &Context) {
        let d = ctx.device();
        unsafe {
            d.unmap_memory(self.memory);
            d.destroy_buffer(self.buffer, None);
            d.free_memory(self.memory, None);
        }
    }
}

/// CPU time of the whole process (every thread), in ms.
pub fn process_cpu_ms() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

/// One pipeline with its pre-recorded command buffer (timestamps around one dispatch).
pub struct Job {
    pub name: String,
    pub module: vk::ShaderModule,
    pub pipeline: vk::Pipeline,
    pub cmd: vk::CommandBuffer,
    pub queries: vk::QueryPool,
    /// Which output buffer it writes (0 = A's, 1 = B's).
    pub out: usize,
    pub ts_ms: Vec<f64>,
    pub wall_ms: Vec<f64>,
    pub create_ms: f64,
}

pub struct Rig<'a> {
    ctx: &'a Context,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    pool: vk::DescriptorPool,
    sets: [vk::DescriptorSet; 2],
    cmd_pool: vk::CommandPool,
    fence: vk::Fence,
    pub timestamps: bool,
    ts_period_ns: f64,
    ts_mask: u64,
    groups: u32,
}

impl<'a> Rig<'a> {
    pub fn new(ctx: &'a Context, input: &HostBuffer, outs: [&HostBuffer; 2], groups: u32) -> Rig<'a> {
        let d = ctx.device();
        let (set_layout, layout, pool, v) = two_storage_buffers(ctx, 2);
        let sets = [v[0], v[1]];
        for (k, out) in outs.iter().enumerate() {
            let ii = [vk::DescriptorBufferInfo { buffer: input.buffer, offset: 0, range: vk::WHOLE_SIZE }];
            let oi = [vk::DescriptorBufferInfo { buffer: out.buffer, offset: 0, range: vk::WHOLE_SIZE }];
            let w = [
                vk::WriteDescriptorSet::default()
                    .dst_set(sets[k])
                    .dst_binding(0)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&ii),
                vk::WriteDescriptorSet::default()
                    .dst_set(sets[k])
                    .dst_binding(1)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&oi),
            ];
            unsafe { d.update_descriptor_sets(&w, &[]) };
        }
        let cmd_pool = ok(
            unsafe { d.create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(ctx.queue_family()), None) },
            "vkCreateCommandPool",
        );
        let fence = ok(unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }, "vkCreateFence");
        let families = unsafe { ctx.instance().get_physical_device_queue_family_properties(ctx.physical_device()) };
        let bits = families[ctx.queue_family() as usize].timestamp_valid_bits;
        let ts_mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        Rig {
            ctx,
            set_layout,
            layout,
            pool,
            sets,
            cmd_pool,
            fence,
            timestamps: bits > 0 && ctx.limits().timestamp_period > 0.0,
            ts_period_ns: ctx.limits().timestamp_period as f64,
            ts_mask,
            groups,
        }
    }

    pub fn job(&self, name: &str, words: &[u32], out: usize) -> Job {
        let d = self.ctx.device();
        let t = Instant::now();
        let module = self.ctx.create_shader_module(words).unwrap_or_else(|e| fail(&format!("{name}: vkCreateShaderModule: {e:?}")));
        let pipeline = compute_pipeline(self.ctx, module, self.layout, &format!("{name}: vkCreateComputePipelines"));
        let create_ms = t.elapsed().as_secs_f64() * 1e3;
        let queries = ok(
            unsafe {
                d.create_query_pool(&vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(2), None)
            },
            "vkCreateQueryPool",
        );
        let cmd = ok(
            unsafe {
                d.allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(self.cmd_pool)
                        .level(vk::CommandBufferLevel::PRIMARY)
                        .command_buffer_count(1),
                )
            },
            "vkAllocateCommandBuffers",
        )[0];
        unsafe {
            check(d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default()), "vkBeginCommandBuffer");
            if self.timestamps {
                d.cmd_reset_query_pool(cmd, queries, 0, 2);
                d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, queries, 0);
            }
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
            d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, self.layout, 0, &[self.sets[out]], &[]);
            d.cmd_dispatch(cmd, self.groups, 1, 1);
            if self.timestamps {
                d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, queries, 1);
            }
            polyfill_e2e::vk::cmd_shader_writes_to_host(d, cmd);
            check(d.end_command_buffer(cmd), "vkEndCommandBuffer");
        }
        Job { name: name.to_string(), module, pipeline, cmd, queries, out, ts_ms: vec![], wall_ms: vec![], create_ms }
    }

    /// Submits the job's command buffer and waits. Returns (timestamp ms, wall ms).
    pub fn run(&self, job: &Job) -> (f64, f64) {
        let d = self.ctx.device();
        let cbs = [job.cmd];
        let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
        let t = Instant::now();
        {
            let q = self.ctx.queue();
            check(unsafe { d.queue_submit(*q, &submit, self.fence) }, "vkQueueSubmit");
        }
        check(unsafe { d.wait_for_fences(&[self.fence], true, Duration::from_secs(120).as_nanos() as u64) }, "vkWaitForFences");
        let wall = t.elapsed().as_secs_f64() * 1e3;
        check(unsafe { d.reset_fences(&[self.fence]) }, "vkResetFences");
        let ts = if self.timestamps {
            let mut v = [0u64; 2];
            check(
                unsafe { d.get_query_pool_results(job.queries, 0, &mut v, vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT) },
                "vkGetQueryPoolResults",
            );
            ((v[1].wrapping_sub(v[0])) & self.ts_mask) as f64 * self.ts_period_ns / 1e6
        } else {
            f64::NAN
        };
        (ts, wall)
    }

    /// Runs every job once (warm-up), then `reps` rounds of all of them in an order that rotates
    /// every round (so each is measured side by side with the others), recording each run's
    /// times in its job. Returns the timed rounds' wall time in seconds.
    pub fn rounds(&self, jobs: &mut [Job], reps: usize) -> f64 {
        for j in jobs.iter() {
            self.run(j);
        }
        let started = Instant::now();
        for j in rotating(jobs.len(), reps) {
            let (ts, wall) = self.run(&jobs[j]);
            jobs[j].ts_ms.push(ts);
            jobs[j].wall_ms.push(wall);
        }
        started.elapsed().as_secs_f64()
    }

    /// Creates a shader module from `words` and a compute pipeline from it (no pipeline cache),
    /// then destroys both. Returns (vkCreateShaderModule ms, vkCreateComputePipelines ms) in CPU
    /// time of the whole process (every thread the driver uses, and not moved by other processes
    /// taking the machine's cores, which stretches wall times of such short calls to whole
    /// scheduler slices): with the layer, the first includes its rewrite and the second is the
    /// driver compiling what the layer handed it.
    pub fn create_ms(&self, words: &[u32]) -> (f64, f64) {
        let d = self.ctx.device();
        let t = process_cpu_ms();
        let module = self.ctx.create_shader_module(words).unwrap_or_else(|e| fail(&format!("vkCreateShaderModule: {e:?}")));
        let module_ms = process_cpu_ms() - t;
        let t = process_cpu_ms();
        let pipeline = compute_pipeline(self.ctx, module, self.layout, "vkCreateComputePipelines");
        let pipeline_ms = process_cpu_ms() - t;
        unsafe { d.destroy_pipeline(pipeline, None) };
        self.ctx.destroy_shader_module(module);
        (module_ms, pipeline_ms)
    }

    pub fn destroy_job(&self, job: &Job) {
        let d = self.ctx.device();
        unsafe {
            d.free_command_buffers(self.cmd_pool, &[job.cmd]);
            d.destroy_query_pool(job.queries, None);
            d.destroy_pipeline(job.pipeline, None);
        }
        self.ctx.destroy_shader_module(job.module);
    }

    pub fn destroy(&self) {
        let d = self.ctx.device();
        unsafe {
            let _ = d.device_wait_idle();
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.cmd_pool, None);
        }
        destroy_two_storage_buffers(self.ctx, self.set_layout, self.layout, self.pool);
    }
}

