//! The farm's memory on Redis, under the key prefix `P`, without TTL (run Redis
//! with AOF, as for the work queue):
//!
//! | key | type | content |
//! |---|---|---|
//! | `P:memory:cases` | hash | job id → case (JSON); at most `max_cases`, the least used then oldest evicted |
//! | `P:memory:failures` | hash | pattern id → failure pattern (JSON); at most `max_failures`, the oldest evicted |

use redis::AsyncCommands;
use redis::aio::ConnectionManager;
use serde::de::DeserializeOwned;

use centroid_planner::case_memory::{
    Case, CaseMemory, DEFAULT_MAX_CASES, DEFAULT_MAX_FAILURES, FailurePattern, MemoryError,
    MemoryFuture, evicted,
};

pub struct RedisMemory {
    connection: ConnectionManager,
    prefix: String,
    max_cases: usize,
    max_failures: usize,
}

/// A failure of Redis itself, or of writing a record for it.
fn store_error(error: impl std::error::Error + Send + Sync + 'static) -> MemoryError {
    MemoryError::Store {
        store: "Redis".into(),
        source: Box::new(error),
    }
}

impl RedisMemory {
    /// Connects to `url` (`rediss://` with the roots of `tls_ca`, or the system's);
    /// keys go under `prefix`.
    pub async fn connect(
        url: &str,
        tls_ca: Option<&std::path::Path>,
        prefix: &str,
    ) -> Result<RedisMemory, MemoryError> {
        let client = crate::redis_client::client(url, tls_ca).map_err(store_error)?;
        let connection = ConnectionManager::new(client).await.map_err(store_error)?;
        Ok(RedisMemory {
            connection,
            prefix: prefix.to_string(),
            max_cases: DEFAULT_MAX_CASES,
            max_failures: DEFAULT_MAX_FAILURES,
        })
    }

    /// Caps on cases and failure patterns.
    pub fn with_caps(mut self, max_cases: usize, max_failures: usize) -> RedisMemory {
        self.max_cases = max_cases.max(1);
        self.max_failures = max_failures.max(1);
        self
    }

    fn key(&self, what: &str) -> String {
        format!("{}:memory:{what}", self.prefix)
    }

    async fn all<T: DeserializeOwned>(&self, what: &str) -> Result<Vec<(String, T)>, MemoryError> {
        let key = self.key(what);
        let mut connection = self.connection.clone();
        let entries: Vec<(String, String)> = connection.hgetall(&key).await.map_err(store_error)?;
        let mut parsed = entries
            .into_iter()
            .map(|(id, text)| {
                serde_json::from_str(&text)
                    .map(|value| (id.clone(), value))
                    .map_err(|error| MemoryError::Corrupt {
                        path: format!("redis {key} field {id}").into(),
                        reason: error.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        parsed.sort_by(|left, right| left.0.cmp(&right.0));
        Ok(parsed)
    }

    async fn set(
        &self,
        what: &str,
        id: &str,
        value: &impl serde::Serialize,
    ) -> Result<usize, MemoryError> {
        let text = serde_json::to_string(value).map_err(store_error)?;
        let mut connection = self.connection.clone();
        let key = self.key(what);
        let _: () = connection.hset(&key, id, text).await.map_err(store_error)?;
        connection.hlen(&key).await.map_err(store_error)
    }

    async fn delete(&self, what: &str, ids: &[String]) -> Result<usize, MemoryError> {
        if ids.is_empty() {
            return Ok(0);
        }
        let mut connection = self.connection.clone();
        connection
            .hdel(self.key(what), ids)
            .await
            .map_err(store_error)
    }

    async fn put_case_now(&self, case: &Case) -> Result<(), MemoryError> {
        if self.set("cases", &case.job_id, case).await? > self.max_cases {
            let cases: Vec<Case> = self.cases_now().await?;
            self.delete("cases", &evicted(&cases, self.max_cases))
                .await?;
        }
        Ok(())
    }

    async fn cases_now(&self) -> Result<Vec<Case>, MemoryError> {
        Ok(self
            .all::<Case>("cases")
            .await?
            .into_iter()
            .map(|(_, case)| case)
            .collect())
    }

    async fn used_now(&self, job_id: &str) -> Result<(), MemoryError> {
        let mut connection = self.connection.clone();
        let key = self.key("cases");
        let text: Option<String> = connection.hget(&key, job_id).await.map_err(store_error)?;
        // forgotten (or never stored): nothing to count
        let Some(text) = text else { return Ok(()) };
        let mut case =
            serde_json::from_str::<Case>(&text).map_err(|error| MemoryError::Corrupt {
                path: format!("redis {key} field {job_id}").into(),
                reason: error.to_string(),
            })?;
        case.uses += 1;
        self.set("cases", job_id, &case).await.map(|_| ())
    }

    async fn put_failure_now(&self, failure: &FailurePattern) -> Result<(), MemoryError> {
        if self.set("failures", &failure.id, failure).await? > self.max_failures {
            let mut failures: Vec<FailurePattern> = self.failures_now().await?;
            failures.sort_by_key(|failure| failure.stored_ms);
            let excess = failures.len() - self.max_failures;
            let ids: Vec<String> = failures.into_iter().take(excess).map(|f| f.id).collect();
            self.delete("failures", &ids).await?;
        }
        Ok(())
    }

    async fn failures_now(&self) -> Result<Vec<FailurePattern>, MemoryError> {
        Ok(self
            .all::<FailurePattern>("failures")
            .await?
            .into_iter()
            .map(|(_, failure)| failure)
            .collect())
    }
}

impl CaseMemory for RedisMemory {
    fn put_case<'a>(&'a self, case: &'a Case) -> MemoryFuture<'a, ()> {
        Box::pin(self.put_case_now(case))
    }

    fn cases(&self) -> MemoryFuture<'_, Vec<Case>> {
        Box::pin(self.cases_now())
    }

    fn forget<'a>(&'a self, job_id: &'a str) -> MemoryFuture<'a, bool> {
        Box::pin(async move { Ok(self.delete("cases", &[job_id.to_string()]).await? > 0) })
    }

    fn used<'a>(&'a self, job_id: &'a str) -> MemoryFuture<'a, ()> {
        Box::pin(self.used_now(job_id))
    }

    fn put_failure<'a>(&'a self, failure: &'a FailurePattern) -> MemoryFuture<'a, ()> {
        Box::pin(self.put_failure_now(failure))
    }

    fn failures(&self) -> MemoryFuture<'_, Vec<FailurePattern>> {
        Box::pin(self.failures_now())
    }

    fn describe(&self) -> String {
        format!("redis {}", self.key("*"))
    }
}
