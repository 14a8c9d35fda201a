//! Generates spirv_polyfill.h from the crate's source into OUT_DIR; tests/header.rs checks that
//! the committed include/spirv_polyfill.h is the same text.
//!
//! Gives libspirv_polyfill.so the SONAME `libspirv_polyfill.so.<major>` (0 while the version is
//! 0.x: Debian's and the usual ELF convention), so programs linked against it record the major
//! version, not the bare development name; packaging installs it as
//! `libspirv_polyfill.so.<version>` with the `.so.<major>` and `.so` links.
fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libspirv_polyfill.so.{major}");
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("spirv_polyfill.h");
    let config = cbindgen::Config::from_file(format!("{crate_dir}/cbindgen.toml")).expect("cbindgen.toml");
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate spirv_polyfill.h")
        .write_to_file(out);
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
}
