//! The in-process store's work queue: entries, leases, reclaiming and dead letters.

use std::time::{Duration, Instant};

use super::{InProcessStore, MAX_DEAD_LETTERS, PendingEntry};
use crate::error::StoreResult;
use crate::model::QueueEntry;
use crate::store::WorkQueue;

fn entry_number(entry_id: &str) -> u64 {
    entry_id.parse().unwrap_or(u64::MAX)
}

#[tonic::async_trait]
impl WorkQueue for InProcessStore {
    async fn queue_read(&self, consumer: &str, count: usize) -> StoreResult<Vec<QueueEntry>> {
        let mut inner = self.lock();
        let mut read = Vec::new();
        while read.len() < count {
            let Some(entry) = inner.queue.pop_front() else {
                break;
            };
            inner.pending.insert(
                entry_number(&entry.entry_id),
                PendingEntry {
                    entry: Some(entry.clone()),
                    consumer: consumer.to_string(),
                    leased_at: Some(Instant::now()),
                },
            );
            read.push(entry);
        }
        Ok(read)
    }

    async fn queue_reclaim(
        &self,
        consumer: &str,
        min_idle: Duration,
        count: usize,
    ) -> StoreResult<Vec<QueueEntry>> {
        let mut inner = self.lock();
        let now = Instant::now();
        let mut reclaimed = Vec::new();
        for pending in inner.pending.values_mut() {
            if reclaimed.len() >= count {
                break;
            }
            let idle = pending
                .leased_at
                .map(|leased_at| now.duration_since(leased_at))
                .unwrap_or(Duration::MAX);
            if idle >= min_idle {
                pending.consumer = consumer.to_string();
                pending.leased_at = Some(now);
                if let Some(entry) = &pending.entry {
                    reclaimed.push(entry.clone());
                }
            }
        }
        Ok(reclaimed)
    }

    async fn queue_renew(&self, consumer: &str, entry_ids: &[String]) -> StoreResult<()> {
        let mut inner = self.lock();
        let now = Instant::now();
        for entry_id in entry_ids {
            if let Some(pending) = inner.pending.get_mut(&entry_number(entry_id))
                && pending.consumer == consumer
            {
                pending.leased_at = Some(now);
            }
        }
        Ok(())
    }

    async fn queue_ack(&self, entry_id: &str) -> StoreResult<()> {
        self.lock().pending.remove(&entry_number(entry_id));
        Ok(())
    }

    async fn dead_letter(&self, entry: &QueueEntry, reason: &str) -> StoreResult<()> {
        let mut inner = self.lock();
        inner.dead.push_back((
            entry.job_id.clone(),
            entry.candidate_id.clone(),
            reason.to_string(),
        ));
        while inner.dead.len() > MAX_DEAD_LETTERS {
            inner.dead.pop_front();
        }
        inner.pending.remove(&entry_number(&entry.entry_id));
        Ok(())
    }

    async fn dead_letters(&self, limit: usize) -> StoreResult<Vec<(String, String, String)>> {
        Ok(self.lock().dead.iter().rev().take(limit).cloned().collect())
    }

    async fn queue_pending_count(&self) -> StoreResult<u64> {
        Ok(self.lock().pending.len() as u64)
    }

    async fn queue_waiting_count(&self) -> StoreResult<u64> {
        Ok(self.lock().queue.len() as u64)
    }
}
