//! `spirv-polyfill`: the offline rewriter. `spirv-polyfill --help` (or `man spirv-polyfill`)
//! says how to use it; the command line is defined once, in cli.rs.
mod cli;
mod io;
mod report;

use std::process::ExitCode;
use std::time::Instant;

use clap::{CommandFactory, Parser};
use cli::{Cli, Command, RewriteArgs};
use io::Failure;
use shader_rewrite::location::describe;
use shader_rewrite::words_from_bytes;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.exit(),
    }
}

/// `--help`, `--version` (standard output, exit 0) and usage errors (standard error, exit 2,
/// also when standard error cannot take the message).
fn clap_exit(e: &clap::Error) -> ExitCode {
    use std::io::Write;
    match e.print().and_then(|()| std::io::stdout().flush()) {
        Err(err) if !e.use_stderr() => Failure::stdout(err).exit(),
        _ => ExitCode::from(e.exit_code() as u8),
    }
}

fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Rewrite(args) => rewrite(&args),
        Command::Scan(args) => report::scan(&args),
        Command::Targets(target) => io::print(report::targets(&target.options()).as_bytes()),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "spirv-polyfill", &mut script);
            io::print(&script)
        }
        Command::Manual { out_dir: None } => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page).map_err(Failure::stdout)?;
            io::print(&page)
        }
        Command::Manual { out_dir: Some(dir) } => std::fs::create_dir_all(&dir)
            .and_then(|()| clap_mangen::generate_to(Cli::command(), &dir))
            .map_err(|e| Failure::Failed(format!("{}: {e}", dir.display()))),
    }
}

/// The words of a FILE argument.
pub fn load(path: &str) -> Result<Vec<u32>, Failure> {
    words_from_bytes(&io::read(path)?).map_err(|e| Failure::Failed(format!("{}: {e}", io::name(path))))
}

fn rewrite(args: &RewriteArgs) -> Result<(), Failure> {
    let options = args.target.options();
    let words = load(&args.input)?;
    let name = io::name(&args.input);
    let start = Instant::now();
    let out = shader_rewrite::rewrite(&words, &options).map_err(|e| Failure::Failed(format!("{name}: {}", describe(&words, &e).0)))?;
    let elapsed = start.elapsed();
    let bytes: Vec<u8> = out.words.iter().flat_map(|w| w.to_le_bytes()).collect();
    io::write_binary(&args.output, &bytes)?;
    for note in report::left_alone(&words, &options) {
        io::error(&format!("note: {name}: {note}"));
    }
    if args.stats {
        use std::io::Write;
        let line = format!("{name}: {} ({} → {} words, {:.1} µs)", out.stats, words.len(), out.words.len(), elapsed.as_secs_f64() * 1e6);
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
    Ok(())
}
