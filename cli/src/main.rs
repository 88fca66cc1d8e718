//! `centroid`: the command-line interface of Centroid.

mod report;
mod report_html;
mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit status for invalid input files.
pub const EXIT_INVALID_INPUT: u8 = 2;

#[derive(Debug, Parser)]
#[command(name = "centroid", version, about = "Analog layout exploration on a compute farm")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a circuit's inputs and print what Centroid understood of them.
    Validate(validate::ValidateArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Validate(args) => validate::run(&args),
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
