//! Link options of the cdylib.
//!
//! `-Bsymbolic`: references from the library to symbols it defines itself bind inside the
//! library at link time, never through the dynamic symbol table. Without it the layer's own
//! `vkGetInstanceProcAddr` (handed to the loader during negotiation and returned for
//! `vkGetInstanceProcAddr` queries) is reached through a GLOB_DAT relocation, which the dynamic
//! linker resolves to libvulkan's export of the same name when the application links
//! `-lvulkan`: the loader then calls its own trampolines and deadlocks (or fails to find
//! `vkCreateInstance`). The Khronos layers link the same way (`-Wl,-Bsymbolic`, and export only
//! the loader-interface entry points, which rustc's cdylib version script already ensures for the
//! `#[no_mangle]` functions of loader_interface.rs). `tests/tests/real_programs.rs` checks both.
//!
//! `-z nodelete`: the loader may dlclose() the layer while Rust statics or threads still refer
//! to its code; nodelete keeps the text mapped (the layer also avoids thread-local destructors
//! and never drops its globals).
//!
//! `-soname`: the library's own name, unversioned like Mesa's layers (the loader dlopen()s it by
//! the manifest's library_path; nothing links against it), so the packaged library in the
//! multiarch directory has the SONAME Debian's tools expect of a shared object there.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libVkLayer_polyfill_extensions.so");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    println!("cargo:rerun-if-changed=build.rs");
}
