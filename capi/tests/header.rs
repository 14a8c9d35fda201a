//! The committed include/spirv_polyfill.h is what cbindgen generates from the source now
//! (build.rs writes it into OUT_DIR). `SPVPF_UPDATE_HEADER=1 cargo test --release -p
//! spirv-polyfill-capi --test header` rewrites the committed copy.
#[test]
fn committed_header_is_generated_one() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/spirv_polyfill.h"));
    let committed_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include/spirv_polyfill.h");
    if std::env::var_os("SPVPF_UPDATE_HEADER").is_some() {
        std::fs::write(&committed_path, generated).unwrap();
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} differs from cbindgen's output for the current source; regenerate it with \
         SPVPF_UPDATE_HEADER=1 cargo test --release -p spirv-polyfill-capi --test header",
        committed_path.display()
    );
}
