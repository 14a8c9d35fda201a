//! Files and standard streams (`-` is standard input or output), and the exit status of every
//! failure (`cli::EXIT_STATUS`).
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

/// Why the command failed; each kind has its exit status.
pub enum Failure {
    /// Exit 1: a module cannot be rewritten or is not valid SPIR-V, or a file cannot be read or
    /// written. The message names the file.
    Failed(String),
    /// Exit 1, already reported (on standard error), or standard output was closed by its reader
    /// (`| head`), where there is nothing more to say.
    Reported,
    /// Exit 2: the command line asks for something impossible that clap cannot see.
    Usage(String),
}

impl Failure {
    /// Reports the failure on standard error (if it can) and gives its exit status.
    pub fn exit(self) -> ExitCode {
        let (code, message) = match self {
            Failure::Failed(m) => (1, Some(m)),
            Failure::Reported => (1, None),
            Failure::Usage(m) => (2, Some(m)),
        };
        if let Some(m) = message {
            error(&m);
        }
        ExitCode::from(code)
    }

    /// A failed write to standard output.
    pub fn stdout(e: std::io::Error) -> Failure {
        match e.kind() {
            std::io::ErrorKind::BrokenPipe => Failure::Reported,
            _ => Failure::Failed(format!("cannot write to standard output: {e}")),
        }
    }
}

/// Writes `spirv-polyfill: MESSAGE` to standard error, ignoring a failure to do so (there is
/// nowhere left to report it).
pub fn error(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "spirv-polyfill: {message}");
}

/// How messages name a FILE argument.
pub fn name(path: &str) -> &str {
    if path == "-" {
        "<stdin>"
    } else {
        path
    }
}

/// The bytes of a FILE argument.
pub fn read(path: &str) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    let read = if path == "-" { std::io::stdin().lock().read_to_end(&mut bytes).map(|_| ()) } else { std::fs::read(path).map(|b| bytes = b) };
    read.map_err(|e| Failure::Failed(format!("{}: {e}", name(path))))?;
    Ok(bytes)
}

/// Writes `bytes` to a FILE argument; refuses to put a binary module on a terminal.
pub fn write_binary(path: &str, bytes: &[u8]) -> Result<(), Failure> {
    if path != "-" {
        return std::fs::write(path, bytes).map_err(|e| Failure::Failed(format!("{path}: {e}")));
    }
    if std::io::stdout().is_terminal() {
        return Err(Failure::Usage("refusing to write a binary module to a terminal: redirect standard output or give -o FILE".into()));
    }
    print(bytes)
}

/// Writes `bytes` to standard output and flushes it (so a full disk is an error here, not a
/// silent loss at exit).
pub fn print(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).map_err(Failure::stdout)
}
