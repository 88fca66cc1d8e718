//! The candidate queue as a Redis Stream with the consumer group `dispatch`:
//! XREADGROUP for new entries, XAUTOCLAIM for lapsed leases, XCLAIM JUSTID to
//! renew, XACK, and a dead-letter stream.

use std::time::Duration;

use redis::Value;

use super::codec::{queue_entry, stream_entries, value_items, value_text};
use super::{GROUP, RedisStore};
use crate::error::StoreResult;
use crate::model::QueueEntry;
use crate::store::WorkQueue;

#[tonic::async_trait]
impl WorkQueue for RedisStore {
    async fn queue_read(&self, consumer: &str, count: usize) -> StoreResult<Vec<QueueEntry>> {
        let mut command = redis::cmd("XREADGROUP");
        command
            .arg("GROUP")
            .arg(GROUP)
            .arg(consumer)
            .arg("COUNT")
            .arg(count)
            .arg("STREAMS")
            .arg(self.key("queue"))
            .arg(">");
        let reply = self.queue_command(&command).await?;
        let mut entries = Vec::new();
        for stream in value_items(&reply) {
            if let Some(list) = value_items(stream).get(1) {
                for (id, fields) in stream_entries(list) {
                    if let Some(entry) = queue_entry(id, &fields) {
                        entries.push(entry);
                    }
                }
            }
        }
        if let Value::Map(streams) = &reply {
            for (_, list) in streams {
                for (id, fields) in stream_entries(list) {
                    if let Some(entry) = queue_entry(id, &fields) {
                        entries.push(entry);
                    }
                }
            }
        }
        Ok(entries)
    }

    async fn queue_reclaim(
        &self,
        consumer: &str,
        min_idle: Duration,
        count: usize,
    ) -> StoreResult<Vec<QueueEntry>> {
        let mut command = redis::cmd("XAUTOCLAIM");
        command
            .arg(self.key("queue"))
            .arg(GROUP)
            .arg(consumer)
            .arg(min_idle.as_millis() as u64)
            .arg("0-0")
            .arg("COUNT")
            .arg(count);
        let reply = self.queue_command(&command).await?;
        let parts = value_items(&reply);
        let mut entries = Vec::new();
        if let Some(claimed) = parts.get(1) {
            for (id, fields) in stream_entries(claimed) {
                if let Some(entry) = queue_entry(id, &fields) {
                    entries.push(entry);
                }
            }
        }
        // entries trimmed from the stream while pending come back as deleted ids: nothing to run
        Ok(entries)
    }

    async fn queue_renew(&self, consumer: &str, entry_ids: &[String]) -> StoreResult<()> {
        if entry_ids.is_empty() {
            return Ok(());
        }
        let mut command = redis::cmd("XCLAIM");
        command
            .arg(self.key("queue"))
            .arg(GROUP)
            .arg(consumer)
            .arg(0)
            .arg(entry_ids)
            .arg("JUSTID");
        self.queue_command(&command).await?;
        Ok(())
    }

    async fn queue_ack(&self, entry_id: &str) -> StoreResult<()> {
        let mut command = redis::cmd("XACK");
        command.arg(self.key("queue")).arg(GROUP).arg(entry_id);
        self.queue_command(&command).await?;
        Ok(())
    }

    async fn queue_ack_all(&self, entry_ids: &[String]) -> StoreResult<()> {
        if entry_ids.is_empty() {
            return Ok(());
        }
        let mut command = redis::cmd("XACK");
        command.arg(self.key("queue")).arg(GROUP).arg(entry_ids);
        self.queue_command(&command).await?;
        Ok(())
    }

    async fn dead_letter(&self, entry: &QueueEntry, reason: &str) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("XADD")
            .arg(self.key("queue:dead"))
            .arg("MAXLEN")
            .arg("~")
            .arg(self.settings.max_dead)
            .arg("*")
            .arg("job")
            .arg(&entry.job_id)
            .arg("candidate")
            .arg(&entry.candidate_id)
            .arg("entry")
            .arg(&entry.entry_id)
            .arg("reason")
            .arg(reason)
            .ignore();
        pipe.cmd("XACK")
            .arg(self.key("queue"))
            .arg(GROUP)
            .arg(&entry.entry_id)
            .ignore();
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    async fn dead_letters(&self, limit: usize) -> StoreResult<Vec<(String, String, String)>> {
        let reply: Value = redis::cmd("XREVRANGE")
            .arg(self.key("queue:dead"))
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(limit)
            .query_async(&mut self.conn())
            .await?;
        Ok(stream_entries(&reply)
            .into_iter()
            .map(|(_, fields)| {
                let field = |name: &str| fields.get(name).cloned().unwrap_or_default();
                (field("job"), field("candidate"), field("reason"))
            })
            .collect())
    }

    async fn queue_pending_count(&self) -> StoreResult<u64> {
        let mut command = redis::cmd("XPENDING");
        command.arg(self.key("queue")).arg(GROUP);
        let reply = self.queue_command(&command).await?;
        Ok(value_items(&reply)
            .first()
            .and_then(value_text)
            .and_then(|text| text.parse().ok())
            .unwrap_or(0))
    }

    async fn queue_waiting_count(&self) -> StoreResult<u64> {
        let mut command = redis::cmd("XINFO");
        command.arg("GROUPS").arg(self.key("queue"));
        let reply = self.queue_command(&command).await?;
        for group in value_items(&reply) {
            let fields = field_pairs(group);
            let field = |name: &str| {
                fields
                    .iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| value)
            };
            if field("name").and_then(value_text).as_deref() != Some(GROUP) {
                continue;
            }
            // Redis 7 reports the lag (entries not delivered yet); nil when unknown
            if let Some(lag) = field("lag").and_then(value_text) {
                return Ok(lag.parse().unwrap_or(0));
            }
        }
        // no lag: every entry of the stream not yet pending (an upper bound)
        let length: u64 = redis::cmd("XLEN")
            .arg(self.key("queue"))
            .query_async(&mut self.conn())
            .await?;
        Ok(length.saturating_sub(self.queue_pending_count().await?))
    }
}

/// The (field, value) pairs of a reply that is a flat list or a map.
fn field_pairs(value: &Value) -> Vec<(String, Value)> {
    if let Value::Map(pairs) = value {
        return pairs
            .iter()
            .filter_map(|(key, value)| value_text(key).map(|key| (key, value.clone())))
            .collect();
    }
    value_items(value)
        .chunks(2)
        .filter_map(|pair| match pair {
            [key, value] => value_text(key).map(|key| (key, value.clone())),
            _ => None,
        })
        .collect()
}
