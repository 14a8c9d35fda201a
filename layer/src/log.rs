//! One-line log messages: `[polyfill] LEVEL: message`, to stderr or (appended) to `log_file`.
//! The `log_*!` macros (crate::messages) write here and to the application's messengers.
//!
//! The configuration lives in drop-free statics (a `RwLock` and a `Mutex<Option<File>>` in a
//! `static` are never dropped), so nothing runs when the library is unloaded.
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// Log levels, least verbose first. A message is written when its level <= the configured one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    Error = 0,
    Warn = 1,
    Info = 2,
    Debug = 3,
}

impl Level {
    pub fn parse(value: &str) -> Option<Level> {
        match value.trim().to_ascii_lowercase().as_str() {
            "error" => Some(Level::Error),
            "warn" | "warning" => Some(Level::Warn),
            "info" => Some(Level::Info),
            "debug" => Some(Level::Debug),
            _ => None,
        }
    }
    fn tag(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Error as u8);
/// `None` = stderr.
static FILE: Mutex<Option<File>> = Mutex::new(None);

/// Applies `log_level` / `log_file` (called when settings are read).
pub fn configure(level: Level, file: Option<&Path>) {
    LEVEL.store(level as u8, Ordering::Relaxed);
    let mut guard = FILE.lock().unwrap_or_else(|e| e.into_inner());
    *guard = None;
    if let Some(path) = file {
        match OpenOptions::new().create(true).append(true).open(path) {
            Ok(f) => *guard = Some(f),
            Err(e) => {
                drop(guard);
                write_line(Level::Error, &format!("cannot open log_file {}: {e}; logging to stderr", path.display()));
            }
        }
    }
}

pub fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

pub fn log(level: Level, message: &str) {
    if enabled(level) {
        write_line(level, message);
    }
}

fn write_line(level: Level, message: &str) {
    let line = format!("[polyfill] {}: {}\n", level.tag(), message);
    let mut guard = FILE.lock().unwrap_or_else(|e| e.into_inner());
    match guard.as_mut() {
        // One write_all per line, so lines from several threads/processes do not interleave.
        Some(f) => {
            let _ = f.write_all(line.as_bytes());
            let _ = f.flush();
        }
        None => {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parses_levels() {
        assert_eq!(Level::parse("DEBUG"), Some(Level::Debug));
        assert_eq!(Level::parse("warn"), Some(Level::Warn));
        assert_eq!(Level::parse(" info "), Some(Level::Info));
        assert_eq!(Level::parse("error"), Some(Level::Error));
        assert_eq!(Level::parse("loud"), None);
        assert!(Level::Error < Level::Debug);
    }
}
