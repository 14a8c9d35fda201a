//! What the generated-case test suites (`conformance_matrix`, `small_storage_diff`) share:
//! the slice / full-sweep switch, the slug filter, a small order-keeping thread pool and the
//! error listing.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `POLYFILL_FULL_SWEEP=1`: the full cartesian sweep instead of the default slice.
pub fn full_sweep() -> bool {
    std::env::var("POLYFILL_FULL_SWEEP").is_ok_and(|v| v == "1")
}

/// "full sweep" or "default slice", for reports.
pub fn mode() -> &'static str {
    if full_sweep() {
        "full sweep"
    } else {
        "default slice"
    }
}

/// Worker threads from `env_key` (default 2, at least 1: zero workers would check nothing).
pub fn threads(env_key: &str) -> usize {
    std::env::var(env_key).ok().and_then(|v| v.parse().ok()).unwrap_or(2).max(1)
}

/// The full sweep or the slice, keeping only cases whose slug contains `$filter_key`
/// (case-insensitive) when that variable is set and not empty.
pub fn select<C>(full: impl FnOnce() -> Vec<C>, slice: impl FnOnce() -> Vec<C>, slug: impl Fn(&C) -> String, filter_key: &str) -> Vec<C> {
    let all = if full_sweep() { full() } else { slice() };
    match std::env::var(filter_key) {
        Ok(f) if !f.is_empty() => {
            let f = f.to_lowercase();
            all.into_iter().filter(|c| slug(c).contains(&f)).collect()
        }
        _ => all,
    }
}

/// `f` over `items` on `threads` workers; results in `items` order.
pub fn par_map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= items.len() {
                    break;
                }
                let r = f(&items[i]);
                out.lock().unwrap()[i] = Some(r);
            });
        }
    });
    out.into_inner().unwrap().into_iter().map(|r| r.expect("every item was mapped")).collect()
}

/// Prints the first `shown` of `errs` in full and, when there are more, every one on a line
/// (its first line, then the start of its second): each error names its case on its first line.
pub fn print_errors(errs: &[String], shown: usize) {
    for e in errs.iter().take(shown) {
        println!("{e}\n");
    }
    if errs.len() > shown {
        println!("all {} errors, one line each:", errs.len());
        for e in errs {
            let mut lines = e.lines();
            let first = lines.next().unwrap_or_default();
            let second = lines.next().unwrap_or_default().trim();
            println!("  {first} — {}", second.chars().take(300).collect::<String>());
        }
    }
}
