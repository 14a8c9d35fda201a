//! Link the cdylib with `-z nodelete`: the loader may dlclose() the layer while Rust statics or
//! threads still refer to its code; nodelete keeps the text mapped (the layer also avoids
//! thread-local destructors and never drops its globals).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    println!("cargo:rerun-if-changed=build.rs");
}
