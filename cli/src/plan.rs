//! `centroid plan DIR`: the plans of a job's first iteration, as the coordinator
//! would make them, without running them. One KLayout skill process says which
//! skills exist (with their schemas) and the routing pitch of the rule set; the
//! coordinator's own drafting code does the rest. The skill package's tests run
//! these plans, so the Rust planner and the skills cannot drift apart.

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use centroid_coordinator::drafting::draft_iteration;
use centroid_coordinator::model::{JobInputs, JobOptions, JobRecord, Plan, now_ms};
use centroid_coordinator::planner::heuristic::routing_advertised;
use centroid_coordinator::planner::plan_builder::{route_pitch_of, route_probe_plan};
use centroid_coordinator::planner::{HeuristicPlanners, PlannerFactory, SkillCatalog};
use centroid_worker::WorkerConfig;
use centroid_worker::skill_process::{SkillProcess, SkillServerCommand};
use clap::Args;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::EXIT_INVALID_INPUT;
use crate::inputs::InputArgs;
use crate::local_cluster::worker_command_line;

/// Deadline of one call into the skill process.
const CALL_DEADLINE: Duration = Duration::from_secs(60);

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    inputs: InputArgs,
    /// Candidates to draft (default 4).
    #[arg(long, default_value_t = 4)]
    candidates: u32,
    /// Seed of the candidate generator.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print the plans as JSON (default: one summary line per candidate).
    #[arg(long)]
    json: bool,
}

pub async fn plan(args: &PlanArgs) -> anyhow::Result<ExitCode> {
    let Some(checked) = args.inputs.load_or_report() else {
        return Ok(ExitCode::from(EXIT_INVALID_INPUT));
    };
    let text =
        |file: &centroid_schemas::InputFile| String::from_utf8_lossy(&file.bytes).into_owned();
    let inputs = JobInputs {
        netlist_json: text(&checked.raw.netlist),
        drc_rules_json: text(&checked.raw.drc_rules),
        objectives_json: text(&checked.raw.objectives),
    };
    let options = JobOptions {
        candidates_per_iteration: args.candidates.max(1),
        max_iterations: 1,
        seed: args.seed,
        time_budget_ms: 0,
        candidate_deadline_ms: 0,
        noop_plan: false,
        sleep_ms: 0,
        signoff_deck: String::new(),
    };
    let name = args.inputs.job_name(&checked.context);
    let mut job = JobRecord::new("plan".into(), name, options, now_ms());

    let mut process = start_skill_process()?;
    let skills = skill_catalog(&mut process).await?;
    if routing_advertised(&skills) {
        let rules: Value = serde_json::from_str(&inputs.drc_rules_json)?;
        job.route_pitch_um = probe_route_pitch(&mut process, &route_probe_plan(&rules)).await?;
    }
    job.route_probed = true;
    process.shut_down(Duration::from_secs(2)).await;

    let planner = HeuristicPlanners.planner_for(&job, &inputs);
    let draft = draft_iteration(planner.as_ref(), &checked.context, &skills, &job, &[]);
    if draft.candidates.is_empty() {
        let reason = draft
            .plan_error
            .map(|error| error.to_string())
            .unwrap_or_default();
        bail!("no plan: {reason}");
    }
    if args.json {
        let candidates: Vec<Value> = draft
            .candidates
            .iter()
            .map(|candidate| {
                json!({
                    "candidate_id": candidate.candidate_id,
                    "origin": candidate.origin.as_str(),
                    "design_point": candidate.design_point,
                    "plan": candidate.plan,
                })
            })
            .collect();
        let document = json!({
            "route_pitch_um": job.route_pitch_um,
            "design_space_size": draft.design_space_size,
            "candidates": candidates,
        });
        println!("{}", serde_json::to_string_pretty(&document)?);
    } else {
        for candidate in &draft.candidates {
            println!("{}: {}", candidate.candidate_id, candidate.plan.summary);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One skill process, started as the local worker would start it.
fn start_skill_process() -> anyhow::Result<SkillProcess> {
    let environment: HashMap<String, String> = std::env::vars().collect();
    let config =
        WorkerConfig::load_with_environment(&worker_command_line(&environment, None), environment)
            .map_err(|error| anyhow!("worker configuration: {error}"))?;
    let command = SkillServerCommand {
        python: config.python.clone(),
        skills_dir: config.skills_dir.clone(),
        memory_limit_bytes: config.memory_limit_bytes(),
        signoff_decks: config.signoff_decks.clone(),
    };
    SkillProcess::spawn(&command, 0).with_context(|| {
        format!(
            "starting KLayout with {}; run `make klayout` to provision the venv",
            config.python.display()
        )
    })
}

async fn skill_catalog(process: &mut SkillProcess) -> anyhow::Result<SkillCatalog> {
    process.initialize(Instant::now() + CALL_DEADLINE).await?;
    let tools = process.list_tools(Instant::now() + CALL_DEADLINE).await?;
    Ok(tools
        .into_iter()
        .map(|tool| (tool.name, tool.input_schema))
        .collect())
}

async fn probe_route_pitch(process: &mut SkillProcess, plan: &Plan) -> anyhow::Result<Option<f64>> {
    let mut pitch = None;
    for step in &plan.steps {
        let result = process
            .call_tool(
                &step.skill,
                step.arguments.clone(),
                Instant::now() + CALL_DEADLINE,
            )
            .await?;
        if !result.ok {
            let error = result
                .error
                .map(|error| format!("{}: {}", error.code, error.message));
            bail!("{} failed: {}", step.skill, error.unwrap_or_default());
        }
        if step.skill == "route.info" {
            pitch = route_pitch_of(&result.data);
        }
    }
    Ok(pitch)
}
