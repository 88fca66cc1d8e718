//! What the store tests write: a job, its inputs, candidates, a plan, results and events,
//! and a Redis store on a real redis-server.

use std::time::Duration;

use centroid_coordinator::model::{
    CandidateRecord, CandidateResult, CandidateStatus, DesignPoint, EventJson, EventKind,
    EventRecord, JobInputs, JobOptions, JobRecord, JobState, Origin, Plan, PlanStep, StepOutcome,
};
use centroid_coordinator::store::RedisStore;
use centroid_coordinator::store::redis::RedisStoreSettings;
use centroid_tests::RedisProcess;

pub fn job(job_id: &str, created_ms: u64) -> JobRecord {
    let options = JobOptions {
        candidates_per_iteration: 2,
        max_iterations: 1,
        seed: 1,
        time_budget_ms: 0,
        candidate_deadline_ms: 1000,
        noop_plan: true,
        sleep_ms: 0,
        signoff_deck: String::new(),
        planner: String::new(),
        patience: 0,
        priority: 1,
    };
    JobRecord::new(job_id.into(), "t".into(), options, created_ms)
}

pub fn inputs() -> JobInputs {
    JobInputs {
        netlist_json: "{}".into(),
        drc_rules_json: "{}".into(),
        objectives_json: "{}".into(),
        testbench_sp: String::new(),
    }
}

pub fn candidate(job_id: &str, index: usize) -> CandidateRecord {
    CandidateRecord {
        candidate_id: format!("{job_id}-c{index}"),
        job_id: job_id.into(),
        iteration: 0,
        parent_id: String::new(),
        origin: Origin::Draft,
        design_point: DesignPoint {
            arrangement: "ABBA".into(),
            finger_split: 1,
            dummies: 0,
            guard_ring: false,
            row_order: 0,
            spacing_nm: 0,
            aspect_ratio_pct: 100,
            order: Vec::new(),
            rows: Default::default(),
            module_arrangements: Default::default(),
            module_dummies: Default::default(),
            module_rings: Default::default(),
            hierarchy: String::new(),
            blocks: Default::default(),
            pack_rank: 0,
        },
        plan: plan(),
        required_skills: vec![],
        evaluation: None,
    }
}

/// A plan of one step, as candidates and results carry it.
pub fn plan() -> Plan {
    Plan {
        summary: "one step".into(),
        steps: vec![PlanStep {
            step_id: "s01".into(),
            skill: "tech.load".into(),
            arguments: serde_json::json!({"rules": {"layers": [1, 2]}}),
            optional: false,
            output_cell: String::new(),
        }],
    }
}

pub fn result(candidate_id: &str, worker: &str) -> CandidateResult {
    CandidateResult {
        candidate_id: candidate_id.into(),
        status: CandidateStatus::Finished,
        ok: true,
        worker_id: worker.into(),
        attempts: 1,
        error_code: String::new(),
        error_message: String::new(),
        steps: vec![StepOutcome {
            step_id: "s01".into(),
            skill: "tech.load".into(),
            ok: true,
            error_code: String::new(),
            error_message: String::new(),
            data: serde_json::json!({"layers": 2}),
            duration_ms: 3,
        }],
        artifacts: vec![],
        duration_ms: 1,
        slot_ms: 0,
        finished_ms: 1,
        plan: Some(plan()),
        adjustments: vec![],
    }
}

pub fn event(kind: EventKind, last: bool) -> EventRecord {
    EventRecord {
        kind,
        timestamp_ms: 1,
        state: JobState::Init,
        candidate_id: String::new(),
        iteration: 0,
        message: String::new(),
        data: EventJson::null(),
        last,
    }
}

/// A Redis store under `prefix` on `redis`.
pub async fn redis_store(redis: &RedisProcess, prefix: &str) -> RedisStore {
    let settings = RedisStoreSettings {
        url: redis.url(),
        prefix: prefix.into(),
        job_ttl: Duration::from_secs(3600),
        ..RedisStoreSettings::default()
    };
    RedisStore::connect(settings, Duration::from_secs(10))
        .await
        .unwrap()
}
