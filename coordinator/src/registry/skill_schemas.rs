//! The skills the live workers advertise, with their input schemas: fetched from a
//! worker (`ListSkills`) once it registers, their union for planning, and the wait for
//! every live worker's schemas before a job plans.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{ListSkillsRequest, Skill};
use serde_json::Value;

use super::{Registry, cards};

/// The deadlines of the ListSkills attempts made for a registering worker: a loaded
/// machine (or a worker still connecting) may miss the first; a worker whose schemas are
/// unknown is planned for without the skills that need them (blocks), so a few tries
/// are worth it.
const LIST_SKILLS_DEADLINES: [Duration; 3] = [
    Duration::from_secs(5),
    Duration::from_secs(10),
    Duration::from_secs(20),
];

/// How long a job's planning waits for the schemas of the live workers — the
/// ListSkills attempts' deadlines together, so a worker that answers its last attempt
/// is still planned for with its schemas.
pub const SCHEMAS_WAIT: Duration = {
    let mut total = Duration::ZERO;
    let mut attempt = 0;
    while attempt < LIST_SKILLS_DEADLINES.len() {
        total = total.saturating_add(LIST_SKILLS_DEADLINES[attempt]);
        attempt += 1;
    }
    total
};

impl Registry {
    pub(super) async fn fetch_schemas(&self, worker_id: &str) {
        let attempts = LIST_SKILLS_DEADLINES.len();
        for (attempt, deadline) in LIST_SKILLS_DEADLINES.into_iter().enumerate() {
            let Some(channel) = self
                .lock()
                .get(worker_id)
                .filter(|entry| entry.alive)
                .and_then(|entry| entry.channel.clone())
            else {
                return;
            };
            let mut client = WorkerClient::with_interceptor(channel, self.token.clone());
            let mut request = tonic::Request::new(ListSkillsRequest {});
            request.set_timeout(deadline);
            match client.list_skills(request).await {
                Ok(response) => {
                    let schemas = schemas_of(worker_id, response.into_inner().skills);
                    self.schemas_arrived(worker_id, schemas);
                    return;
                }
                Err(status) if attempt + 1 < attempts => {
                    tracing::warn!(
                        worker_id,
                        attempt = attempt + 1,
                        code = ?status.code(),
                        message = status.message(),
                        "cannot list the worker's skills: trying again"
                    );
                }
                Err(status) => {
                    tracing::error!(
                        worker_id,
                        attempts,
                        code = ?status.code(),
                        message = status.message(),
                        "cannot list the worker's skills: its skills are planned for without their input schemas (no hierarchical blocks)"
                    );
                }
            }
        }
        self.schemas_arrived(worker_id, HashMap::new());
    }

    /// Records a worker's schemas (empty when ListSkills failed for good) and wakes the
    /// plannings waiting for them.
    fn schemas_arrived(&self, worker_id: &str, schemas: HashMap<String, Value>) {
        if let Some(entry) = self.lock().get_mut(worker_id) {
            entry.schemas = schemas;
            entry.schemas_fetched = true;
        }
        self.schemas_changed.notify_waiters();
    }

    /// Skills advertised by live workers (the union), with input schemas where known.
    pub fn skills(&self) -> HashMap<String, Value> {
        let mut skills = HashMap::new();
        for entry in self.lock().values().filter(|entry| entry.alive) {
            for skill in &entry.info.skills {
                let schema = entry.schemas.get(skill).cloned().unwrap_or(Value::Null);
                let slot = skills.entry(skill.clone()).or_insert(Value::Null);
                if slot.is_null() {
                    *slot = schema;
                }
            }
        }
        skills
    }

    /// Whether the schemas of every live worker are fetched (or `wait` ran out).
    pub async fn wait_for_schemas(&self, wait: Duration) {
        let started = Instant::now();
        while started.elapsed() < wait {
            // listening before looking: schemas arriving in between still wake us
            let arrived = self.schemas_changed.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let pending = self
                .lock()
                .values()
                .any(|entry| entry.alive && !entry.schemas_fetched);
            if !pending {
                return;
            }
            // a worker dying meanwhile notifies nothing: look again now and then
            tokio::select! {
                _ = arrived => {}
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }
}

/// The input schemas of a worker's skills, by name, with their descriptions.
fn schemas_of(worker_id: &str, skills: Vec<Skill>) -> HashMap<String, Value> {
    skills
        .into_iter()
        .map(|skill| {
            let schema = serde_json::from_str(&skill.input_schema_json).unwrap_or_else(|error| {
                tracing::warn!(
                    worker_id,
                    skill = %skill.name,
                    %error,
                    "the worker's input schema of a skill is not JSON: its calls are checked by the worker only"
                );
                Value::Null
            });
            (
                skill.name,
                cards::with_description(schema, skill.description),
            )
        })
        .collect()
}
