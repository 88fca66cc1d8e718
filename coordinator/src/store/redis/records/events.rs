//! A job's event log in Redis: a stream trimmed to `max_events`; events appended
//! with the candidate records they report (evaluations).

use redis::Value;

use super::super::RedisStore;
use super::super::codec::{corrupt, from_json, stream_entries, to_json};
use crate::error::StoreResult;
use crate::model::{CandidateRecord, EventRecord};

impl RedisStore {
    pub(super) async fn append_event(
        &self,
        job_id: &str,
        event: &EventRecord,
    ) -> StoreResult<String> {
        let mut pipe = redis::pipe();
        self.push_event(&mut pipe, job_id, event);
        let (id,): (String,) = pipe.query_async(&mut self.conn()).await?;
        Ok(id)
    }

    /// The XADD of `event` (its reply: the event's id) and the log's expiry
    /// (ignored) into `pipe`.
    pub(super) fn push_event(&self, pipe: &mut redis::Pipeline, job_id: &str, event: &EventRecord) {
        let key = self.job_key(job_id, "events");
        pipe.cmd("XADD")
            .arg(&key)
            .arg("MAXLEN")
            .arg("~")
            .arg(self.settings.max_events)
            .arg("*")
            .arg("e")
            .arg(to_json(event));
        pipe.cmd("PEXPIRE").arg(&key).arg(self.ttl_ms()).ignore();
    }

    /// The XADDs in one atomic pipeline (MULTI/EXEC).
    pub(super) async fn append_events(
        &self,
        job_id: &str,
        events: &[EventRecord],
    ) -> StoreResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        self.push_events(&mut pipe, job_id, events);
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    /// The HSETs of the candidates (of job `job_id`) and the XADDs of the events
    /// in one atomic pipeline (MULTI/EXEC).
    pub(super) async fn put_candidates_reported(
        &self,
        job_id: &str,
        candidates: &[CandidateRecord],
        events: &[EventRecord],
    ) -> StoreResult<()> {
        if candidates.is_empty() && events.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        let key = self.job_key(job_id, "candidates");
        for candidate in candidates {
            pipe.cmd("HSET")
                .arg(&key)
                .arg(&candidate.candidate_id)
                .arg(to_json(candidate))
                .ignore();
        }
        if !candidates.is_empty() {
            pipe.cmd("PEXPIRE").arg(&key).arg(self.ttl_ms()).ignore();
        }
        if !events.is_empty() {
            self.push_events(&mut pipe, job_id, events);
        }
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    /// The XADDs of `events` to the job's log, and its expiry.
    fn push_events(&self, pipe: &mut redis::Pipeline, job_id: &str, events: &[EventRecord]) {
        let key = self.job_key(job_id, "events");
        for event in events {
            pipe.cmd("XADD")
                .arg(&key)
                .arg("MAXLEN")
                .arg("~")
                .arg(self.settings.max_events)
                .arg("*")
                .arg("e")
                .arg(to_json(event))
                .ignore();
        }
        pipe.cmd("PEXPIRE").arg(&key).arg(self.ttl_ms()).ignore();
    }

    pub(super) async fn events_after(
        &self,
        job_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, EventRecord)>> {
        let key = self.job_key(job_id, "events");
        let start = match after {
            Some(cursor) if !cursor.is_empty() => format!("({cursor}"),
            _ => "-".to_string(),
        };
        let reply: Value = redis::cmd("XRANGE")
            .arg(&key)
            .arg(start)
            .arg("+")
            .arg("COUNT")
            .arg(limit)
            .query_async(&mut self.conn())
            .await?;
        stream_entries(&reply)
            .into_iter()
            .map(|(id, fields)| {
                let text = fields
                    .get("e")
                    .ok_or_else(|| corrupt(&key, "event without field e"))?;
                Ok((id, from_json(&key, text)?))
            })
            .collect()
    }
}
