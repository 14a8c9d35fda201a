//! SPIR-V compute shaders that use SPV_KHR_physical_storage_buffer pointers, for the
//! buffer-device-address tests and bench (native addresses vs the layer's emulated ones). Every
//! shader runs 64 invocations per workgroup and is checked with spirv-val when assembled.
use crate::tools::{spirv_as, spirv_val};

/// Common head of the test shaders: 32-bit uints, a `uint data[]` block type reached through
/// PhysicalStorageBuffer pointers, and the invocation index in `%gx`.
pub const HEAD: &str = r#"
OpExtension "SPV_KHR_physical_storage_buffer"
OpMemoryModel PhysicalStorageBuffer64 GLSL450
OpEntryPoint GLCompute %main "main" %gid %pc
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %PC Block
OpDecorate %Buf Block
OpMemberDecorate %Buf 0 Offset 0
OpDecorate %arr ArrayStride 4
"#;

/// Types and constants after the shaders' own decorations.
pub const TYPES: &str = r#"
%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%uint = OpTypeInt 32 0
%v3uint = OpTypeVector %uint 3
%arr = OpTypeRuntimeArray %uint
%Buf = OpTypeStruct %arr
%pbuf = OpTypePointer PhysicalStorageBuffer %Buf
%pu = OpTypePointer PhysicalStorageBuffer %uint
%pin = OpTypePointer Input %v3uint
%pin_uint = OpTypePointer Input %uint
%gid = OpVariable %pin Input
%c0 = OpConstant %uint 0
%c1 = OpConstant %uint 1
%c2 = OpConstant %uint 2
%c3 = OpConstant %uint 3
"#;

/// `%gx` = gl_GlobalInvocationID.x, at the top of `main`.
pub const MAIN: &str = r#"
%main = OpFunction %void None %fn
%entry = OpLabel
%gx_p = OpAccessChain %pin_uint %gid %c0
%gx = OpLoad %uint %gx_p
"#;

/// A module from its own decorations, types and the body of `main` (after [`MAIN`]).
pub fn assemble(decorations: &str, types: &str, code: &str) -> Vec<u32> {
    assemble_with("", decorations, types, code)
}

/// [`assemble`] with more capabilities (`OpCapability ...` lines).
pub fn assemble_with(capabilities: &str, decorations: &str, types: &str, code: &str) -> Vec<u32> {
    let text = format!(
        "OpCapability Shader\nOpCapability PhysicalStorageBufferAddresses\n{capabilities}{HEAD}{decorations}{TYPES}{types}{MAIN}{code}OpReturn\nOpFunctionEnd\n"
    );
    let words = spirv_as(&text, "vulkan1.2").unwrap_or_else(|e| panic!("{e}"));
    spirv_val(&words, "vulkan1.2").unwrap_or_else(|e| panic!("test shader invalid: {e}\n{text}"));
    words
}

/// A shader with two pointers from the push constants, `%src` (offset 0) and `%dst` (offset
/// 8), loaded at the top of `main`, then `code`; `capabilities` and `types` add to the common
/// ones.
fn src_dst(capabilities: &str, types: &str, code: &str) -> Vec<u32> {
    assemble_with(
        capabilities,
        "OpMemberDecorate %PC 0 Offset 0\nOpMemberDecorate %PC 1 Offset 8\n",
        &format!("%PC = OpTypeStruct %pbuf %pbuf\n%ppc = OpTypePointer PushConstant %PC\n%pc = OpVariable %ppc PushConstant\n%ppc_pbuf = OpTypePointer PushConstant %pbuf\n{types}"),
        &format!("%src_p = OpAccessChain %ppc_pbuf %pc %c0\n%src = OpLoad %pbuf %src_p\n%dst_p = OpAccessChain %ppc_pbuf %pc %c1\n%dst = OpLoad %pbuf %dst_p\n{code}"),
    )
}

/// `out = in * 2 + 1` per invocation through two pointers in the push constants.
pub fn copy_scale() -> Vec<u32> {
    src_dst(
        "",
        "",
        r#"
%ep = OpAccessChain %pu %src %c0 %gx
%v = OpLoad %uint %ep Aligned 4
%v2 = OpIMul %uint %v %c2
%v3 = OpIAdd %uint %v2 %c1
%op = OpAccessChain %pu %dst %c0 %gx
OpStore %op %v3 Aligned 4
"#,
    )
}

/// A linked list across three buffers, built by the shader itself (it stores pointers into
/// the nodes), then walked: `out[0] = a.value + a.next.value + a.next.next.value`, and
/// `out[1]` = the last node's value read through the pointer loaded from memory twice.
pub fn linked_list() -> Vec<u32> {
    assemble(
        r#"
OpDecorate %Node Block
OpMemberDecorate %Node 0 Offset 0
OpMemberDecorate %Node 1 Offset 4
OpMemberDecorate %Node 2 Offset 8
OpMemberDecorate %PC 0 Offset 0
OpMemberDecorate %PC 1 Offset 8
OpMemberDecorate %PC 2 Offset 16
OpMemberDecorate %PC 3 Offset 24
"#,
        r#"
OpTypeForwardPointer %pnode PhysicalStorageBuffer
%Node = OpTypeStruct %uint %uint %pnode
%pnode = OpTypePointer PhysicalStorageBuffer %Node
%pnext = OpTypePointer PhysicalStorageBuffer %pnode
%PC = OpTypeStruct %pnode %pnode %pnode %pbuf
%ppc = OpTypePointer PushConstant %PC
%pc = OpVariable %ppc PushConstant
%ppc_node = OpTypePointer PushConstant %pnode
%ppc_pbuf = OpTypePointer PushConstant %pbuf
"#,
        r#"
%first = OpIEqual %bool %gx %c0
OpSelectionMerge %done None
OpBranchConditional %first %work %done
%work = OpLabel
%a_p = OpAccessChain %ppc_node %pc %c0
%a = OpLoad %pnode %a_p
%b_p = OpAccessChain %ppc_node %pc %c1
%b = OpLoad %pnode %b_p
%c_p = OpAccessChain %ppc_node %pc %c2
%c = OpLoad %pnode %c_p
%o_p = OpAccessChain %ppc_pbuf %pc %c3
%o = OpLoad %pbuf %o_p
%a_next = OpAccessChain %pnext %a %c2
OpStore %a_next %b Aligned 8
%b_next = OpAccessChain %pnext %b %c2
OpStore %b_next %c Aligned 8
%av_p = OpAccessChain %pu %a %c0
%av = OpLoad %uint %av_p Aligned 8
%n1 = OpLoad %pnode %a_next Aligned 8
%n1v_p = OpAccessChain %pu %n1 %c0
%n1v = OpLoad %uint %n1v_p Aligned 8
%n1_next = OpAccessChain %pnext %n1 %c2
%n2 = OpLoad %pnode %n1_next Aligned 8
%n2v_p = OpAccessChain %pu %n2 %c0
%n2v = OpLoad %uint %n2v_p Aligned 8
%s1 = OpIAdd %uint %av %n1v
%sum = OpIAdd %uint %s1 %n2v
%o0 = OpAccessChain %pu %o %c0 %c0
OpStore %o0 %sum Aligned 4
%o1 = OpAccessChain %pu %o %c0 %c1
OpStore %o1 %n2v Aligned 4
OpBranch %done
%done = OpLabel
"#,
    )
}

/// A struct of pointers in device memory: invocation 0 fills `table = { in0, in1, out }` from
/// the push constants, a workgroup barrier, then every invocation loads the three pointers
/// from the table and computes `out[i] = in0[i] + in1[i]`.
pub fn struct_of_pointers() -> Vec<u32> {
    assemble(
        r#"
OpDecorate %Table Block
OpMemberDecorate %Table 0 Offset 0
OpMemberDecorate %Table 1 Offset 8
OpMemberDecorate %Table 2 Offset 16
OpMemberDecorate %PC 0 Offset 0
OpMemberDecorate %PC 1 Offset 8
OpMemberDecorate %PC 2 Offset 16
OpMemberDecorate %PC 3 Offset 24
"#,
        r#"
%Table = OpTypeStruct %pbuf %pbuf %pbuf
%ptable = OpTypePointer PhysicalStorageBuffer %Table
%pslot = OpTypePointer PhysicalStorageBuffer %pbuf
%PC = OpTypeStruct %ptable %pbuf %pbuf %pbuf
%ppc = OpTypePointer PushConstant %PC
%pc = OpVariable %ppc PushConstant
%ppc_table = OpTypePointer PushConstant %ptable
%ppc_pbuf = OpTypePointer PushConstant %pbuf
%workgroup = OpConstant %uint 2
%semantics = OpConstant %uint 72
"#,
        r#"
%t_p = OpAccessChain %ppc_table %pc %c0
%t = OpLoad %ptable %t_p
%first = OpIEqual %bool %gx %c0
OpSelectionMerge %filled None
OpBranchConditional %first %fill %filled
%fill = OpLabel
%i0_p = OpAccessChain %ppc_pbuf %pc %c1
%i0 = OpLoad %pbuf %i0_p
%i1_p = OpAccessChain %ppc_pbuf %pc %c2
%i1 = OpLoad %pbuf %i1_p
%out_p = OpAccessChain %ppc_pbuf %pc %c3
%out = OpLoad %pbuf %out_p
%t0 = OpAccessChain %pslot %t %c0
OpStore %t0 %i0 Aligned 8
%t1 = OpAccessChain %pslot %t %c1
OpStore %t1 %i1 Aligned 8
%t2 = OpAccessChain %pslot %t %c2
OpStore %t2 %out Aligned 8
OpBranch %filled
%filled = OpLabel
OpControlBarrier %workgroup %workgroup %semantics
%l0 = OpAccessChain %pslot %t %c0
%a = OpLoad %pbuf %l0 Aligned 8
%l1 = OpAccessChain %pslot %t %c1
%b = OpLoad %pbuf %l1 Aligned 8
%l2 = OpAccessChain %pslot %t %c2
%d = OpLoad %pbuf %l2 Aligned 8
%ap = OpAccessChain %pu %a %c0 %gx
%av = OpLoad %uint %ap Aligned 4
%bp = OpAccessChain %pu %b %c0 %gx
%bv = OpLoad %uint %bp Aligned 4
%s = OpIAdd %uint %av %bv
%dp = OpAccessChain %pu %d %c0 %gx
OpStore %dp %s Aligned 4
"#,
    )
}

/// `out[i] = sum over k < 8 of (k odd ? in[i + k] : 2 * in[i + k])`: one pointer (push
/// constant 0) read in a loop, in both arms of a selection inside it (located once, before the
/// loop, for every access), reaching past the input's end for the last invocations when the
/// input is shorter than 64 + 7 words.
pub fn window_sum() -> Vec<u32> {
    src_dst(
        "",
        "%c8 = OpConstant %uint 8\n",
        r#"
OpBranch %header
%header = OpLabel
%k = OpPhi %uint %c0 %entry %k2 %cont
%s = OpPhi %uint %c0 %entry %s2 %cont
%more = OpULessThan %bool %k %c8
OpLoopMerge %exit %cont None
OpBranchConditional %more %body %exit
%body = OpLabel
%j = OpIAdd %uint %gx %k
%bit = OpBitwiseAnd %uint %k %c1
%odd = OpINotEqual %bool %bit %c0
OpSelectionMerge %join None
OpBranchConditional %odd %one %two
%one = OpLabel
%pa = OpAccessChain %pu %src %c0 %j
%va = OpLoad %uint %pa Aligned 4
OpBranch %join
%two = OpLabel
%pb = OpAccessChain %pu %src %c0 %j
%vb0 = OpLoad %uint %pb Aligned 4
%vb = OpIMul %uint %vb0 %c2
OpBranch %join
%join = OpLabel
%v = OpPhi %uint %va %one %vb %two
%s2 = OpIAdd %uint %s %v
OpBranch %cont
%cont = OpLabel
%k2 = OpIAdd %uint %k %c1
OpBranch %header
%exit = OpLabel
%op = OpAccessChain %pu %dst %c0 %gx
OpStore %op %s Aligned 4
"#,
    )
}

/// What [`window_sum`] writes for `input`, words past its end reading `past`.
pub fn window_sum_reference(input: &[u32], past: u32) -> Vec<u32> {
    (0..64)
        .map(|i| (0..8).fold(0u32, |s, k| s.wrapping_add(input.get(i + k).copied().unwrap_or(past).wrapping_mul(if k % 2 == 1 { 1 } else { 2 }))))
        .collect()
}

/// Bench kernel, run once: `nodes[i] = { i, 0, &nodes[(i * 40503 + 1) % n] }` for `n` (a power
/// of two, push constant 16) nodes at the pointer in push constant 0.
pub fn chase_init() -> Vec<u32> {
    assemble(
        NODE_DECORATIONS,
        NODE_TYPES,
        r#"
%n_p = OpAccessChain %ppc_uint %pc %c2
%n = OpLoad %uint %n_p
%mask = OpISub %uint %n %c1
%nodes_p = OpAccessChain %ppc_nodes %pc %c0
%nodes = OpLoad %pnodes %nodes_p
%i = OpBitwiseAnd %uint %gx %mask
%jm = OpIMul %uint %i %mult
%ja = OpIAdd %uint %jm %c1
%j = OpBitwiseAnd %uint %ja %mask
%me = OpAccessChain %pnode %nodes %c0 %i
%other = OpAccessChain %pnode %nodes %c0 %j
%vp = OpAccessChain %pu %me %c0
OpStore %vp %i Aligned 16
%np = OpAccessChain %pnext %me %c2
OpStore %np %other Aligned 8
"#,
    )
}

/// Bench kernel: invocation `i` follows 16 `next` pointers from node `i % n` and writes the sum
/// of the values it saw to `out[i]` (push constant 8).
pub fn chase() -> Vec<u32> {
    assemble(
        NODE_DECORATIONS,
        NODE_TYPES,
        r#"
%n_p = OpAccessChain %ppc_uint %pc %c2
%n = OpLoad %uint %n_p
%mask = OpISub %uint %n %c1
%nodes_p = OpAccessChain %ppc_nodes %pc %c0
%nodes = OpLoad %pnodes %nodes_p
%out_p = OpAccessChain %ppc_pbuf %pc %c1
%out = OpLoad %pbuf %out_p
%i = OpBitwiseAnd %uint %gx %mask
%p0 = OpAccessChain %pnode %nodes %c0 %i
OpBranch %header
%header = OpLabel
%p = OpPhi %pnode %p0 %entry %pn %body
%s = OpPhi %uint %c0 %entry %sn %body
%k = OpPhi %uint %c0 %entry %kn %body
%more = OpULessThan %bool %k %hops
OpLoopMerge %exit %body None
OpBranchConditional %more %body %exit
%body = OpLabel
%vp = OpAccessChain %pu %p %c0
%v = OpLoad %uint %vp Aligned 16
%np = OpAccessChain %pnext %p %c2
%pn = OpLoad %pnode %np Aligned 8
%sn = OpIAdd %uint %s %v
%kn = OpIAdd %uint %k %c1
OpBranch %header
%exit = OpLabel
%op = OpAccessChain %pu %out %c0 %gx
OpStore %op %s Aligned 4
"#,
    )
}

const NODE_DECORATIONS: &str = r#"
OpMemberDecorate %Node 0 Offset 0
OpMemberDecorate %Node 1 Offset 4
OpMemberDecorate %Node 2 Offset 8
OpDecorate %narr ArrayStride 16
OpDecorate %Nodes Block
OpMemberDecorate %Nodes 0 Offset 0
OpMemberDecorate %PC 0 Offset 0
OpMemberDecorate %PC 1 Offset 8
OpMemberDecorate %PC 2 Offset 16
"#;

const NODE_TYPES: &str = r#"
OpTypeForwardPointer %pnode PhysicalStorageBuffer
%Node = OpTypeStruct %uint %uint %pnode
%pnode = OpTypePointer PhysicalStorageBuffer %Node
%pnext = OpTypePointer PhysicalStorageBuffer %pnode
%narr = OpTypeRuntimeArray %Node
%Nodes = OpTypeStruct %narr
%pnodes = OpTypePointer PhysicalStorageBuffer %Nodes
%PC = OpTypeStruct %pnodes %pbuf %uint
%ppc = OpTypePointer PushConstant %PC
%pc = OpVariable %ppc PushConstant
%ppc_nodes = OpTypePointer PushConstant %pnodes
%ppc_pbuf = OpTypePointer PushConstant %pbuf
%ppc_uint = OpTypePointer PushConstant %uint
%mult = OpConstant %uint 40503
%hops = OpConstant %uint 16
"#;

/// An element type for [`copy_elements`]: capabilities it needs, decorations and definitions
/// (of `ty` and what it uses; `%uint`, `%addr` (uvec2), `%v3uint` and `%c0`..`%c3` exist), array stride and the
/// `Aligned` operand of its loads and stores.
pub struct Element {
    pub name: &'static str,
    pub capabilities: &'static str,
    pub decorations: &'static str,
    pub types: &'static str,
    pub ty: &'static str,
    pub stride: u32,
    pub align: u32,
}

/// `out[i] = in[i]` for one element type, through two pointers to `T[]` in the push constants
/// (a whole-element load and store: vectors, 8/16/64-bit scalars, structs and matrices).
/// spirv-val counts the 8/16-bit types behind a push-constant pointer as push-constant storage,
/// so those elements also declare StoragePushConstant16/8 (lavapipe has both).
pub fn copy_elements(e: &Element) -> Vec<u32> {
    let (ty, stride, a) = (e.ty, e.stride, e.align);
    assemble_with(
        e.capabilities,
        &format!(
            "{}OpDecorate %arrT ArrayStride {stride}\nOpDecorate %BufT Block\nOpMemberDecorate %BufT 0 Offset 0\nOpMemberDecorate %PC 0 Offset 0\nOpMemberDecorate %PC 1 Offset 8\n",
            e.decorations
        ),
        &format!(
            "%addr = OpTypeVector %uint 2\n{}\n%arrT = OpTypeRuntimeArray {ty}\n%BufT = OpTypeStruct %arrT\n%pbufT = OpTypePointer PhysicalStorageBuffer %BufT\n%pT = OpTypePointer PhysicalStorageBuffer {ty}\n%PC = OpTypeStruct %pbufT %pbufT\n%ppc = OpTypePointer PushConstant %PC\n%pc = OpVariable %ppc PushConstant\n%ppc_pbufT = OpTypePointer PushConstant %pbufT\n",
            e.types
        ),
        &format!(
            "%src_p = OpAccessChain %ppc_pbufT %pc %c0\n%src = OpLoad %pbufT %src_p\n%dst_p = OpAccessChain %ppc_pbufT %pc %c1\n%dst = OpLoad %pbufT %dst_p\n%ep = OpAccessChain %pT %src %c0 %gx\n%v = OpLoad {ty} %ep Aligned {a}\n%op = OpAccessChain %pT %dst %c0 %gx\nOpStore %op %v Aligned {a}\n"
        ),
    )
}

/// The element types of the copy sweep (their bit patterns are never NaN-sensitive: floats are
/// only loaded and stored).
pub const ELEMENTS: &[Element] = &[
    Element { name: "uint", capabilities: "", decorations: "", types: "", ty: "%uint", stride: 4, align: 4 },
    Element { name: "uvec2", capabilities: "", decorations: "", types: "", ty: "%addr", stride: 8, align: 8 },
    Element { name: "uvec3 (stride 16)", capabilities: "", decorations: "", types: "", ty: "%v3uint", stride: 16, align: 16 },
    Element { name: "uvec4", capabilities: "", decorations: "", types: "%v4 = OpTypeVector %uint 4", ty: "%v4", stride: 16, align: 16 },
    Element { name: "uvec4 (Aligned 4)", capabilities: "", decorations: "", types: "%v4 = OpTypeVector %uint 4", ty: "%v4", stride: 16, align: 4 },
    Element { name: "u64", capabilities: "OpCapability Int64\n", decorations: "", types: "%T = OpTypeInt 64 0", ty: "%T", stride: 8, align: 8 },
    Element {
        name: "u64vec3",
        capabilities: "OpCapability Int64\n",
        decorations: "",
        types: "%u64 = OpTypeInt 64 0\n%T = OpTypeVector %u64 3",
        ty: "%T",
        stride: 32,
        align: 8,
    },
    Element { name: "u16", capabilities: "OpCapability StorageBuffer16BitAccess\nOpCapability StoragePushConstant16\n", decorations: "", types: "%T = OpTypeInt 16 0", ty: "%T", stride: 2, align: 2 },
    Element {
        name: "u16vec3",
        capabilities: "OpCapability StorageBuffer16BitAccess\nOpCapability StoragePushConstant16\n",
        decorations: "",
        types: "%u16 = OpTypeInt 16 0\n%T = OpTypeVector %u16 3",
        ty: "%T",
        stride: 8,
        align: 2,
    },
    Element { name: "u8", capabilities: "OpCapability StorageBuffer8BitAccess\nOpCapability StoragePushConstant8\n", decorations: "", types: "%T = OpTypeInt 8 0", ty: "%T", stride: 1, align: 1 },
    Element { name: "f64", capabilities: "OpCapability Float64\n", decorations: "", types: "%T = OpTypeFloat 64", ty: "%T", stride: 8, align: 8 },
    Element {
        name: "struct { uint; uvec2 @8; float @16 }",
        capabilities: "",
        decorations: "OpMemberDecorate %T 0 Offset 0\nOpMemberDecorate %T 1 Offset 8\nOpMemberDecorate %T 2 Offset 16\n",
        types: "%f = OpTypeFloat 32\n%T = OpTypeStruct %uint %addr %f",
        ty: "%T",
        stride: 24,
        align: 8,
    },
    Element {
        name: "struct { uint[3] }",
        capabilities: "",
        decorations: "OpDecorate %a3 ArrayStride 4\nOpMemberDecorate %T 0 Offset 0\n",
        types: "%a3 = OpTypeArray %uint %c3\n%T = OpTypeStruct %a3",
        ty: "%T",
        stride: 12,
        align: 4,
    },
    Element {
        name: "struct { column-major mat2x3 }",
        capabilities: "",
        decorations: "OpMemberDecorate %T 0 Offset 0\nOpMemberDecorate %T 0 ColMajor\nOpMemberDecorate %T 0 MatrixStride 16\n",
        types: "%f = OpTypeFloat 32\n%v3f = OpTypeVector %f 3\n%m = OpTypeMatrix %v3f 2\n%T = OpTypeStruct %m",
        ty: "%T",
        stride: 32,
        align: 16,
    },
    Element {
        name: "struct { row-major mat2x3 }",
        capabilities: "",
        decorations: "OpMemberDecorate %T 0 Offset 0\nOpMemberDecorate %T 0 RowMajor\nOpMemberDecorate %T 0 MatrixStride 8\n",
        types: "%f = OpTypeFloat 32\n%v3f = OpTypeVector %f 3\n%m = OpTypeMatrix %v3f 2\n%T = OpTypeStruct %m",
        ty: "%T",
        stride: 24,
        align: 8,
    },
];

/// `out[0] += i` by every invocation (OpAtomicIAdd through a pointer, device scope), and
/// `out[1 + i] = i` through OpPtrAccessChain on a pointer to `out[1]` (the pointer type's
/// ArrayStride 4).
pub fn atomics_and_ptr_chains() -> Vec<u32> {
    assemble(
        r#"
OpMemberDecorate %PC 0 Offset 0
OpDecorate %pu ArrayStride 4
"#,
        r#"
%PC = OpTypeStruct %pbuf
%ppc = OpTypePointer PushConstant %PC
%pc = OpVariable %ppc PushConstant
%ppc_pbuf = OpTypePointer PushConstant %pbuf
%device = OpConstant %uint 1
"#,
        r#"
%o_p = OpAccessChain %ppc_pbuf %pc %c0
%o = OpLoad %pbuf %o_p
%counter = OpAccessChain %pu %o %c0 %c0
%old = OpAtomicIAdd %uint %counter %device %c0 %gx
%first = OpAccessChain %pu %o %c0 %c1
%mine = OpPtrAccessChain %pu %first %gx
OpStore %mine %gx Aligned 4
"#,
    )
}

/// `out[i] = in[4 i + 1]` through an OpRawAccessChainNV on a physical base (stride 16, index i,
/// offset 4): SPV_NV_raw_access_chains and SPV_KHR_physical_storage_buffer both emulated.
pub fn raw_chain_on_pointer() -> Vec<u32> {
    src_dst(
        "OpCapability RawAccessChainsNV\nOpExtension \"SPV_NV_raw_access_chains\"\n",
        "%c4 = OpConstant %uint 4\n%c16 = OpConstant %uint 16\n",
        r#"
%rc = OpRawAccessChainNV %pu %src %c16 %gx %c4
%v = OpLoad %uint %rc Aligned 4
%op = OpAccessChain %pu %dst %c0 %gx
OpStore %op %v Aligned 4
"#,
    )
}

/// Push constants of [`graphics_vs`] / [`graphics_fs`] (both stages declare the same block):
/// a pointer to `vec4 positions[]` (offset 0) and one to `uint colors[]` (offset 8).
const GRAPHICS_HEAD: &str = r#"
OpDecorate %PC Block
OpMemberDecorate %PC 0 Offset 0
OpMemberDecorate %PC 1 Offset 8
OpDecorate %Verts Block
OpMemberDecorate %Verts 0 Offset 0
OpDecorate %va ArrayStride 16
OpDecorate %Cols Block
OpMemberDecorate %Cols 0 Offset 0
OpDecorate %ca ArrayStride 4
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%int = OpTypeInt 32 1
%float = OpTypeFloat 32
%v4 = OpTypeVector %float 4
%va = OpTypeRuntimeArray %v4
%Verts = OpTypeStruct %va
%pverts = OpTypePointer PhysicalStorageBuffer %Verts
%pv4 = OpTypePointer PhysicalStorageBuffer %v4
%ca = OpTypeRuntimeArray %uint
%Cols = OpTypeStruct %ca
%pcols = OpTypePointer PhysicalStorageBuffer %Cols
%pu = OpTypePointer PhysicalStorageBuffer %uint
%PC = OpTypeStruct %pverts %pcols
%ppc = OpTypePointer PushConstant %PC
%pc = OpVariable %ppc PushConstant
%ppc_verts = OpTypePointer PushConstant %pverts
%ppc_cols = OpTypePointer PushConstant %pcols
%c0 = OpConstant %uint 0
%c1 = OpConstant %uint 1
"#;

fn graphics_module(entry: &str, body: &str) -> Vec<u32> {
    let text = format!(
        "OpCapability Shader\nOpCapability PhysicalStorageBufferAddresses\nOpExtension \"SPV_KHR_physical_storage_buffer\"\n%ext = OpExtInstImport \"GLSL.std.450\"\nOpMemoryModel PhysicalStorageBuffer64 GLSL450\n{entry}{GRAPHICS_HEAD}{body}OpReturn\nOpFunctionEnd\n"
    );
    let words = spirv_as(&text, "vulkan1.2").unwrap_or_else(|e| panic!("{e}"));
    spirv_val(&words, "vulkan1.2").unwrap_or_else(|e| panic!("test shader invalid: {e}\n{text}"));
    words
}

/// Vertex shader: `gl_Position = positions[gl_VertexIndex]` through the pointer at push
/// constant 0.
pub fn graphics_vs() -> Vec<u32> {
    graphics_module(
        "OpEntryPoint Vertex %main \"main\" %vid %pos %pc\nOpDecorate %vid BuiltIn VertexIndex\nOpDecorate %pos BuiltIn Position\n",
        r#"
%pin = OpTypePointer Input %int
%vid = OpVariable %pin Input
%pout = OpTypePointer Output %v4
%pos = OpVariable %pout Output
%main = OpFunction %void None %fn
%entry = OpLabel
%vp = OpAccessChain %ppc_verts %pc %c0
%verts = OpLoad %pverts %vp
%i = OpLoad %int %vid
%e = OpAccessChain %pv4 %verts %c0 %i
%v = OpLoad %v4 %e Aligned 16
OpStore %pos %v
"#,
    )
}

/// Fragment shader: the pixel's colour is `unpackUnorm4x8(colors[y * width + x])` through the
/// pointer at push constant 8.
pub fn graphics_fs(width: u32) -> Vec<u32> {
    graphics_module(
        "OpEntryPoint Fragment %main \"main\" %fc %color %pc\nOpExecutionMode %main OriginUpperLeft\nOpDecorate %fc BuiltIn FragCoord\nOpDecorate %color Location 0\n",
        &format!(
            r#"
%pin = OpTypePointer Input %v4
%fc = OpVariable %pin Input
%pout = OpTypePointer Output %v4
%color = OpVariable %pout Output
%w = OpConstant %uint {width}
%main = OpFunction %void None %fn
%entry = OpLabel
%cp = OpAccessChain %ppc_cols %pc %c1
%cols = OpLoad %pcols %cp
%f = OpLoad %v4 %fc
%fx = OpCompositeExtract %float %f 0
%fy = OpCompositeExtract %float %f 1
%x = OpConvertFToU %uint %fx
%y = OpConvertFToU %uint %fy
%row = OpIMul %uint %y %w
%i = OpIAdd %uint %row %x
%e = OpAccessChain %pu %cols %c0 %i
%packed = OpLoad %uint %e Aligned 4
%rgba = OpExtInst %v4 %ext UnpackUnorm4x8 %packed
OpStore %color %rgba
"#
        ),
    )
}
