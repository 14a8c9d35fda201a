//! SPIR-V compute shaders that use SPV_KHR_physical_storage_buffer pointers, for the
//! buffer-device-address tests and bench (native addresses vs the layer's emulated ones). Every
//! shader runs 64 invocations per workgroup and is checked with spirv-val when assembled.
//!
//! Conventions (on [`spvasm::Module`]): `%Buf = { uint data[]; }` is reached through
//! PhysicalStorageBuffer pointers `%pbuf`; `%gx` = gl_GlobalInvocationID.x at the top of `main`;
//! push constant `k` (a pointer of type `%T`) is read into `%name` by [`push_loads`] through the
//! pointer type `%pp_T` that [`push_constants`] declares.
use crate::tools::{spirv_as, spirv_val};
use spvasm::{Module, FRAG_XY};

/// The module of the graphics and compute shaders: SPIR-V 1.5, PhysicalStorageBuffer64, the
/// block type `%Buf` and its pointer `%pbuf`.
fn physical(m: Module) -> Module {
    m.spirv(5)
        .physical_addressing()
        .ext("SPV_KHR_physical_storage_buffer")
        .block("Buf", "%u32", 4)
        .globals("%pbuf = OpTypePointer PhysicalStorageBuffer %Buf")
}

/// The push constants `%pc` of `members` (pointer or scalar types at 8-byte offsets), with
/// `%pp_T` = PushConstant pointer to each member type `%T` that has no standard name.
pub(crate) fn push_constants(m: Module, members: &[&str]) -> Module {
    let mut pointers: Vec<&str> = Vec::new();
    for &t in members.iter().filter(|&&t| t != "%u32") {
        if !pointers.contains(&t) {
            pointers.push(t);
        }
    }
    let with_offsets: Vec<(&str, u32)> = members.iter().enumerate().map(|(k, &t)| (t, 8 * k as u32)).collect();
    let m = m.push_constants("pc", &with_offsets);
    let decls: String = pointers.iter().map(|t| format!("%pp_{} = OpTypePointer PushConstant {t}\n", &t[1..])).collect();
    m.globals(&decls)
}

/// Function-body lines loading push constants `first`, `first + 1`, … into `%name` (of type
/// `%T`) for each (name, T).
pub(crate) fn push_loads(first: u32, loads: &[(&str, &str)]) -> String {
    let mut s = String::new();
    for (k, (name, ty)) in loads.iter().enumerate() {
        s += &format!("%{name}_p = OpAccessChain %pp_{} %pc %c{}\n%{name} = OpLoad {ty} %{name}_p\n", &ty[1..], first + k as u32);
    }
    s
}

/// Assembles and validates for the module's SPIR-V version (vulkan1.2 for the 1.5 modules,
/// vulkan1.1 for a 1.3 one).
fn assemble(m: &Module) -> Vec<u32> {
    let text = m.text();
    let env = m.target_env();
    let words = spirv_as(&text, env).unwrap_or_else(|e| panic!("{e}"));
    spirv_val(&words, env).unwrap_or_else(|e| panic!("test shader invalid: {e}\n{text}"));
    words
}

/// A compute shader (LocalSize 64, `%gid`) of `m`'s declarations, `main` = `%gx` and `code`.
pub(crate) fn compute(m: Module, code: &str) -> Vec<u32> {
    compute_with_variables(m, "", code)
}

/// [`compute`] with `variables` (Function-storage OpVariables) first in `main`.
fn compute_with_variables(m: Module, variables: &str, code: &str) -> Vec<u32> {
    assemble(&m.main(&format!("{variables}%gx_p = OpAccessChain %pin_u32 %gid %c0\n%gx = OpLoad %u32 %gx_p\n{code}")))
}

/// `code` run by invocation 0 alone, in block `%then`; the text goes on in the merge block
/// `%merge`.
fn first_invocation(code: &str, then: &str, merge: &str) -> String {
    format!("%first = OpIEqual %bool %gx %c0\nOpSelectionMerge %{merge} None\nOpBranchConditional %first %{then} %{merge}\n%{then} = OpLabel\n{code}OpBranch %{merge}\n%{merge} = OpLabel")
}

/// The compute module with its `%Buf` block, `%gid` and `capabilities`.
pub(crate) fn base(capabilities: &[&str]) -> Module {
    let m = physical(Module::compute(64).gid());
    capabilities.iter().fold(m, |m, c| m.cap(c))
}

/// A shader with two pointers from the push constants, `%src` (offset 0) and `%dst` (offset
/// 8), loaded at the top of `main`, then `code`.
fn src_dst(m: Module, code: &str) -> Vec<u32> {
    compute(push_constants(m, &["%pbuf", "%pbuf"]), &format!("{}{code}", push_loads(0, &[("src", "%pbuf"), ("dst", "%pbuf")])))
}

/// `out = in * 2 + 1` per invocation through two pointers in the push constants.
pub fn copy_scale() -> Vec<u32> {
    src_dst(
        base(&[]),
        r#"
%ep = OpAccessChain %pg_u32 %src %c0 %gx
%v = OpLoad %u32 %ep Aligned 4
%v2 = OpIMul %u32 %v %c2
%v3 = OpIAdd %u32 %v2 %c1
%op = OpAccessChain %pg_u32 %dst %c0 %gx
OpStore %op %v3 Aligned 4
"#,
    )
}

/// `out[i] = in[i]` read through a pointer made 16 bytes below the input buffer (its address
/// minus 16, as a `%pbuf`) at element `i + 4`: the pointer lies outside every buffer, each
/// access inside the input (the spec makes only the accessed bytes valid).
pub fn below_the_buffer() -> Vec<u32> {
    src_dst(
        base(INT64).globals("%c16_64 = OpConstant %u64 16"),
        r#"
%su = OpConvertPtrToU %u64 %src
%bu = OpISub %u64 %su %c16_64
%below = OpConvertUToPtr %pbuf %bu
%k = OpIAdd %u32 %gx %c4
%ep = OpAccessChain %pg_u32 %below %c0 %k
%v = OpLoad %u32 %ep Aligned 4
%op = OpAccessChain %pg_u32 %dst %c0 %gx
OpStore %op %v Aligned 4
"#,
    )
}

/// `%Node = { uint value; uint pad; Node* next; }` (`%pnode`, `%pnext` = pointer to a `next`).
fn nodes(m: Module) -> Module {
    m.decorate("OpMemberDecorate %Node 0 Offset 0\nOpMemberDecorate %Node 1 Offset 4\nOpMemberDecorate %Node 2 Offset 8").globals(
        "OpTypeForwardPointer %pnode PhysicalStorageBuffer
%Node = OpTypeStruct %u32 %u32 %pnode
%pnode = OpTypePointer PhysicalStorageBuffer %Node
%pnext = OpTypePointer PhysicalStorageBuffer %pnode",
    )
}

/// The module of [`nodes`] with `%Nodes = { Node n[]; }` (ArrayStride 16) and its pointer
/// `%pnodes`.
fn node_array() -> Module {
    nodes(base(&[]))
        .decorate("OpDecorate %narr ArrayStride 16\nOpDecorate %Nodes Block\nOpMemberDecorate %Nodes 0 Offset 0")
        .globals("%narr = OpTypeRuntimeArray %Node\n%Nodes = OpTypeStruct %narr\n%pnodes = OpTypePointer PhysicalStorageBuffer %Nodes")
}

/// A linked list across three buffers, built by the shader itself (it stores pointers into
/// the nodes), then walked: `out[0] = a.value + a.next.value + a.next.next.value`, and
/// `out[1]` = the last node's value read through the pointer loaded from memory twice.
pub fn linked_list() -> Vec<u32> {
    let m = push_constants(nodes(base(&[])).decorate("OpDecorate %Node Block"), &["%pnode", "%pnode", "%pnode", "%pbuf"]);
    let work = format!(
        "{}%a_next = OpAccessChain %pnext %a %c2
OpStore %a_next %b Aligned 8
%b_next = OpAccessChain %pnext %b %c2
OpStore %b_next %c Aligned 8
%av_p = OpAccessChain %pg_u32 %a %c0
%av = OpLoad %u32 %av_p Aligned 8
%n1 = OpLoad %pnode %a_next Aligned 8
%n1v_p = OpAccessChain %pg_u32 %n1 %c0
%n1v = OpLoad %u32 %n1v_p Aligned 8
%n1_next = OpAccessChain %pnext %n1 %c2
%n2 = OpLoad %pnode %n1_next Aligned 8
%n2v_p = OpAccessChain %pg_u32 %n2 %c0
%n2v = OpLoad %u32 %n2v_p Aligned 8
%s1 = OpIAdd %u32 %av %n1v
%sum = OpIAdd %u32 %s1 %n2v
%o0 = OpAccessChain %pg_u32 %o %c0 %c0
OpStore %o0 %sum Aligned 4
%o1 = OpAccessChain %pg_u32 %o %c0 %c1
OpStore %o1 %n2v Aligned 4
",
        push_loads(0, &[("a", "%pnode"), ("b", "%pnode"), ("c", "%pnode"), ("o", "%pbuf")])
    );
    compute(m, &first_invocation(&work, "work", "done"))
}

/// A struct of pointers in device memory: invocation 0 fills `table = { in0, in1, out }` from
/// the push constants, a workgroup barrier, then every invocation loads the three pointers
/// from the table and computes `out[i] = in0[i] + in1[i]`.
pub fn struct_of_pointers() -> Vec<u32> {
    let m = base(&[])
        .decorate("OpDecorate %Table Block\nOpMemberDecorate %Table 0 Offset 0\nOpMemberDecorate %Table 1 Offset 8\nOpMemberDecorate %Table 2 Offset 16")
        .globals("%Table = OpTypeStruct %pbuf %pbuf %pbuf\n%ptable = OpTypePointer PhysicalStorageBuffer %Table\n%pslot = OpTypePointer PhysicalStorageBuffer %pbuf\n%workgroup = OpConstant %u32 2\n%semantics = OpConstant %u32 72");
    compute(
        push_constants(m, &["%ptable", "%pbuf", "%pbuf", "%pbuf"]),
        &format!(
            "{}{}
OpControlBarrier %workgroup %workgroup %semantics
%l0 = OpAccessChain %pslot %t %c0
%a = OpLoad %pbuf %l0 Aligned 8
%l1 = OpAccessChain %pslot %t %c1
%b = OpLoad %pbuf %l1 Aligned 8
%l2 = OpAccessChain %pslot %t %c2
%d = OpLoad %pbuf %l2 Aligned 8
%ap = OpAccessChain %pg_u32 %a %c0 %gx
%av = OpLoad %u32 %ap Aligned 4
%bp = OpAccessChain %pg_u32 %b %c0 %gx
%bv = OpLoad %u32 %bp Aligned 4
%s = OpIAdd %u32 %av %bv
%dp = OpAccessChain %pg_u32 %d %c0 %gx
OpStore %dp %s Aligned 4",
            push_loads(0, &[("t", "%ptable")]),
            first_invocation(
                &format!(
                    "{}%t0 = OpAccessChain %pslot %t %c0
OpStore %t0 %i0 Aligned 8
%t1 = OpAccessChain %pslot %t %c1
OpStore %t1 %i1 Aligned 8
%t2 = OpAccessChain %pslot %t %c2
OpStore %t2 %out Aligned 8
",
                    push_loads(1, &[("i0", "%pbuf"), ("i1", "%pbuf"), ("out", "%pbuf")])
                ),
                "fill",
                "filled"
            )
        ),
    )
}

/// `out[i] = sum over k < 8 of (k odd ? in[i + k] : 2 * in[i + k])`: one pointer (push
/// constant 0) read in a loop, in both arms of a selection inside it (located once, before the
/// loop, for every access), reaching past the input's end for the last invocations when the
/// input is shorter than 64 + 7 words.
pub fn window_sum() -> Vec<u32> {
    src_dst(
        base(&[]),
        r#"
OpBranch %header
%header = OpLabel
%k = OpPhi %u32 %c0 %entry %k2 %cont
%s = OpPhi %u32 %c0 %entry %s2 %cont
%more = OpULessThan %bool %k %c8
OpLoopMerge %exit %cont None
OpBranchConditional %more %body %exit
%body = OpLabel
%j = OpIAdd %u32 %gx %k
%bit = OpBitwiseAnd %u32 %k %c1
%odd = OpINotEqual %bool %bit %c0
OpSelectionMerge %join None
OpBranchConditional %odd %one %two
%one = OpLabel
%pa = OpAccessChain %pg_u32 %src %c0 %j
%va = OpLoad %u32 %pa Aligned 4
OpBranch %join
%two = OpLabel
%pb = OpAccessChain %pg_u32 %src %c0 %j
%vb0 = OpLoad %u32 %pb Aligned 4
%vb = OpIMul %u32 %vb0 %c2
OpBranch %join
%join = OpLabel
%v = OpPhi %u32 %va %one %vb %two
%s2 = OpIAdd %u32 %s %v
OpBranch %cont
%cont = OpLabel
%k2 = OpIAdd %u32 %k %c1
OpBranch %header
%exit = OpLabel
%op = OpAccessChain %pg_u32 %dst %c0 %gx
OpStore %op %s Aligned 4
"#,
    )
}

/// Neighbouring members of one record loaded in one block, as shaders read a struct member by
/// member: `%Rec = { uint a; float b; uint c; uint d; vec3 e; uint f; Rec* n; uint g; uint h; }`
/// (48 bytes, ArrayStride 48) at `recs[gx]` (push constant 0, `%precs`); `a` to `d` (16 bytes
/// from an `Aligned 16` start), `e` and `f` (16 more), `n`, `g`, `h` (16 more, a pointer among
/// them), then, after a store, `a` and `c` again (12 bytes: no unit of their own) and `b` from
/// a pointer chained from the element. Invocation `gx` writes its 15 words
/// `a b c d e.x e.y e.z f n.lo n.hi g h a c b` to `out[15 gx ..]` (push constant 1): the layer
/// reads each group as one unit where the driver checks vector accesses per component
/// (`physical_storage_buffer::combine`), and the words must be the native ones.
pub fn neighbour_loads() -> Vec<u32> {
    let m = base(&[])
        .decorate(
            "OpMemberDecorate %Rec 0 Offset 0\nOpMemberDecorate %Rec 1 Offset 4\nOpMemberDecorate %Rec 2 Offset 8\nOpMemberDecorate %Rec 3 Offset 12\n\
             OpMemberDecorate %Rec 4 Offset 16\nOpMemberDecorate %Rec 5 Offset 28\nOpMemberDecorate %Rec 6 Offset 32\n\
             OpMemberDecorate %Rec 7 Offset 40\nOpMemberDecorate %Rec 8 Offset 44\nOpDecorate %recarr ArrayStride 48\n\
             OpDecorate %Recs Block\nOpMemberDecorate %Recs 0 Offset 0",
        )
        .globals(
            "OpTypeForwardPointer %prec PhysicalStorageBuffer\n%v3f_ = OpTypeVector %f32 3\n\
             %Rec = OpTypeStruct %u32 %f32 %u32 %u32 %v3f_ %u32 %prec %u32 %u32\n%prec = OpTypePointer PhysicalStorageBuffer %Rec\n\
             %recarr = OpTypeRuntimeArray %Rec\n%Recs = OpTypeStruct %recarr\n%precs = OpTypePointer PhysicalStorageBuffer %Recs\n\
             %pg_v3f_ = OpTypePointer PhysicalStorageBuffer %v3f_\n%pg_prec = OpTypePointer PhysicalStorageBuffer %prec",
        );
    let mut code = push_loads(0, &[("recs", "%precs"), ("out", "%pbuf")]);
    code += "%r = OpAccessChain %prec %recs %c0 %gx\n\
             %pa = OpAccessChain %pg_u32 %r %c0\n%a = OpLoad %u32 %pa Aligned 16\n\
             %pb = OpAccessChain %pg_f32 %r %c1\n%b = OpLoad %f32 %pb Aligned 4\n\
             %pc_ = OpAccessChain %pg_u32 %r %c2\n%c = OpLoad %u32 %pc_ Aligned 8\n\
             %pd = OpAccessChain %pg_u32 %r %c3\n%d = OpLoad %u32 %pd Aligned 4\n\
             %pe = OpAccessChain %pg_v3f_ %r %c4\n%e = OpLoad %v3f_ %pe Aligned 16\n\
             %pf = OpAccessChain %pg_u32 %r %c5\n%f = OpLoad %u32 %pf Aligned 4\n\
             %pn = OpAccessChain %pg_prec %r %c6\n%n = OpLoad %prec %pn Aligned 16\n\
             %pgg = OpAccessChain %pg_u32 %r %c7\n%g = OpLoad %u32 %pgg Aligned 8\n\
             %ph = OpAccessChain %pg_u32 %r %c8\n%h = OpLoad %u32 %ph Aligned 4\n\
             %base = OpIMul %u32 %gx %c15\n";
    let mut k = 0;
    let mut put = |code: &mut String, v: &str| {
        *code += &format!("%o{k} = OpIAdd %u32 %base %c{k}\n%po{k} = OpAccessChain %pg_u32 %out %c0 %o{k}\nOpStore %po{k} {v} Aligned 4\n");
        k += 1;
    };
    code += "%bw = OpBitcast %u32 %b\n%ex = OpCompositeExtract %f32 %e 0\n%ey = OpCompositeExtract %f32 %e 1\n%ez = OpCompositeExtract %f32 %e 2\n\
             %exw = OpBitcast %u32 %ex\n%eyw = OpBitcast %u32 %ey\n%ezw = OpBitcast %u32 %ez\n\
             %nw = OpBitcast %v2u %n\n%nlo = OpCompositeExtract %u32 %nw 0\n%nhi = OpCompositeExtract %u32 %nw 1\n";
    for v in ["%a", "%bw", "%c", "%d", "%exw", "%eyw", "%ezw", "%f", "%nlo", "%nhi", "%g", "%h"] {
        put(&mut code, v);
    }
    // After the stores: a and c again (a 12-byte span), b through a chain from the element.
    code += "%a2 = OpLoad %u32 %pa Aligned 16\n%c2_ = OpLoad %u32 %pc_ Aligned 8\n%pb2 = OpAccessChain %pg_f32 %recs %c0 %gx %c1\n%b2 = OpLoad %f32 %pb2 Aligned 4\n%b2w = OpBitcast %u32 %b2\n";
    for v in ["%a2", "%c2_", "%b2w"] {
        put(&mut code, v);
    }
    compute(push_constants(m, &["%precs", "%pbuf"]), &code)
}

/// What [`window_sum`] writes for `input`, words past its end reading `past`.
pub fn window_sum_reference(input: &[u32], past: u32) -> Vec<u32> {
    (0..64)
        .map(|i| (0..8).fold(0u32, |s, k| s.wrapping_add(input.get(i + k).copied().unwrap_or(past).wrapping_mul(if k % 2 == 1 { 1 } else { 2 }))))
        .collect()
}

/// The bench kernels' module: an array of 16-byte [`nodes`] `%Nodes` (`%pnodes`), push
/// constants { Nodes* nodes; uint* out; uint n } and, in `main`, `%i` = gid.x mod n (`n` a
/// power of two) after loading `%nodes` (and `%out` with `out`).
fn chase_kernel(out: bool, code: &str) -> Vec<u32> {
    let m = node_array().globals("%mult = OpConstant %u32 40503\n%hops = OpConstant %u32 16");
    let out = if out { push_loads(1, &[("out", "%pbuf")]) } else { String::new() };
    compute(
        push_constants(m, &["%pnodes", "%pbuf", "%u32"]),
        &format!("{}%mask = OpISub %u32 %n %c1\n{}{out}%i = OpBitwiseAnd %u32 %gx %mask\n{code}", push_loads(2, &[("n", "%u32")]), push_loads(0, &[("nodes", "%pnodes")])),
    )
}

/// Bench kernel, run once: `nodes[i] = { i, 0, &nodes[(i * 40503 + 1) % n] }` for `n` (a power
/// of two, push constant 16) nodes at the pointer in push constant 0.
pub fn chase_init() -> Vec<u32> {
    chase_kernel(
        false,
        r#"
%jm = OpIMul %u32 %i %mult
%ja = OpIAdd %u32 %jm %c1
%j = OpBitwiseAnd %u32 %ja %mask
%me = OpAccessChain %pnode %nodes %c0 %i
%other = OpAccessChain %pnode %nodes %c0 %j
%vp = OpAccessChain %pg_u32 %me %c0
OpStore %vp %i Aligned 16
%np = OpAccessChain %pnext %me %c2
OpStore %np %other Aligned 8
"#,
    )
}

/// Bench kernel: invocation `i` follows 16 `next` pointers from node `i % n` and writes the sum
/// of the values it saw to `out[i]` (push constant 8).
pub fn chase() -> Vec<u32> {
    chase_kernel(
        true,
        r#"
%p0 = OpAccessChain %pnode %nodes %c0 %i
OpBranch %header
%header = OpLabel
%p = OpPhi %pnode %p0 %entry %pn %body
%s = OpPhi %u32 %c0 %entry %sn %body
%k = OpPhi %u32 %c0 %entry %kn %body
%more = OpULessThan %bool %k %hops
OpLoopMerge %exit %body None
OpBranchConditional %more %body %exit
%body = OpLabel
%vp = OpAccessChain %pg_u32 %p %c0
%v = OpLoad %u32 %vp Aligned 16
%np = OpAccessChain %pnext %p %c2
%pn = OpLoad %pnode %np Aligned 8
%sn = OpIAdd %u32 %s %v
%kn = OpIAdd %u32 %k %c1
OpBranch %header
%exit = OpLabel
%op = OpAccessChain %pg_u32 %out %c0 %gx
OpStore %op %s Aligned 4
"#,
    )
}

/// Pointers chased in loops, as a shader walking a list does: invocation `i` links its own
/// 8 nodes `nodes[8i..8i + 8]` into a ring in one loop (`value = 8i + k + 1`, `next` =
/// the following node's address, stored through the pointer), then follows `next` 12 times
/// from its first node in a second loop (the pointer a phi in the loop header, a load through
/// it there and one in the body) and writes the sum of the values it saw to `out[i]`.
pub fn chase_ring() -> Vec<u32> {
    let m = node_array();
    compute(
        push_constants(m, &["%pnodes", "%pbuf"]),
        &format!(
            "{}%first = OpShiftLeftLogical %u32 %gx %c3
OpBranch %link
%link = OpLabel
%k = OpPhi %u32 %c0 %entry %kn %link_body
%more = OpULessThan %bool %k %c8
OpLoopMerge %linked %link_body None
OpBranchConditional %more %link_body %linked
%link_body = OpLabel
%j = OpIAdd %u32 %first %k
%me = OpAccessChain %pnode %nodes %c0 %j
%v = OpIAdd %u32 %j %c1
%vp = OpAccessChain %pg_u32 %me %c0
OpStore %vp %v Aligned 16
%kn = OpIAdd %u32 %k %c1
%kw = OpBitwiseAnd %u32 %kn %c7
%jn = OpIAdd %u32 %first %kw
%nextn = OpAccessChain %pnode %nodes %c0 %jn
%np = OpAccessChain %pnext %me %c2
OpStore %np %nextn Aligned 8
OpBranch %link
%linked = OpLabel
%p0 = OpAccessChain %pnode %nodes %c0 %first
OpBranch %walk
%walk = OpLabel
%p = OpPhi %pnode %p0 %linked %pn %walk_body
%s = OpPhi %u32 %c0 %linked %sn %walk_body
%h = OpPhi %u32 %c0 %linked %hn %walk_body
%wvp = OpAccessChain %pg_u32 %p %c0
%wv = OpLoad %u32 %wvp Aligned 16
%go = OpULessThan %bool %h %c12
OpLoopMerge %done %walk_body None
OpBranchConditional %go %walk_body %done
%walk_body = OpLabel
%wnp = OpAccessChain %pnext %p %c2
%pn = OpLoad %pnode %wnp Aligned 8
%sn = OpIAdd %u32 %s %wv
%hn = OpIAdd %u32 %h %c1
OpBranch %walk
%done = OpLabel
%op = OpAccessChain %pg_u32 %out %c0 %gx
OpStore %op %s Aligned 4",
            push_loads(0, &[("nodes", "%pnodes"), ("out", "%pbuf")])
        ),
    )
}

/// A pointer loaded from memory again and again, as glslang reloads `a.next` at every use:
/// invocation `i` links `a = nodes[2i]` and `b = nodes[2i + 1]` (`a.next = b`), reads `a.next`
/// twice, then writes `a.next = a` through a pointer to the same node computed another way
/// (`nodes[i + i]`, an alias the lowering cannot tell from its chain), and reads `a.next` once
/// more: `out[i] = v1 + 100 v2 + 10000 v3` of the values the three reads' nodes hold (the
/// second read may reuse the first, the third must see the write).
pub fn reloaded_pointers() -> Vec<u32> {
    let m = node_array();
    compute(
        push_constants(m, &["%pnodes", "%pbuf"]),
        &format!(
            "{}%ia = OpShiftLeftLogical %u32 %gx %c1
%ib = OpIAdd %u32 %ia %c1
%a = OpAccessChain %pnode %nodes %c0 %ia
%b = OpAccessChain %pnode %nodes %c0 %ib
%va = OpIAdd %u32 %gx %c10
%vb = OpIAdd %u32 %gx %c20
%avp = OpAccessChain %pg_u32 %a %c0
OpStore %avp %va Aligned 16
%bvp = OpAccessChain %pg_u32 %b %c0
OpStore %bvp %vb Aligned 16
%anext = OpAccessChain %pnext %a %c2
OpStore %anext %b Aligned 8
%p1 = OpLoad %pnode %anext Aligned 8
%p1v = OpAccessChain %pg_u32 %p1 %c0
%v1 = OpLoad %u32 %p1v Aligned 16
%anext2 = OpAccessChain %pnext %a %c2
%p2 = OpLoad %pnode %anext2 Aligned 8
%p2v = OpAccessChain %pg_u32 %p2 %c0
%v2 = OpLoad %u32 %p2v Aligned 16
%ialias = OpIAdd %u32 %gx %gx
%alias = OpAccessChain %pnode %nodes %c0 %ialias
%alias_next = OpAccessChain %pnext %alias %c2
OpStore %alias_next %alias Aligned 8
%anext3 = OpAccessChain %pnext %a %c2
%p3 = OpLoad %pnode %anext3 Aligned 8
%p3v = OpAccessChain %pg_u32 %p3 %c0
%v3 = OpLoad %u32 %p3v Aligned 16
%w2 = OpIMul %u32 %v2 %c100
%w3 = OpIMul %u32 %v3 %c10000
%w12 = OpIAdd %u32 %v1 %w2
%w = OpIAdd %u32 %w12 %w3
%op = OpAccessChain %pg_u32 %out %c0 %gx
OpStore %op %w Aligned 4",
            push_loads(0, &[("nodes", "%pnodes"), ("out", "%pbuf")])
        ),
    )
}

/// An element type for [`copy_elements`]: capabilities it needs, decorations and definitions
/// (of `ty` and what it uses beyond the standard names of [`spvasm`]), array stride and the
/// `Aligned` operand of its loads and stores.
pub struct Element {
    pub name: &'static str,
    pub capabilities: &'static [&'static str],
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
    let (ty, a) = (e.ty, e.align);
    let m = base(e.capabilities)
        .decorate(e.decorations)
        .globals(e.types)
        .decorate(&format!("OpDecorate %arrT ArrayStride {}\nOpDecorate %BufT Block\nOpMemberDecorate %BufT 0 Offset 0", e.stride))
        .globals(&format!("%arrT = OpTypeRuntimeArray {ty}\n%BufT = OpTypeStruct %arrT\n%pbufT = OpTypePointer PhysicalStorageBuffer %BufT\n%pT = OpTypePointer PhysicalStorageBuffer {ty}"));
    compute(
        push_constants(m, &["%pbufT", "%pbufT"]),
        &format!(
            "{}%ep = OpAccessChain %pT %src %c0 %gx\n%v = OpLoad {ty} %ep Aligned {a}\n%op = OpAccessChain %pT %dst %c0 %gx\nOpStore %op %v Aligned {a}",
            push_loads(0, &[("src", "%pbufT"), ("dst", "%pbufT")])
        ),
    )
}

/// `dst[n - 1] = src[n - 1]` for bytes (`uint8_t[]` through the two pointers, `n` the third
/// push constant), by invocation 0: the last byte of a buffer whose size may not be whole words.
pub fn copy_last_byte() -> Vec<u32> {
    let m = base(EIGHT_BIT)
        .decorate("OpDecorate %arr8 ArrayStride 1\nOpDecorate %Buf8 Block\nOpMemberDecorate %Buf8 0 Offset 0")
        .globals("%arr8 = OpTypeRuntimeArray %u8\n%Buf8 = OpTypeStruct %arr8\n%pbuf8 = OpTypePointer PhysicalStorageBuffer %Buf8");
    let last = "%i = OpISub %u32 %n %c1\n%ep = OpAccessChain %pg_u8 %src %c0 %i\n%v = OpLoad %u8 %ep Aligned 1\n\
                %op = OpAccessChain %pg_u8 %dst %c0 %i\nOpStore %op %v Aligned 1\n";
    compute(
        push_constants(m, &["%pbuf8", "%pbuf8", "%u32"]),
        &format!("{}{}", push_loads(0, &[("src", "%pbuf8"), ("dst", "%pbuf8"), ("n", "%u32")]), first_invocation(last, "then", "merge")),
    )
}

const INT64: &[&str] = &["Int64"];
const SIXTEEN_BIT: &[&str] = &["StorageBuffer16BitAccess", "StoragePushConstant16"];
const EIGHT_BIT: &[&str] = &["StorageBuffer8BitAccess", "StoragePushConstant8"];

/// The element types of the copy sweep (their bit patterns are never NaN-sensitive: floats are
/// only loaded and stored).
pub const ELEMENTS: &[Element] = &[
    Element { name: "uint", capabilities: &[], decorations: "", types: "", ty: "%u32", stride: 4, align: 4 },
    Element { name: "uvec2", capabilities: &[], decorations: "", types: "", ty: "%v2u", stride: 8, align: 8 },
    Element { name: "uvec3 (stride 16)", capabilities: &[], decorations: "", types: "", ty: "%v3u", stride: 16, align: 16 },
    Element { name: "uvec4", capabilities: &[], decorations: "", types: "", ty: "%v4u", stride: 16, align: 16 },
    Element { name: "uvec4 (Aligned 4)", capabilities: &[], decorations: "", types: "", ty: "%v4u", stride: 16, align: 4 },
    Element { name: "u64", capabilities: INT64, decorations: "", types: "", ty: "%u64", stride: 8, align: 8 },
    Element { name: "u64vec3", capabilities: INT64, decorations: "", types: "%T = OpTypeVector %u64 3", ty: "%T", stride: 32, align: 8 },
    Element { name: "u16", capabilities: SIXTEEN_BIT, decorations: "", types: "", ty: "%u16", stride: 2, align: 2 },
    Element { name: "u16vec3", capabilities: SIXTEEN_BIT, decorations: "", types: "%T = OpTypeVector %u16 3", ty: "%T", stride: 8, align: 2 },
    // Every access one aligned 8-byte unit of 16-bit components.
    Element { name: "u16vec4 (Aligned 8)", capabilities: SIXTEEN_BIT, decorations: "", types: "%T = OpTypeVector %u16 4", ty: "%T", stride: 8, align: 8 },
    Element { name: "u8", capabilities: EIGHT_BIT, decorations: "", types: "", ty: "%u8", stride: 1, align: 1 },
    Element { name: "f64", capabilities: &["Float64"], decorations: "", types: "", ty: "%f64", stride: 8, align: 8 },
    Element {
        name: "struct { uint; uvec2 @8; float @16 }",
        capabilities: &[],
        decorations: "OpMemberDecorate %T 0 Offset 0\nOpMemberDecorate %T 1 Offset 8\nOpMemberDecorate %T 2 Offset 16",
        types: "%T = OpTypeStruct %u32 %v2u %f32",
        ty: "%T",
        stride: 24,
        align: 8,
    },
    Element {
        name: "struct { uint[3] }",
        capabilities: &[],
        decorations: "OpDecorate %a3 ArrayStride 4\nOpMemberDecorate %T 0 Offset 0",
        types: "%a3 = OpTypeArray %u32 %c3\n%T = OpTypeStruct %a3",
        ty: "%T",
        stride: 12,
        align: 4,
    },
    Element {
        name: "struct { column-major mat2x3 }",
        capabilities: &[],
        decorations: "OpMemberDecorate %T 0 Offset 0\nOpMemberDecorate %T 0 ColMajor\nOpMemberDecorate %T 0 MatrixStride 16",
        types: "%m = OpTypeMatrix %v3f 2\n%T = OpTypeStruct %m",
        ty: "%T",
        stride: 32,
        align: 16,
    },
    Element {
        name: "struct { row-major mat2x3 }",
        capabilities: &[],
        decorations: "OpMemberDecorate %T 0 Offset 0\nOpMemberDecorate %T 0 RowMajor\nOpMemberDecorate %T 0 MatrixStride 8",
        types: "%m = OpTypeMatrix %v3f 2\n%T = OpTypeStruct %m",
        ty: "%T",
        stride: 24,
        align: 8,
    },
];

/// A matrix in a struct reached through access chains into it, as glslang writes `s.m`,
/// `s.m[1]` and `s.m[1][2]` on a buffer reference: `T = { uint pad; mat m; mat n; }` (3 columns
/// of 3 components of `float_bits`, column- or row-major, MatrixStride `stride`) in arrays
/// `%src` and `%dst` (push constants); per invocation `i`:
/// - `dst[i].m = src[i].m` through pointers to the matrices,
/// - `dst[i].n[0] = src[i].m[1]` through pointers to the columns, made by chains on those
///   matrix pointers (a row-major column's components are MatrixStride apart),
/// - `dst[i].pad = bits of float(src[i].m[1][2])` through a chain on the column pointer (on
///   the matrix pointer for a row-major matrix).
///
/// Only the chains say how the matrix is laid out (MatrixStride and RowMajor decorate the
/// struct member, not the pointer types).
pub fn matrix_chains(row_major: bool, float_bits: u32) -> Vec<u32> {
    let (f, v, comp, caps): (&str, &str, u32, &[&str]) = if float_bits == 16 { ("%f16", "%v3h", 2, SIXTEEN_BIT) } else { ("%f32", "%v3f", 4, &[]) };
    // Vulkan's base alignment of a vector of 3 (a column, or a row-major matrix's row: 3
    // columns): 4 components.
    let stride = 4 * comp;
    let size = 3 * stride;
    let (m_off, n_off) = (stride.max(4), stride.max(4) + size);
    let element = n_off + size;
    let major = if row_major { "RowMajor" } else { "ColMajor" };
    let (a, col_align) = (stride, if row_major { comp } else { stride });
    let m = base(caps)
        .decorate(&format!(
            "OpMemberDecorate %T 0 Offset 0\nOpMemberDecorate %T 1 Offset {m_off}\nOpMemberDecorate %T 1 {major}\nOpMemberDecorate %T 1 MatrixStride {stride}\n\
             OpMemberDecorate %T 2 Offset {n_off}\nOpMemberDecorate %T 2 {major}\nOpMemberDecorate %T 2 MatrixStride {stride}\n\
             OpDecorate %arrT ArrayStride {element}\nOpDecorate %BufT Block\nOpMemberDecorate %BufT 0 Offset 0"
        ))
        .globals(&format!(
            "%mat = OpTypeMatrix {v} 3\n%T = OpTypeStruct %u32 %mat %mat\n%arrT = OpTypeRuntimeArray %T\n%BufT = OpTypeStruct %arrT\n\
             %pbufT = OpTypePointer PhysicalStorageBuffer %BufT\n%pmat = OpTypePointer PhysicalStorageBuffer %mat\n\
             %pcol = OpTypePointer PhysicalStorageBuffer {v}\n%pcomp = OpTypePointer PhysicalStorageBuffer {f}"
        ));
    // 16-bit storage allows conversions, not bitcasts, of 16-bit values (exact for f16 → f32).
    let widen = if float_bits == 16 { "%xf = OpFConvert %f32 %x\n%xw = OpBitcast %u32 %xf" } else { "%xw = OpBitcast %u32 %x" };
    // VUID-StandaloneSpirv-PhysicalStorageBuffer64-04709: a chain into a row-major matrix is
    // only a load's or store's pointer; a component of its column is chained from the matrix.
    let component = if row_major { "%sm %c1 %c2" } else { "%scol %c2" };
    compute(
        push_constants(m, &["%pbufT", "%pbufT"]),
        &format!(
            "{}%sm = OpAccessChain %pmat %src %c0 %gx %c1
%mv = OpLoad %mat %sm Aligned {a}
%dm = OpAccessChain %pmat %dst %c0 %gx %c1
OpStore %dm %mv Aligned {a}
%scol = OpAccessChain %pcol %sm %c1
%col = OpLoad {v} %scol Aligned {col_align}
%dn = OpAccessChain %pmat %dst %c0 %gx %c2
%dcol = OpAccessChain %pcol %dn %c0
OpStore %dcol %col Aligned {col_align}
%sx = OpAccessChain %pcomp {component}
%x = OpLoad {f} %sx Aligned {comp}
{widen}
%dpad = OpAccessChain %pg_u32 %dst %c0 %gx %c0
OpStore %dpad %xw Aligned 4",
            push_loads(0, &[("src", "%pbufT"), ("dst", "%pbufT")])
        ),
    )
}

/// The access-chain shapes of [`chain_paths`]: `(name, value type, Aligned, chain)`; `chain`
/// is what follows `%c0 %gx` into element `i` of a `%Chains` array, or `{matrix k} …` (a chain
/// to member `k`, then one into it) or `{ptr}` (OpPtrAccessChain), see [`chain_paths`].
const CHAIN_PATHS: &[(&str, &str, u32, &str)] = &[
    ("vector component, dynamic", "%f32", 4, "%c1 %d3"),
    ("column-major column, dynamic", "%v3f", 16, "%c2 %d3"),
    ("column-major element, dynamic", "%f32", 4, "%c2 %d3 %e3"),
    ("row-major column, dynamic", "%v3f", 4, "%c3 %d3"),
    ("row-major element, dynamic", "%f32", 4, "%c3 %d3 %e3"),
    ("array element, dynamic", "%f32", 4, "%c4 %d4"),
    ("array-of-matrices column", "%v4f", 16, "%c5 %d2 %e2"),
    ("array-of-matrices element", "%f32", 4, "%c5 %d2 %e2 %d4"),
    ("struct-in-array member component", "%f32", 4, "%c6 %d3 %c1 %d2"),
    ("whole row-major matrix", "%mat3", 16, "%c3"),
    ("whole array of matrices", "%arrm", 16, "%c5"),
    ("column-major element from the matrix's pointer", "%f32", 4, "{matrix 2} %d3 %e3"),
    ("row-major element from the matrix's pointer", "%f32", 4, "{matrix 3} %d3 %e3"),
    ("OpPtrAccessChain on an array element", "%f32", 4, "{ptr}"),
];

/// The dynamic indices of [`chain_paths`] and [`pointer_flows`]: `%d3 = i % 3`, `%e3 = i / 3 % 3`,
/// `%d2 = i % 2`, `%e2 = i / 2 % 2`, `%d4 = i % 4`.
const CHAIN_INDICES: &str = "%d3 = OpUMod %u32 %gx %c3\n%q3 = OpUDiv %u32 %gx %c3\n%e3 = OpUMod %u32 %q3 %c3\n\
                             %d2 = OpUMod %u32 %gx %c2\n%q2 = OpUDiv %u32 %gx %c2\n%e2 = OpUMod %u32 %q2 %c2\n%d4 = OpUMod %u32 %gx %c4\n";

/// The module of [`chain_paths`] and [`pointer_flows`]: the `%Chains` type, `%pS` (a pointer to
/// one), `%pbufC` (to an array of them) and the push constants `%src`, `%dst` of that type.
fn chains_module(capabilities: &[&str]) -> Module {
    let m = base(capabilities)
        .decorate(
            "OpMemberDecorate %Chains 0 Offset 0\nOpMemberDecorate %Chains 1 Offset 16\n\
             OpMemberDecorate %Chains 2 Offset 32\nOpMemberDecorate %Chains 2 ColMajor\nOpMemberDecorate %Chains 2 MatrixStride 16\n\
             OpMemberDecorate %Chains 3 Offset 80\nOpMemberDecorate %Chains 3 RowMajor\nOpMemberDecorate %Chains 3 MatrixStride 16\n\
             OpMemberDecorate %Chains 4 Offset 128\nOpMemberDecorate %Chains 5 Offset 144\nOpMemberDecorate %Chains 5 ColMajor\n\
             OpMemberDecorate %Chains 5 MatrixStride 16\nOpMemberDecorate %Chains 6 Offset 208\n\
             OpMemberDecorate %In 0 Offset 0\nOpMemberDecorate %In 1 Offset 8\n\
             OpDecorate %arr4 ArrayStride 4\nOpDecorate %arrm ArrayStride 32\nOpDecorate %arrIn ArrayStride 16\n\
             OpDecorate %arrC ArrayStride 256\nOpDecorate %BufC Block\nOpMemberDecorate %BufC 0 Offset 0\nOpDecorate %pg_f32 ArrayStride 4",
        )
        .globals(
            "%mat3 = OpTypeMatrix %v3f 3\n%mat24 = OpTypeMatrix %v4f 2\n%arr4 = OpTypeArray %f32 %c4\n%arrm = OpTypeArray %mat24 %c2\n\
             %In = OpTypeStruct %u32 %v2f\n%arrIn = OpTypeArray %In %c3\n%Chains = OpTypeStruct %u32 %v3f %mat3 %mat3 %arr4 %arrm %arrIn\n\
             %arrC = OpTypeRuntimeArray %Chains\n%BufC = OpTypeStruct %arrC\n%pbufC = OpTypePointer PhysicalStorageBuffer %BufC\n\
             %pmat3 = OpTypePointer PhysicalStorageBuffer %mat3\n%parrm = OpTypePointer PhysicalStorageBuffer %arrm\n%pS = OpTypePointer PhysicalStorageBuffer %Chains",
        );
    push_constants(m, &["%pbufC", "%pbufC"])
}

/// One compute shader per shape of [`CHAIN_PATHS`]: invocation `i` loads the value at that
/// chain in `src[i]` and stores it at the same chain in `dst[i]`, through arrays of
/// `Chains = { uint a; vec3 v @16; column-major mat3 cm @32; row-major mat3 rm @80;
/// float arr[4] @128; column-major mat2x4 arrm[2] @144; { uint x; vec2 y @8 } in[3] @208 }`
/// (MatrixStride 16, 256 bytes), with dynamic indices from `i` (`%d3 = i % 3`, `%e3 = i / 3 % 3`,
/// `%d2`, `%e2`, `%d4` alike). `{matrix k}` chains to member `k` first and into that matrix
/// with a second chain; `{ptr}` is `OpPtrAccessChain` by `i % 4` on a pointer to `arr[0]`.
pub fn chain_paths() -> Vec<(&'static str, Vec<u32>)> {
    chain_shaders(&chains_module(&[]), CHAIN_PATHS, &[("%mat3", "%pmat3"), ("%arrm", "%parrm")])
}

/// The shaders of `shapes` (see [`CHAIN_PATHS`]) in `m`, whose push constants `%src` and `%dst`
/// are `%pbufC` pointers; `pointers` names the pointer types of the module's own value types
/// (`%pg_T` is spvasm's for its standard types).
fn chain_shaders(m: &Module, shapes: &[(&'static str, &str, u32, &str)], pointers: &[(&str, &str)]) -> Vec<(&'static str, Vec<u32>)> {
    shapes
        .iter()
        .map(|&(name, ty, align, chain)| {
            let pointer = |side: &str| -> String {
                let ptr_ty = pointers.iter().find(|(t, _)| *t == ty).map_or_else(|| format!("%pg_{}", &ty[1..]), |(_, p)| p.to_string());
                if let Some(rest) = chain.strip_prefix("{matrix ") {
                    let (member, tail) = rest.split_once("} ").unwrap();
                    format!("%{side}_m = OpAccessChain %pmat3 %{side} %c0 %gx %c{member}\n%{side}_at = OpAccessChain {ptr_ty} %{side}_m {tail}\n")
                } else if chain == "{ptr}" {
                    format!("%{side}_e = OpAccessChain {ptr_ty} %{side} %c0 %gx %c4 %c0\n%{side}_at = OpPtrAccessChain {ptr_ty} %{side}_e %d4\n")
                } else {
                    format!("%{side}_at = OpAccessChain {ptr_ty} %{side} %c0 %gx {chain}\n")
                }
            };
            let code = format!(
                "{}{CHAIN_INDICES}{}%v = OpLoad {ty} %src_at Aligned {align}\n{}OpStore %dst_at %v Aligned {align}",
                push_loads(0, &[("src", "%pbufC"), ("dst", "%pbufC")]),
                pointer("src"),
                pointer("dst")
            );
            (name, compute(m.clone(), &code))
        })
        .collect()
}

/// The 8/16-bit shapes of [`small_chain_paths`], as [`CHAIN_PATHS`].
const SMALL_CHAIN_PATHS: &[(&str, &str, u32, &str)] = &[
    ("u8 member", "%u8", 1, "%c0"),
    ("u8 neighbour", "%u8", 1, "%c1"),
    ("u16 member", "%u16", 2, "%c2"),
    ("u16vec3", "%u16v3", 8, "%c3"),
    ("u16vec3 component, dynamic", "%u16", 2, "%c3 %d3"),
    ("u8 array element, dynamic", "%u8", 1, "%c4 %d4"),
    ("f16 member", "%f16", 4, "%c5"),
    ("i16vec2", "%i16v2", 8, "%c6"),
    ("u8vec4", "%u8v4", 4, "%c7"),
    ("u8vec4 component, dynamic", "%u8", 1, "%c7 %d4"),
    ("whole struct", "%Small", 8, ""),
];

/// [`chain_paths`] for 8/16-bit members (8/16-bit storage, with Int8, Int16 and Float16 for the
/// whole-struct copy): arrays of
/// `Small = { u8 a; u8 b @1; u16 c @2; u16vec3 v @8; u8 arr[6] @14; f16 h @20; i16vec2 w @24;
/// u8vec4 q @28; }` (32 bytes) behind `%pbufC`; neighbouring bytes belong to one invocation's
/// element, and the elements of neighbouring invocations share no word.
pub fn small_chain_paths() -> Vec<(&'static str, Vec<u32>)> {
    let m = base(&[EIGHT_BIT, SIXTEEN_BIT, &["Int8", "Int16", "Float16"]].concat())
        .decorate(
            "OpMemberDecorate %Small 0 Offset 0\nOpMemberDecorate %Small 1 Offset 1\nOpMemberDecorate %Small 2 Offset 2\n\
             OpMemberDecorate %Small 3 Offset 8\nOpMemberDecorate %Small 4 Offset 14\nOpMemberDecorate %Small 5 Offset 20\n\
             OpMemberDecorate %Small 6 Offset 24\nOpMemberDecorate %Small 7 Offset 28\nOpDecorate %arr6 ArrayStride 1\n\
             OpDecorate %arrC ArrayStride 32\nOpDecorate %BufC Block\nOpMemberDecorate %BufC 0 Offset 0",
        )
        .globals(
            "%u16v3 = OpTypeVector %u16 3\n%i16v2 = OpTypeVector %i16 2\n%u8v4 = OpTypeVector %u8 4\n%arr6 = OpTypeArray %u8 %c6\n\
             %Small = OpTypeStruct %u8 %u8 %u16 %u16v3 %arr6 %f16 %i16v2 %u8v4\n%arrC = OpTypeRuntimeArray %Small\n%BufC = OpTypeStruct %arrC\n\
             %pbufC = OpTypePointer PhysicalStorageBuffer %BufC\n%pu16v3 = OpTypePointer PhysicalStorageBuffer %u16v3\n\
             %pi16v2 = OpTypePointer PhysicalStorageBuffer %i16v2\n%pu8v4 = OpTypePointer PhysicalStorageBuffer %u8v4\n\
             %pSmall = OpTypePointer PhysicalStorageBuffer %Small",
        );
    let pointers = [("%u16v3", "%pu16v3"), ("%i16v2", "%pi16v2"), ("%u8v4", "%pu8v4"), ("%Small", "%pSmall")];
    chain_shaders(&push_constants(m, &["%pbufC", "%pbufC"]), SMALL_CHAIN_PATHS, &pointers)
}

/// How pointers into `%Chains` arrays flow before they are used, one compute shader each
/// (the body after the push-constant loads and [`CHAIN_INDICES`]; `%sa`/`%da` point to
/// `src[i]`/`dst[i]`): every shape copies some of `src[i]` into `dst[i]`.
const POINTER_FLOWS: &[(&str, &str)] = &[
    (
        "pointer returned by a function",
        "%sp = OpFunctionCall %pg_v3f %member_v %src %gx\n%dp = OpFunctionCall %pg_v3f %member_v %dst %gx\n\
         %v = OpLoad %v3f %sp Aligned 16\nOpStore %dp %v Aligned 16",
    ),
    ("struct pointers passed to a function", "%r = OpFunctionCall %void %copy_rm %sa %da"),
    (
        "pointer returned by a function called once",
        "%sp = OpFunctionCall %pg_v3f %member_v %src %gx\n%v = OpLoad %v3f %sp Aligned 16\n%dp = OpAccessChain %pg_v3f %da %c1\n\
         OpStore %dp %v Aligned 16",
    ),
    (
        "select of a pointer and an element after it",
        "%sx = OpAccessChain %pg_f32 %sa %c4 %c0\n%sk = OpPtrAccessChain %pg_f32 %sx %d4\n%odd = OpIEqual %bool %d2 %c1\n\
         %sel = OpSelect %pg_f32 %odd %sk %sx\n%x = OpLoad %f32 %sel Aligned 4\n%dx = OpAccessChain %pg_f32 %da %c4 %d4\nOpStore %dx %x Aligned 4",
    ),
    (
        "pointer made again from its bits",
        "%su = OpConvertPtrToU %u64 %sa\n%sb = OpConvertUToPtr %pS %su\n%sx = OpAccessChain %pg_f32 %sb %c4 %d4\n%x = OpLoad %f32 %sx Aligned 4\n\
         %dv = OpBitcast %v2u %da\n%db = OpBitcast %pS %dv\n%dx = OpAccessChain %pg_f32 %db %c4 %d4\nOpStore %dx %x Aligned 4",
    ),
    (
        "select between two pointers",
        "%other = OpBitwiseXor %u32 %gx %c1\n%so = OpAccessChain %pS %src %c0 %other\n%odd = OpIEqual %bool %d2 %c1\n\
         %sel = OpSelect %pS %odd %so %sa\n%sx = OpAccessChain %pg_f32 %sel %c4 %d4\n%x = OpLoad %f32 %sx Aligned 4\n\
         %dx = OpAccessChain %pg_f32 %da %c4 %d4\nOpStore %dx %x Aligned 4",
    ),
    (
        "phi of pointers",
        "%odd = OpIEqual %bool %d2 %c1\nOpSelectionMerge %join None\nOpBranchConditional %odd %then %else\n\
         %then = OpLabel\n%other = OpBitwiseXor %u32 %gx %c1\n%so = OpAccessChain %pS %src %c0 %other\nOpBranch %join\n\
         %else = OpLabel\nOpBranch %join\n%join = OpLabel\n%ph = OpPhi %pS %so %then %sa %else\n\
         %sm = OpAccessChain %pg_v3f %ph %c2 %e3\n%m = OpLoad %v3f %sm Aligned 16\n%dm = OpAccessChain %pg_v3f %da %c2 %e3\nOpStore %dm %m Aligned 16",
    ),
    (
        "pointer kept in a Function variable",
        "OpStore %var %sa\n%back = OpLoad %pS %var\n%sy = OpAccessChain %pg_v2f %back %c6 %d3 %c1\n%y = OpLoad %v2f %sy Aligned 8\n\
         %dy = OpAccessChain %pg_v2f %da %c6 %d3 %c1\nOpStore %dy %y Aligned 8",
    ),
    ("OpCopyMemory of a whole element", "OpCopyMemory %da %sa Aligned 16 Aligned 16"),
    ("OpLoad and OpStore of a whole element", "%all = OpLoad %Chains %sa Aligned 16\nOpStore %da %all Aligned 16"),
    (
        "an element stored back where it was loaded, changed between",
        "%all = OpLoad %Chains %sa Aligned 16\nOpStore %sa %all Aligned 16\n%sx = OpAccessChain %pg_u32 %sa %c0\nOpStore %sx %c9 Aligned 4\n\
         %x9 = OpLoad %u32 %sx Aligned 4\nOpStore %sa %all Aligned 16\n%x = OpLoad %u32 %sx Aligned 4\n%xs = OpIAdd %u32 %x %x9\n\
         %dx = OpAccessChain %pg_u32 %da %c0\nOpStore %dx %xs Aligned 4",
    ),
    (
        "pointer from integer arithmetic",
        "%su = OpConvertPtrToU %u64 %sa\n%off = OpUConvert %u64 %c128\n%su2 = OpIAdd %u64 %su %off\n%arr = OpConvertUToPtr %parr4 %su2\n\
         %sx = OpAccessChain %pg_f32 %arr %d4\n%x = OpLoad %f32 %sx Aligned 4\n%dx = OpAccessChain %pg_f32 %da %c4 %d4\nOpStore %dx %x Aligned 4",
    ),
    (
        "signed atomics through a bitcast pointer",
        "%sx = OpAccessChain %pg_u32 %sa %c6 %d3 %c0\n%ux = OpLoad %u32 %sx Aligned 4\n%x = OpBitcast %i32 %ux\n\
         %du = OpAccessChain %pg_u32 %da %c6 %d3 %c0\n%di = OpBitcast %pg_i32 %du\nOpStore %di %i7 Aligned 4\n\
         %o1 = OpAtomicIAdd %i32 %di %c1 %c0 %x\n%o2 = OpAtomicSMax %i32 %di %c1 %c0 %i9\n%o3 = OpAtomicSMin %i32 %di %c1 %c0 %x\n\
         %o12 = OpBitwiseXor %i32 %o1 %o2\n%o123 = OpBitwiseXor %i32 %o12 %o3\n%ou = OpBitcast %u32 %o123\n\
         %da0 = OpAccessChain %pg_u32 %da %c0\nOpStore %da0 %ou Aligned 4",
    ),
    (
        "exchange, compare-exchange, load and store atomics",
        "%sx = OpAccessChain %pg_u32 %sa %c6 %d3 %c0\n%x = OpLoad %u32 %sx Aligned 4\n%dx = OpAccessChain %pg_u32 %da %c6 %d3 %c0\n\
         %o1 = OpAtomicExchange %u32 %dx %c1 %c0 %x\n%o2 = OpAtomicCompareExchange %u32 %dx %c1 %c0 %c0 %c9 %x\n\
         %o3 = OpAtomicLoad %u32 %dx %c1 %c0\n%dy = OpAccessChain %pg_u32 %da %c0\nOpAtomicStore %dy %c1 %c0 %o3\n\
         %o12 = OpIAdd %u32 %o1 %o2\n%dz = OpAccessChain %pg_u32 %da %c6 %e3 %c0\n%zo = OpAtomicOr %u32 %dz %c1 %c0 %o12",
    ),
    (
        "atomic add through a chain",
        "%sx = OpAccessChain %pg_u32 %sa %c6 %d3 %c0\n%x = OpLoad %u32 %sx Aligned 4\n%dx = OpAccessChain %pg_u32 %da %c6 %d3 %c0\n\
         %old = OpAtomicIAdd %u32 %dx %c1 %c0 %x\n%ox = OpAccessChain %pg_u32 %da %c0\nOpStore %ox %old Aligned 4",
    ),
];

/// One compute shader per [`POINTER_FLOWS`] shape, in the module of [`chain_paths`] (Int64
/// for the integer arithmetic) with its helper functions: `%member_v(base, i)` returns a pointer
/// to `base[i].v`; `%copy_rm(a, b)` copies the row-major matrix `a.rm` to `b.rm` and `a.arrm[1]`
/// to `b.arrm[1]`.
pub fn pointer_flows() -> Vec<(&'static str, Vec<u32>)> {
    let m = chains_module(INT64)
        .globals(
            "%fn_member = OpTypeFunction %pg_v3f %pbufC %u32\n%fn_copy = OpTypeFunction %void %pS %pS\n\
             %fvarS = OpTypePointer Function %pS\n%parr4 = OpTypePointer PhysicalStorageBuffer %arr4",
        )
        .function(
            "%member_v = OpFunction %pg_v3f None %fn_member\n%mb = OpFunctionParameter %pbufC\n%mi = OpFunctionParameter %u32\n\
             %ml = OpLabel\n%mp = OpAccessChain %pg_v3f %mb %c0 %mi %c1\nOpReturnValue %mp\nOpFunctionEnd",
        )
        .function(
            "%copy_rm = OpFunction %void None %fn_copy\n%ca = OpFunctionParameter %pS\n%cb = OpFunctionParameter %pS\n%cl = OpLabel\n\
             %cas = OpAccessChain %pmat3 %ca %c3\n%cm = OpLoad %mat3 %cas Aligned 16\n%cbs = OpAccessChain %pmat3 %cb %c3\nOpStore %cbs %cm Aligned 16\n\
             %cam = OpAccessChain %pmat24 %ca %c5 %c1\n%cn = OpLoad %mat24 %cam Aligned 16\n%cbm = OpAccessChain %pmat24 %cb %c5 %c1\n\
             OpStore %cbm %cn Aligned 16\nOpReturn\nOpFunctionEnd",
        )
        .globals("%pmat24 = OpTypePointer PhysicalStorageBuffer %mat24");
    POINTER_FLOWS
        .iter()
        .map(|&(name, flow)| {
            let code = format!(
                "{}{CHAIN_INDICES}%sa = OpAccessChain %pS %src %c0 %gx\n%da = OpAccessChain %pS %dst %c0 %gx\n{flow}",
                push_loads(0, &[("src", "%pbufC"), ("dst", "%pbufC")])
            );
            (name, compute_with_variables(m.clone(), "%var = OpVariable %fvarS Function\n", &code))
        })
        .collect()
}

/// The [`POINTER_FLOWS`] select and phi shapes in a SPIR-V 1.3 module (glslang for Vulkan 1.1
/// with `GL_EXT_buffer_reference`): before SPIR-V 1.4 an OpSelect of vectors — the uvec2
/// addresses of a target without Int64 — takes a vector condition.
pub fn pointer_flows_spirv13() -> Vec<(&'static str, Vec<u32>)> {
    let m = chains_module(&[]).spirv(3);
    POINTER_FLOWS
        .iter()
        .filter(|(name, _)| name.starts_with("select") || name.starts_with("phi"))
        .map(|&(name, flow)| {
            let code = format!("{}{CHAIN_INDICES}%sa = OpAccessChain %pS %src %c0 %gx\n%da = OpAccessChain %pS %dst %c0 %gx\n{flow}", push_loads(0, &[("src", "%pbufC"), ("dst", "%pbufC")]));
            (name, compute(m.clone(), &code))
        })
        .collect()
}

/// The bytes of one [`matrix_chains`] array element (`T`).
pub fn matrix_chains_element(float_bits: u32) -> u32 {
    let stride = 4 * float_bits / 8;
    stride.max(4) + 6 * stride
}

/// `out[0] += i` by every invocation (OpAtomicIAdd through a pointer, device scope), and
/// `out[1 + i] = i` through OpPtrAccessChain on a pointer to `out[1]` (the pointer type's
/// ArrayStride 4).
pub fn atomics_and_ptr_chains() -> Vec<u32> {
    let m = base(&[]).decorate("OpDecorate %pg_u32 ArrayStride 4").globals("%device = OpConstant %u32 1");
    compute(
        push_constants(m, &["%pbuf"]),
        &format!(
            "{}%counter = OpAccessChain %pg_u32 %o %c0 %c0
%old = OpAtomicIAdd %u32 %counter %device %c0 %gx
%first = OpAccessChain %pg_u32 %o %c0 %c1
%mine = OpPtrAccessChain %pg_u32 %first %gx
OpStore %mine %gx Aligned 4",
            push_loads(0, &[("o", "%pbuf")])
        ),
    )
}

/// `out[i] = in[4 i + 1]` through an OpRawAccessChainNV on a physical base (stride 16, index i,
/// offset 4): SPV_NV_raw_access_chains and SPV_KHR_physical_storage_buffer both emulated.
pub fn raw_chain_on_pointer() -> Vec<u32> {
    src_dst(
        base(&[]).raw_access_chains(),
        r#"
%rc = OpRawAccessChainNV %pg_u32 %src %c16 %gx %c4
%v = OpLoad %u32 %rc Aligned 4
%op = OpAccessChain %pg_u32 %dst %c0 %gx
OpStore %op %v Aligned 4
"#,
    )
}

/// The graphics shaders' module: `GLSL.std.450` as `%ext`, and the push constants both stages
/// declare, a pointer `%verts` to `vec4 positions[]` (offset 0) and one `%cols` to
/// `uint colors[]` (offset 8, a `%pbuf`); `main` loads the one stage `vertex` uses, then `body`.
fn graphics_module(m: Module, vertex: bool, body: &str) -> Vec<u32> {
    let m = physical(m.import("%ext", "GLSL.std.450"))
        .block("Verts", "%v4f", 16)
        .globals("%pverts = OpTypePointer PhysicalStorageBuffer %Verts");
    let load = if vertex { push_loads(0, &[("verts", "%pverts")]) } else { push_loads(1, &[("cols", "%pbuf")]) };
    assemble(&push_constants(m, &["%pverts", "%pbuf"]).main(&format!("{load}{body}")))
}

/// Vertex shader: `gl_Position = positions[gl_VertexIndex]` through the pointer at push
/// constant 0.
pub fn graphics_vs() -> Vec<u32> {
    graphics_module(
        Module::new("Vertex").builtin("%vid", "VertexIndex", "Input", "%i32").builtin("%pos", "Position", "Output", "%v4f"),
        true,
        r#"
%i = OpLoad %i32 %vid
%e = OpAccessChain %pg_v4f %verts %c0 %i
%v = OpLoad %v4f %e Aligned 16
OpStore %pos %v
"#,
    )
}

/// Fragment shader: the pixel's colour is `unpackUnorm4x8(colors[y * width + x])` through the
/// pointer at push constant 8.
pub fn graphics_fs(width: u32) -> Vec<u32> {
    graphics_module(
        Module::new("Fragment")
            .frag_coord()
            .decorate("OpDecorate %color Location 0")
            .globals(&format!("%color = OpVariable %pout_v4f Output\n%w = OpConstant %u32 {width}")),
        false,
        &format!(
            "{FRAG_XY}
%row = OpIMul %u32 %py %w
%i = OpIAdd %u32 %row %px
%e = OpAccessChain %pg_u32 %cols %c0 %i
%packed = OpLoad %u32 %e Aligned 4
%rgba = OpExtInst %v4f %ext UnpackUnorm4x8 %packed
OpStore %color %rgba"
        ),
    )
}
