//! `centroid plan DIR`: the plans of a job's first iteration, as the coordinator
//! would make them, without running them. One KLayout skill process says which
//! skills exist (with their schemas) and the routing pitch of the rule set; the
//! planner crate the coordinator drafts with does the rest. The skill package's tests run
//! these plans, so the Rust planner and the skills cannot drift apart.
//!
//! `--planner llm --print-prompts` prints the prompts the LLM planner's first
//! iteration would send instead (built by `centroid-coordinator print-prompts`,
//! as the CLI links no coordinator code), without calling a model.
//!
//! `--batch FILE` drafts many jobs with one KLayout process: FILE holds one JSON
//! request per line, `{"id", "netlist", "drc", "objectives", "candidates"?, "seed"?}`
//! (paths), and the answer is one JSON line per request, `{"id", "route_pitch_um",
//! "design_space_size", "candidates"}` or `{"id", "error"}`.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use centroid_planner::drafting::{IterationToDraft, draft_iteration};
use centroid_planner::heuristic::{HeuristicPlanner, RawInputs};
use centroid_planner::performance::JobSimulation;
use centroid_planner::planner::Planner;
use centroid_planner::point_from_json::design_point;
use centroid_planner::rules_probe::{ProbeStep, RulesProbe, rules_probe_plan};
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_runtime::LlmSettings;
use centroid_schemas::{InputPaths, NetlistOptions, TaskContext, TaskInputs};
use centroid_worker::WorkerConfig;
use centroid_worker::skill_process::{SkillProcess, SkillServerCommand};
use clap::Args;
use serde::Deserialize;
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
    /// Draft every request of this JSON-lines file with one KLayout process.
    #[arg(long, value_name = "FILE", conflicts_with = "json")]
    batch: Option<PathBuf>,
    /// Plan this design point (a JSON object, e.g. a candidate's `design` from
    /// report.json; absent coordinates take the default point's values) instead of
    /// drafting an iteration.
    #[arg(long, value_name = "FILE", conflicts_with = "batch")]
    point: Option<PathBuf>,
    /// The planner whose first iteration is shown: `heuristic` (its plans) or
    /// `llm` (with `--print-prompts`, the prompts it would send).
    #[arg(long, default_value = "heuristic", value_parser = ["heuristic", "llm"])]
    planner: String,
    /// Print the prompts the LLM planner's first iteration would send the model
    /// (`[cli.llm]`'s budget), without calling it; needs `--planner llm`.
    #[arg(long, conflicts_with_all = ["batch", "point"])]
    print_prompts: bool,
}

/// One line of a batch.
#[derive(Debug, Deserialize)]
struct BatchRequest {
    #[serde(default)]
    id: Value,
    netlist: PathBuf,
    drc: PathBuf,
    objectives: PathBuf,
    #[serde(default = "default_candidates")]
    candidates: u32,
    #[serde(default)]
    seed: u64,
    /// a design point to plan instead of drafting an iteration
    #[serde(default)]
    point: Option<Value>,
}

fn default_candidates() -> u32 {
    4
}

pub async fn plan(args: &PlanArgs, llm: &LlmSettings) -> anyhow::Result<ExitCode> {
    if let Some(batch) = &args.batch {
        return plan_batch(batch).await;
    }
    if args.print_prompts && args.planner != "llm" {
        bail!("--print-prompts shows the LLM planner's prompts: add --planner llm");
    }
    let Some(checked) = args.inputs.load_or_report() else {
        return Ok(ExitCode::from(EXIT_INVALID_INPUT));
    };
    if args.print_prompts {
        let mut drafter = Drafter::start().await?;
        let pitch = drafter.route_pitch(&checked.raw, &checked.context).await;
        let skills = drafter.skills.clone();
        drafter.stop().await;
        let text =
            |file: &centroid_schemas::InputFile| String::from_utf8_lossy(&file.bytes).into_owned();
        let request = json!({
            "inputs": {
                "netlist_json": text(&checked.raw.netlist),
                "drc_rules_json": text(&checked.raw.drc_rules),
                "objectives_json": text(&checked.raw.objectives),
            },
            "skills": skills,
            "route_pitch_um": pitch?,
            "candidates": args.candidates,
        });
        let calls = crate::coordinator_process::print_prompts(&request, llm).await?;
        print_line(&prompts_text(&calls, args.json)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let point = match &args.point {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--point {}: cannot read", path.display()))?;
            let value: Value = serde_json::from_str(&text)
                .with_context(|| format!("--point {}: not JSON", path.display()))?;
            Some(value)
        }
    };
    let mut drafter = Drafter::start().await?;
    let drafted = drafter
        .draft(
            &checked.raw,
            &checked.context,
            (args.candidates, args.seed),
            point.as_ref(),
            checked
                .testbench
                .as_ref()
                .map(|file| String::from_utf8_lossy(&file.bytes).into_owned()),
        )
        .await;
    drafter.stop().await;
    let document = drafted?;
    let text = if args.json {
        serde_json::to_string_pretty(&document)?
    } else {
        let lines: Vec<String> = document["candidates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|candidate| {
                let summary = candidate["plan"]["summary"].as_str().unwrap_or_default();
                format!(
                    "{}: {summary}",
                    candidate["candidate_id"].as_str().unwrap_or_default()
                )
            })
            .collect();
        lines.join("\n")
    };
    print_line(&text)?;
    Ok(ExitCode::SUCCESS)
}

async fn plan_batch(batch: &PathBuf) -> anyhow::Result<ExitCode> {
    let file = std::fs::File::open(batch)
        .with_context(|| format!("--batch {}: cannot open", batch.display()))?;
    let mut drafter = Drafter::start().await?;
    for (index, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("reading {}", batch.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<BatchRequest>(&line) {
            Ok(request) => {
                let id = request.id.clone();
                match drafter.draft_request(request).await {
                    Ok(mut document) => {
                        document["id"] = id;
                        document
                    }
                    Err(error) => json!({"id": id, "error": format!("{error:#}")}),
                }
            }
            Err(error) => json!({"id": Value::Null, "error": format!(
                "{}:{}: not a request ({{\"id\", \"netlist\", \"drc\", \"objectives\", \"candidates\"?, \"seed\"?}}): {error}",
                batch.display(),
                index + 1
            )}),
        };
        print_line(&serde_json::to_string(&answer)?)?;
    }
    drafter.stop().await;
    Ok(ExitCode::SUCCESS)
}

/// The calls `centroid-coordinator print-prompts` answered (a JSON array), as
/// JSON or as text: a heading per call, then each message.
fn prompts_text(calls: &str, as_json: bool) -> anyhow::Result<String> {
    let calls: Value = serde_json::from_str(calls).context("the prompts are not JSON")?;
    if as_json {
        return Ok(serde_json::to_string_pretty(&calls)?);
    }
    let mut text = String::new();
    for call in calls.as_array().into_iter().flatten() {
        text.push_str(&format!(
            "=== {} call, iteration {}, model {} ===\n",
            call["role"].as_str().unwrap_or_default(),
            call["iteration"],
            call["model"].as_str().unwrap_or_default()
        ));
        for message in call["messages"].as_array().into_iter().flatten() {
            text.push_str(&format!(
                "--- {} ---\n{}\n",
                message["role"].as_str().unwrap_or_default(),
                message["content"].as_str().unwrap_or_default()
            ));
        }
    }
    Ok(text)
}

/// Prints a line; a reader that went away (`| head`) ends the output quietly.
fn print_line(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// One KLayout skill process and its catalog, drafting plans job after job.
struct Drafter {
    process: SkillProcess,
    skills: SkillCatalog,
}

impl Drafter {
    /// A skill process started as the local worker would start it.
    async fn start() -> anyhow::Result<Drafter> {
        let environment: HashMap<String, String> = std::env::vars().collect();
        let config = WorkerConfig::load_with_environment(
            &worker_command_line(&environment, None),
            environment,
        )
        .context("worker configuration")?;
        let command = SkillServerCommand {
            python: config.python.clone(),
            skills_dir: config.skills_dir.clone(),
            memory_limit_bytes: config.memory_limit_bytes(),
            signoff_decks: config.signoff_decks.clone(),
        };
        let mut process = SkillProcess::spawn(&command, 0).with_context(|| {
            format!(
                "starting KLayout with {}; run `make klayout` to provision the venv",
                config.python.display()
            )
        })?;
        process.initialize(Instant::now() + CALL_DEADLINE).await?;
        let tools = process.list_tools(Instant::now() + CALL_DEADLINE).await?;
        let skills = tools
            .into_iter()
            .map(|tool| (tool.name, tool.input_schema))
            .collect();
        Ok(Drafter { process, skills })
    }

    async fn stop(self) {
        self.process.shut_down(Duration::from_secs(2)).await;
    }

    async fn draft_request(&mut self, request: BatchRequest) -> anyhow::Result<Value> {
        let paths = InputPaths {
            netlist: request.netlist,
            drc_rules: request.drc,
            objectives: request.objectives,
        };
        let loaded = TaskInputs::read(&paths).and_then(|raw| {
            TaskContext::load_with(&raw, &NetlistOptions::default(), "plan")
                .map(|loaded| (loaded.inputs, loaded.context))
        });
        let (raw, context) = loaded.map_err(|errors| {
            let issues: Vec<String> = errors.issues.iter().map(ToString::to_string).collect();
            anyhow!("invalid inputs: {}", issues.join("; "))
        })?;
        let point = request.point.as_ref();
        self.draft(
            &raw,
            &context,
            (request.candidates, request.seed),
            point,
            None,
        )
        .await
    }

    /// The rule set's routing pitch, probed as a job's first planning does
    /// (`None` when the skills cannot probe it).
    async fn route_pitch(
        &mut self,
        raw: &TaskInputs,
        context: &TaskContext,
    ) -> anyhow::Result<Option<f64>> {
        if !self.skills.contains_key("tech.load") {
            return Ok(None);
        }
        let text =
            |file: &centroid_schemas::InputFile| String::from_utf8_lossy(&file.bytes).into_owned();
        let raw = RawInputs::from_texts(&text(&raw.drc_rules), &text(&raw.netlist));
        let probe = rules_probe_plan(&raw.drc_rules, &context.circuit, &self.skills, None);
        self.probe_rules(&probe).await
    }

    /// The first iteration's candidates of one job (`candidates`, `seed`), or the
    /// plan of `point` alone, as JSON; with the user's `testbench` when it has one.
    async fn draft(
        &mut self,
        raw: &TaskInputs,
        context: &TaskContext,
        (candidates, seed): (u32, u64),
        point: Option<&Value>,
        testbench: Option<String>,
    ) -> anyhow::Result<Value> {
        let text =
            |file: &centroid_schemas::InputFile| String::from_utf8_lossy(&file.bytes).into_owned();
        let route_pitch_um = self.route_pitch(raw, context).await?;
        let raw = RawInputs::from_texts(&text(&raw.drc_rules), &text(&raw.netlist));
        // the plans a job measuring performance runs (without the schematic's
        // simulation, which only a job's probe runs)
        let simulation = JobSimulation {
            testbench,
            schematic: None,
        };
        let planner = HeuristicPlanner::new(raw)
            .with_route_pitch(route_pitch_um)
            .with_simulation(simulation);
        if let Some(point) = point {
            return self.plan_point(&planner, context, route_pitch_um, point);
        }
        let to_draft = IterationToDraft {
            job_id: "plan".into(),
            iteration: 0,
            candidates_per_iteration: candidates.max(1),
            seed,
            noop_plan: false,
            sleep_ms: 0,
        };
        let draft = draft_iteration(
            &planner,
            context,
            &self.skills,
            &to_draft,
            &[],
            &Default::default(),
        );
        if draft.candidates.is_empty() {
            let reason = draft
                .plan_error
                .map(|error| error.to_string())
                .unwrap_or_default();
            bail!("no plan: {reason}");
        }
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
        Ok(json!({
            "route_pitch_um": route_pitch_um,
            "design_space_size": draft.design_space_size,
            "candidates": candidates,
        }))
    }

    /// The plan of one design point, checked against the job's design space.
    fn plan_point(
        &self,
        planner: &dyn Planner,
        context: &TaskContext,
        route_pitch_um: Option<f64>,
        point: &Value,
    ) -> anyhow::Result<Value> {
        let space = planner.design_space(context, &self.skills);
        let point = design_point(point, &space)
            .map_err(|problems| anyhow!("the design point: {}", problems.join("; ")))?;
        let point = space.canonical(&point);
        let plan = planner
            .plan(context, &point, &self.skills)
            .map_err(|error| anyhow!("no plan: {error}"))?;
        Ok(json!({
            "route_pitch_um": route_pitch_um,
            "design_space_size": space.size(),
            "candidates": [{
                "candidate_id": "plan-point",
                "origin": "given",
                "design_point": point,
                "plan": plan,
            }],
        }))
    }

    /// Runs the rule-set probe on a fresh session: the pitch `route.info` reports;
    /// an error when the rule set cannot draw a device of the circuit.
    async fn probe_rules(&mut self, probe: &RulesProbe) -> anyhow::Result<Option<f64>> {
        self.process
            .reset_session(Instant::now() + CALL_DEADLINE, None, "")
            .await?;
        let mut answers = Vec::with_capacity(probe.plan.steps.len());
        for step in &probe.plan.steps {
            let result = self
                .process
                .call_tool(
                    &step.skill,
                    step.arguments.clone(),
                    Instant::now() + CALL_DEADLINE,
                )
                .await?;
            let (code, message) = result
                .error
                .map(|error| (error.code, error.message))
                .unwrap_or_default();
            if !result.ok && step.skill != "layout.create_device" {
                bail!("{} failed: {code}: {message}", step.skill);
            }
            answers.push((step, result.ok, code, message, result.data));
        }
        let findings =
            probe.findings(
                answers
                    .iter()
                    .map(|(step, ok, code, message, data)| ProbeStep {
                        step_id: &step.step_id,
                        skill: &step.skill,
                        ok: *ok,
                        error_code: code,
                        error_message: message,
                        error_reason: "",
                        data: Some(data.clone()),
                    }),
            );
        if !findings.undrawable.is_empty() {
            bail!(
                "the rule set cannot draw these devices: {}",
                findings.undrawable.join("; ")
            );
        }
        Ok(findings.pitch_um)
    }
}
