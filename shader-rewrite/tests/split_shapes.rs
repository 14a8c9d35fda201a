//! Bounds checks split the caller's block: a matrix of the blocks that can hold a robust access
//! (straight code, a loop that is its own continue target, a loop header, a continue target, a
//! selection and a switch header, each with OpPhis in its successors) × robust loads/stores ×
//! image objects used across the access × debug locations. Every output must pass spirv-val,
//! keep image objects in the block that uses them, and start every block with the debug
//! location in effect.
mod common;
use common::{disassemble, rewrite_valid};
use shader_rewrite::{Options, Target};
use spvasm::{Module, GID_X};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Container {
    Straight,
    /// `OpLoopMerge %merge %self`: a single-block loop.
    SelfLoop,
    LoopHeader,
    ContinueTarget,
    Selection,
    Switch,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Access {
    StorePerElement,
    StorePerComponentVec2,
    LoadPerElement,
    LoadPerComponentVec2,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Images {
    None,
    /// One OpSampledImage sampled before and after the access.
    SharedSampledImage,
    /// Image and sampler loaded before the access, combined and sampled after it.
    LoadsBefore,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Location {
    None,
    OpLine,
    /// OpLine plus NonSemantic.Shader.DebugInfo.100 DebugScope and DebugLine.
    DebugInfo,
}

#[derive(Debug, Clone, Copy)]
struct Shape {
    container: Container,
    access: Access,
    images: Images,
    location: Location,
}

/// The module every shape starts from: `%buf` and `%buf2` (`uint[]`, bindings 0 and 1), a
/// texture `%tex` and a sampler `%sampler` (bindings 2 and 3), the source file `%file`.
fn head() -> Module {
    Module::compute(1)
        .raw_access_chains()
        .debug("%file = OpString \"split.hlsl\"")
        .gid()
        .word_buffers(&["buf", "buf2"])
        .texture_and_sampler(2, 3)
        .globals("%fhalf = OpConstant %f32 0.5\n%coord = OpConstantComposite %v2f %fhalf %fhalf")
}

/// The debug-info declarations of `Location::DebugInfo` (NonSemantic.Shader.DebugInfo.100 takes
/// every operand as a constant id).
const DEBUG_INFO_DECLS: &str = "%src = OpExtInst %void %dbg DebugSource %file
%cu = OpExtInst %void %dbg DebugCompilationUnit %c1 %c4 %src %c1
";

impl Shape {
    fn all() -> impl Iterator<Item = Shape> {
        use Container::*;
        [Straight, SelfLoop, LoopHeader, ContinueTarget, Selection, Switch].into_iter().flat_map(|container| {
            use Access::*;
            [StorePerElement, StorePerComponentVec2, LoadPerElement, LoadPerComponentVec2].into_iter().flat_map(move |access| {
                [Images::None, Images::SharedSampledImage, Images::LoadsBefore].into_iter().flat_map(move |images| {
                    [Location::None, Location::OpLine, Location::DebugInfo].into_iter().map(move |location| Shape { container, access, images, location })
                })
            })
        })
    }

    fn module(&self) -> String {
        self.module_on(head(), "%buf")
    }

    /// The shape's module on `m`, its robust access on the buffer `base` (an id of the body).
    fn module_on(&self, m: Module, base: &str) -> String {
        let m = match self.location {
            Location::DebugInfo => m.ext("SPV_KHR_non_semantic_info").import("%dbg", "NonSemantic.Shader.DebugInfo.100").globals(DEBUG_INFO_DECLS),
            _ => m,
        };
        m.function(&format!("%main = OpFunction %void None %fn\n{}OpFunctionEnd", self.blocks(base))).text()
    }

    /// The first instructions of original block `n` (after its OpPhis): the debug location.
    fn start(&self, n: u32) -> String {
        match self.location {
            Location::None => String::new(),
            Location::OpLine => format!("OpLine %file {n} 1\n"),
            Location::DebugInfo => format!("OpLine %file {n} 1\n%scope{n} = OpExtInst %void %dbg DebugScope %cu\n%line{n} = OpExtInst %void %dbg DebugLine %src %c{n} %c{n} %c1 %c1\n"),
        }
    }

    /// The function's blocks: an entry block, then the container holding `body` (which uses `%k`).
    fn blocks(&self, base: &str) -> String {
        let entry = format!("%entry = OpLabel\n{}{GID_X}\n", self.start(1));
        let body = self.body(base);
        let (s3, s4, s8) = (self.start(3), self.start(4), self.start(8));
        match self.container {
            Container::Straight => format!(
                "{entry}%k = OpCopyObject %u32 %i\n{body}OpBranch %next\n%next = OpLabel\n%ph = OpPhi %u32 %k %entry\n{s3}OpReturn\n"
            ),
            Container::SelfLoop => format!(
                "{entry}OpBranch %loop\n%loop = OpLabel\n%k = OpPhi %u32 %i %entry %k2 %loop\n{s3}{body}%k2 = OpIAdd %u32 %k %c1\n%more = OpULessThan %bool %k2 %c8\nOpLoopMerge %exit %loop None\nOpBranchConditional %more %loop %exit\n%exit = OpLabel\n%ph = OpPhi %u32 %k2 %loop\n{s4}OpReturn\n"
            ),
            Container::LoopHeader => format!(
                "{entry}OpBranch %hdr\n%hdr = OpLabel\n%k = OpPhi %u32 %i %entry %k2 %cont\n{s3}{body}%more = OpULessThan %bool %k %c8\nOpLoopMerge %exit %cont None\nOpBranchConditional %more %cont %exit\n%cont = OpLabel\n{s8}%k2 = OpIAdd %u32 %k %c1\nOpBranch %hdr\n%exit = OpLabel\n%ph = OpPhi %u32 %k %hdr\n{s4}OpReturn\n"
            ),
            Container::ContinueTarget => format!(
                "{entry}OpBranch %hdr\n%hdr = OpLabel\n%k = OpPhi %u32 %i %entry %k2 %cont\n{s8}%more = OpULessThan %bool %k %c8\nOpLoopMerge %exit %cont None\nOpBranchConditional %more %cont %exit\n%cont = OpLabel\n{s3}{body}%k2 = OpIAdd %u32 %k %c1\nOpBranch %hdr\n%exit = OpLabel\n%ph = OpPhi %u32 %k %hdr\n{s4}OpReturn\n"
            ),
            Container::Selection => format!(
                "{entry}%k = OpCopyObject %u32 %i\n{body}%odd = OpULessThan %bool %k %c4\nOpSelectionMerge %m None\nOpBranchConditional %odd %then %m\n%then = OpLabel\n{s3}OpBranch %m\n%m = OpLabel\n%ph = OpPhi %u32 %c1 %then %c0 %entry\n{s4}OpReturn\n"
            ),
            Container::Switch => format!(
                "{entry}%k = OpCopyObject %u32 %i\n{body}OpSelectionMerge %m None\nOpSwitch %k %m 1 %case\n%case = OpLabel\n{s3}OpBranch %m\n%m = OpLabel\n%ph = OpPhi %u32 %c1 %case %c0 %entry\n{s4}OpReturn\n"
            ),
        }
    }

    /// Image work before the access, the robust access (on `base`, `%buf` or an access chain
    /// into `%bufs` the body makes), image work after it, and a plain store of everything into
    /// `buf2`.
    fn body(&self, base: &str) -> String {
        let (chain, base) = match base {
            "%buf" => ("", base),
            _ => ("%b = OpAccessChain %ps_blk %bufs %k\n", "%b"),
        };
        let before = match self.images {
            Images::None => "",
            Images::SharedSampledImage => "%im = OpLoad %img %tex\n%sm = OpLoad %smp %sampler\n%si = OpSampledImage %simg %im %sm\n%s1 = OpImageSampleExplicitLod %v4f %si %coord Lod %f0\n%s1x = OpCompositeExtract %f32 %s1 0\n%val = OpConvertFToU %u32 %s1x\n",
            Images::LoadsBefore => "%im = OpLoad %img %tex\n%sm = OpLoad %smp %sampler\n",
        };
        let val = if self.images == Images::SharedSampledImage { "%val" } else { "%k" };
        let access = match self.access {
            Access::StorePerElement => format!("{chain}%p = OpRawAccessChainNV %ps_u32 {base} %c4 %k %c0 RobustnessPerElementNV\nOpStore %p {val} Aligned 4\n%res = OpCopyObject %u32 {val}\n"),
            Access::StorePerComponentVec2 => format!("%off = OpIMul %u32 %k %c8\n%vv = OpCompositeConstruct %v2u {val} %k\n{chain}%p = OpRawAccessChainNV %ps_v2u {base} %c0 %c0 %off RobustnessPerComponentNV\nOpStore %p %vv Aligned 8\n%res = OpCopyObject %u32 {val}\n"),
            Access::LoadPerElement => format!("{chain}%p = OpRawAccessChainNV %ps_u32 {base} %c4 %k %c0 RobustnessPerElementNV\n%res = OpLoad %u32 %p Aligned 4\n"),
            Access::LoadPerComponentVec2 => format!("%off = OpIMul %u32 %k %c8\n{chain}%p = OpRawAccessChainNV %ps_v2u {base} %c0 %c0 %off RobustnessPerComponentNV\n%ld = OpLoad %v2u %p Aligned 8\n%res = OpCompositeExtract %u32 %ld 0\n"),
        };
        let after = match self.images {
            Images::None => "%out = OpCopyObject %u32 %res\n",
            Images::SharedSampledImage => "%s2 = OpImageSampleExplicitLod %v4f %si %coord Lod %f0\n%s2x = OpCompositeExtract %f32 %s2 0\n%s2u = OpConvertFToU %u32 %s2x\n%out = OpIAdd %u32 %res %s2u\n",
            Images::LoadsBefore => "%si = OpSampledImage %simg %im %sm\n%s2 = OpImageSampleExplicitLod %v4f %si %coord Lod %f0\n%s2x = OpCompositeExtract %f32 %s2 0\n%s2u = OpConvertFToU %u32 %s2x\n%out = OpIAdd %u32 %res %s2u\n",
        };
        format!("{before}{access}{after}%q = OpRawAccessChainNV %ps_u32 %buf2 %c4 %k %c0\nOpStore %q %out Aligned 4\n")
    }
}

/// The blocks of a disassembled function: per block, its lines.
fn blocks_of(dis: &str) -> Vec<Vec<&str>> {
    let body = &dis[dis.find("OpFunction ").expect("a function")..];
    let mut blocks: Vec<Vec<&str>> = vec![];
    for line in body.lines().map(str::trim) {
        if line.ends_with("= OpLabel") {
            blocks.push(vec![]);
        } else if let Some(b) = blocks.last_mut() {
            b.push(line);
        }
    }
    blocks
}

/// "All OpSampledImage instructions, or instructions that load an image or sampler reference,
/// must be in the same block in which their Result <id> are consumed" (SPIR-V spec 2.16.1),
/// loads included (spirv-val checks only OpSampledImage).
fn assert_image_objects_local(dis: &str) {
    let image_types: Vec<&str> = dis
        .lines()
        .filter(|l| l.contains("OpTypeImage") || l.contains("OpTypeSampler") || l.contains("OpTypeSampledImage"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let blocks = blocks_of(dis);
    for (n, blk) in blocks.iter().enumerate() {
        for line in blk {
            let w: Vec<&str> = line.split_whitespace().collect();
            let made_here = w.len() > 3 && (w[2] == "OpSampledImage" || (w[2] == "OpLoad" && image_types.contains(&w[3])));
            if !made_here {
                continue;
            }
            for (m, other) in blocks.iter().enumerate().filter(|(m, _)| *m != n) {
                let used = other.iter().any(|l| l.split_whitespace().skip(1).any(|t| t == w[0]));
                assert!(!used, "{} is made in block {n} and used in block {m}:\n{dis}", w[0]);
            }
        }
    }
}

/// Every block starts with the debug location in effect (each original block sets one).
fn assert_locations_carried(dis: &str, location: Location) {
    let wanted: &[&str] = match location {
        Location::None => return,
        Location::OpLine => &["OpLine"],
        Location::DebugInfo => &["OpLine", "DebugScope", "DebugLine"],
    };
    // The entry block is never a new piece (and its range lengths come before its location);
    // a split loop header keeps only its OpPhis and control flow.
    let control = ["OpPhi", "OpLoopMerge", "OpBranch"];
    for blk in blocks_of(dis).iter().skip(1).filter(|blk| !blk.iter().all(|l| control.iter().any(|c| l.contains(c)))) {
        let leading: Vec<&&str> = blk.iter().take_while(|l| l.contains("OpPhi") || wanted.iter().any(|w| l.contains(w))).collect();
        for w in wanted {
            assert!(leading.iter().any(|l| l.contains(w)), "a block does not start with its {w}: {blk:#?}\n{dis}");
        }
    }
}

#[test]
fn every_split_shape_validates() {
    // Every feature, but the driver's robustness rounding ranges to words: the lowering's own
    // checks split the blocks (with robustBufferAccess2 to the byte some accesses need none).
    let checked = Options { target: Target { robust_storage_byte_exact: false, ..Target::all() }, ..Options::default() };
    let core = Options { target: Target::core(), ..Options::default() };
    let mut count = 0;
    for (n, shape) in Shape::all().enumerate() {
        let options = if n % 2 == 0 { checked } else { core };
        let text = shape.module();
        eprintln!("{shape:?}");
        let (words, stats) = rewrite_valid(&text, "vulkan1.1", &options);
        assert_eq!(stats.raw_chains, 2, "{shape:?}");
        let dis = disassemble(&words);
        assert_image_objects_local(&dis);
        assert_locations_carried(&dis, shape.location);
        count += 1;
    }
    assert_eq!(count, 6 * 4 * 3 * 3);
}

/// The waterfall loop of the lavapipe array-length quirk splits blocks too (a loop inside the
/// split block, inside a split self-continue loop here); a NonUniform OpSampledImage made again
/// after a split keeps its decoration.
#[test]
fn waterfall_pieces_and_nonuniform_sampled_images() {
    let quirk = Options { target: Target { nonuniform_array_length_broken: true, robust_storage_byte_exact: false, ..Target::all() }, ..Options::default() };
    for container in [Container::Straight, Container::SelfLoop] {
        let shape = Shape { container, access: Access::LoadPerElement, images: Images::SharedSampledImage, location: Location::DebugInfo };
        let bufs = head()
            .cap("RuntimeDescriptorArray")
            .cap("ShaderNonUniform")
            .cap("StorageBufferArrayNonUniformIndexing")
            .ext("SPV_EXT_descriptor_indexing")
            .decorate("OpDecorate %bufs DescriptorSet 1\nOpDecorate %bufs Binding 0\nOpDecorate %b NonUniform\nOpDecorate %si NonUniform")
            .globals("%arr = OpTypeRuntimeArray %blk\n%parr = OpTypePointer StorageBuffer %arr\n%bufs = OpVariable %parr StorageBuffer");
        let text = shape.module_on(bufs, "%bufs");
        let (words, _) = rewrite_valid(&text, "vulkan1.1", &quirk);
        let dis = disassemble(&words);
        assert!(dis.contains("OpGroupNonUniformBroadcastFirst"), "no waterfall loop:\n{dis}");
        assert_image_objects_local(&dis);
        assert_locations_carried(&dis, shape.location);
        let sampled: Vec<&str> = dis.lines().filter(|l| l.contains("= OpSampledImage")).filter_map(|l| l.split_whitespace().next()).collect();
        assert_eq!(sampled.len(), 2, "one OpSampledImage made again after the split:\n{dis}");
        for s in sampled {
            assert!(dis.contains(&format!("OpDecorate {s} NonUniform")), "{s} lost NonUniform:\n{dis}");
        }
    }
}
