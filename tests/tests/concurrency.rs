//! Shader modules created and dispatched from 16 threads at once through the layer.

use polyfill_e2e::samples::{self, Sample};
use polyfill_e2e::vk::shared_layer_context;
use std::sync::Arc;

const THREADS: usize = 16;

fn hammer(samples: Vec<Sample>, rounds: usize) {
    let ctx = shared_layer_context();
    let words: Arc<Vec<(Sample, Vec<u32>)>> = Arc::new(samples.into_iter().map(|s| {
        let w = s.assemble().unwrap();
        (s, w)
    }).collect());
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let words = words.clone();
            std::thread::spawn(move || -> Result<(), String> {
                for r in 0..rounds {
                    let (s, w) = &words[(t + r) % words.len()];
                    // Module creation alone, several times...
                    for _ in 0..4 {
                        let m = ctx.create_shader_module(w).map_err(|e| format!("thread {t}: {}: vkCreateShaderModule: {e}", s.name))?;
                        ctx.destroy_shader_module(m);
                    }
                    // ...and a dispatch with the result checked.
                    let out = ctx.run_compute(w, &s.job).map_err(|e| format!("thread {t}: {}: {e}", s.name))?;
                    s.check(&out).map_err(|e| format!("thread {t}: {e}"))?;
                }
                Ok(())
            })
        })
        .collect();
    let errors: Vec<String> = handles.into_iter().filter_map(|h| h.join().expect("thread panicked").err()).collect();
    assert!(errors.is_empty(), "{} failures:\n{}", errors.len(), errors.join("\n"));
}

#[test]
fn concurrent_plain_modules() {
    hammer(vec![samples::plain()], 4);
}

#[test]
fn concurrent_mixed_modules() {
    let mut v = samples::raw_access_chain_samples(None);
    v.push(samples::plain());
    hammer(v, 5);
}
