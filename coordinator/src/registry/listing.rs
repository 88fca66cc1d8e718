//! What the registry tells about its workers: ListWorkers statuses, the ids it
//! knows, and the cards published for the other coordinators sharing the store.

use std::time::{Duration, Instant};

use centroid_proto::v1::WorkerStatus;

use super::Registry;

impl Registry {
    /// Cards of live workers due for publishing (every `period`, and once their schemas are in).
    pub fn cards_due(&self, period: Duration, coordinator: &str) -> Vec<crate::model::WorkerCard> {
        let mut due = Vec::new();
        for entry in self.lock().values_mut() {
            if !entry.alive
                || !entry.schemas_fetched
                || entry
                    .card_published
                    .is_some_and(|published| published.elapsed() < period)
            {
                continue;
            }
            entry.card_published = Some(Instant::now());
            due.push(crate::model::WorkerCard {
                worker_id: entry.info.worker_id.clone(),
                address: entry.info.address.clone(),
                slots: entry.info.slots,
                skills: entry.info.skills.clone(),
                schemas: entry.schemas.clone(),
                klayout_version: entry.info.klayout_version.clone(),
                hostname: entry.info.hostname.clone(),
                coordinator: coordinator.to_string(),
                last_seen_ms: crate::model::now_ms(),
            });
        }
        due
    }

    /// Ids of the workers registered here (alive or not).
    pub fn known_ids(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    pub fn statuses(&self) -> Vec<WorkerStatus> {
        let mut statuses: Vec<WorkerStatus> = self
            .lock()
            .values()
            .map(|entry| WorkerStatus {
                info: Some(entry.info.clone()),
                free_slots: entry.reported_free_slots,
                running: entry.running,
                draining: entry.draining,
                alive: entry.alive,
                last_heartbeat_ms_ago: entry.last_heartbeat.elapsed().as_millis() as u64,
            })
            .collect();
        statuses.sort_by(|left, right| {
            let id = |status: &WorkerStatus| {
                status
                    .info
                    .as_ref()
                    .map(|info| info.worker_id.clone())
                    .unwrap_or_default()
            };
            id(left).cmp(&id(right))
        });
        statuses
    }
}
