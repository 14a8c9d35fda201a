//! `polyfill-demo`: runs compute shaders that use `OpRawAccessChainNV` on lavapipe through
//! `VK_LAYER_POLYFILL_extensions` and checks them against the CPU.
//!
//! Usage: `polyfill-demo [--validation] [--verbose]`
//!   --validation  put VK_LAYER_KHRONOS_validation below the layer and report its errors
//!   --verbose     print the disassembly of each shader
//!
//! The layer is taken from the build directory next to this binary (or `$POLYFILL_LAYER_LIB`);
//! if it is not built there, a layer installed with `packaging/install-layer.sh` is used.

use polyfill_e2e::samples;
use polyfill_e2e::vk::{driver_has_extension, RAW_ACCESS_CHAINS_EXT};
use polyfill_e2e::{layer, tools, Context, ContextOptions};
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("usage: polyfill-demo [--validation] [--verbose]");
        return ExitCode::SUCCESS;
    }
    let validation = args.iter().any(|a| a == "--validation");
    let verbose = args.iter().any(|a| a == "--verbose" || a == "-v");
    if let Some(bad) = args.iter().find(|a| !matches!(a.as_str(), "--validation" | "--verbose" | "-v")) {
        eprintln!("polyfill-demo: unknown argument {bad:?} (try --help)");
        return ExitCode::from(2);
    }
    match run(validation, verbose) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("polyfill-demo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(validation: bool, verbose: bool) -> Result<bool, String> {
    println!("vkpolyfill demo: VK_NV_raw_access_chains through {}", layer::LAYER_NAME);
    let t = tools::spirv_tools()?;
    match layer::try_library_path() {
        Ok(p) => println!("  layer       : {}", p.display()),
        Err(_) => println!("  layer       : (not built next to this binary; using an installed one)"),
    }
    println!("  SPIRV-Tools : v{}.{} ({})", t.version.0, t.version.1, t.bin_dir.display());

    let native = driver_has_extension(RAW_ACCESS_CHAINS_EXT)?;
    let ctx = Context::new(&ContextOptions::raw_access_chains().validation(validation))?;
    let p = ctx.properties();
    println!(
        "  device      : {} (Vulkan {}.{}.{})",
        ctx.device_name(),
        polyfill_e2e::ash::vk::api_version_major(p.api_version),
        polyfill_e2e::ash::vk::api_version_minor(p.api_version),
        polyfill_e2e::ash::vk::api_version_patch(p.api_version)
    );
    println!(
        "  extension   : {RAW_ACCESS_CHAINS_EXT} {}",
        if native { "supported natively by the driver (layer passes it through)" } else { "EMULATED by the layer (driver lacks it)" }
    );
    // What vkGetPhysicalDeviceFeatures2 reports through the layer (Debian's vulkaninfo 1.3.239
    // predates VkPhysicalDeviceRawAccessChainsFeaturesNV and cannot print it).
    println!("  feature     : shaderRawAccessChains = {}", ctx.query_raw_access_chains_feature());
    println!("  validation  : {}", if validation { "VK_LAYER_KHRONOS_validation below the layer" } else { "off (--validation)" });
    println!();
    println!("  {:<18} {:>20} {:>11}  result", "shader", "vkCreateShaderModule", "dispatch");

    let mut all_ok = true;
    for s in samples::raw_access_chain_samples(None) {
        if s.needs_16bit && !(ctx.features().shader_int16 && ctx.features().storage_buffer_16bit) {
            println!("  {:<18} {:>20} {:>11}  - skipped (device lacks 16-bit storage)", s.name, "", "");
            continue;
        }
        let words = s.assemble()?;
        if verbose {
            println!("{}", tools::spirv_dis_with(&words, &[]));
        }
        ctx.clear_validation_messages();
        let t0 = Instant::now();
        let module = ctx.create_shader_module(&words);
        let create = t0.elapsed();
        let module = match module {
            Ok(m) => m,
            Err(e) => {
                all_ok = false;
                println!(
                    "  {:<18} {:>20} {:>11}  ✗ the layer could not rewrite it ({e}); run with \
                     VK_POLYFILL_EXTENSIONS_LOG_LEVEL=info for the reason",
                    s.name, "failed", "-"
                );
                continue;
            }
        };
        let t1 = Instant::now();
        let result = ctx.run_compute_module(module, &s.job);
        let dispatch = t1.elapsed();
        ctx.destroy_shader_module(module);
        let verdict = match result.and_then(|out| s.check(&out)) {
            Ok(()) => "✓ matches CPU".to_string(),
            Err(e) => {
                all_ok = false;
                format!("✗ {e}")
            }
        };
        println!(
            "  {:<18} {:>17.2} ms {:>8.2} ms  {verdict}",
            s.name,
            create.as_secs_f64() * 1e3,
            dispatch.as_secs_f64() * 1e3
        );
        println!("  {:<18} {}", "", s.description);
        let errs = ctx.validation_errors();
        if !errs.is_empty() {
            all_ok = false;
            println!("  {:<18} ✗ {} validation error(s):", "", errs.len());
            for e in errs.iter().take(5) {
                println!("  {:<18}   {e}", "");
            }
        }
    }
    println!();
    println!("{}", if all_ok { "all shaders match the CPU reference" } else { "FAILED: see ✗ above" });
    Ok(all_ok)
}
