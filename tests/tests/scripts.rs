//! The repository's shell scripts run under `set -o pipefail` (CI included): there, a pipe into
//! `grep -q` fails at random. grep -q exits at its first match, and a producer with more to
//! write (readelf, vulkaninfo) then dies of SIGPIPE, which pipefail reports as the pipeline's
//! failure (stop 27's CI: "no debug information ... under its build ID", 2 runs in 300). Write
//! `producer | grep PATTERN >/dev/null`, or grep a here-string, instead.
use std::path::{Path, PathBuf};

fn scripts(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if !matches!(p.file_name().and_then(|n| n.to_str()), Some("target" | ".git" | "corpus" | "seeds")) {
                scripts(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "sh") || p.ends_with(".ci/run") {
            out.push(p);
        }
    }
}

/// `| grep -q…` (any flags holding q) in `line`, outside a comment.
fn pipes_into_grep_q(line: &str) -> bool {
    let code = line.split(" #").next().unwrap_or("");
    if code.trim_start().starts_with('#') {
        return false;
    }
    code.split('|').skip(1).any(|seg| {
        let mut words = seg.split_whitespace();
        words.next() == Some("grep") && words.take_while(|w| w.starts_with('-')).any(|f| !f.starts_with("--") && f.contains('q'))
    })
}

#[test]
fn no_pipe_into_grep_q() {
    assert!(pipes_into_grep_q("readelf -SW x | grep -qE '.debug_info'"));
    assert!(pipes_into_grep_q("a | grep -F -q x"));
    assert!(!pipes_into_grep_q("readelf -SW x | grep -E '.debug_info' >/dev/null"));
    assert!(!pipes_into_grep_q("grep -q x <<<\"$y\""));
    assert!(!pipes_into_grep_q("# never a | grep -q b"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = vec![];
    scripts(root, &mut files);
    assert!(files.len() >= 5, "found only {files:?}");
    let bad: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            text.lines().enumerate().filter(|(_, l)| pipes_into_grep_q(l)).map(|(n, l)| format!("{}:{}: {}", f.display(), n + 1, l.trim())).collect::<Vec<_>>()
        })
        .collect();
    assert!(bad.is_empty(), "pipes into grep -q (see this file's doc comment):\n{}", bad.join("\n"));
}
