//! `centroid validate DIR`: load and check the three inputs (a SPICE/CDL netlist converted
//! first), print a summary.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Args;

use crate::EXIT_INVALID_INPUT;
use crate::inputs::InputArgs;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    inputs: InputArgs,
    /// Print the checked model as JSON instead of the text summary.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let Some(checked) = args.inputs.load_or_report() else {
        return Ok(ExitCode::from(EXIT_INVALID_INPUT));
    };
    let (paths, context) = (&checked.paths, &checked.context);
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut stdout, context)?;
        writeln!(stdout)?;
    } else {
        writeln!(stdout, "{}", context.circuit.summarize())?;
        writeln!(stdout, "{}", context.drc_rules.summarize())?;
        write!(stdout, "{}", context.objectives.summarize())?;
        let netlist_kind = if centroid_schemas::is_spice_path(&paths.netlist) {
            " (SPICE/CDL, read as netlist 1.1.0; `centroid convert` prints it)"
        } else {
            ""
        };
        writeln!(
            stdout,
            "\nvalid: {}{netlist_kind}, {}, {}",
            paths.netlist.display(),
            paths.drc_rules.display(),
            paths.objectives.display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
