//! Candidate results in Redis: recorded once (HSETNX, the first wins) with the
//! candidate's id appended to the job's finished ids (read by the job's driver
//! from where it last stopped), read one, several or all, counted.

use std::collections::HashMap;

use redis::AsyncCommands;

use super::super::RedisStore;
use super::super::codec::{corrupt, from_json, hash_records, records_of, to_json};
use crate::error::StoreResult;
use crate::model::{CandidateResult, EventRecord, result_listed};
use crate::store::{ResultIdsSince, ResultsAndCandidates};

impl RedisStore {
    /// The job's results by candidate id, each parsed by `read`.
    async fn read_results(
        &self,
        job_id: &str,
        read: impl Fn(&str) -> serde_json::Result<CandidateResult>,
    ) -> StoreResult<HashMap<String, CandidateResult>> {
        let key = self.job_key(job_id, "results");
        let all: HashMap<String, String> = self.conn().hgetall(&key).await?;
        all.into_iter()
            .map(|(candidate_id, text)| {
                let result = read(&text).map_err(|error| corrupt(&key, error))?;
                Ok((candidate_id, result))
            })
            .collect()
    }

    pub(super) async fn get_result(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateResult>> {
        let key = self.job_key(job_id, "results");
        let text: Option<String> = self.conn().hget(&key, candidate_id).await?;
        text.map(|text| from_json(&key, &text)).transpose()
    }

    /// HSETNX of the result; when it set it, its id appended to the job's list of
    /// finished ids (one script: both or neither).
    pub(super) async fn record_result(
        &self,
        job_id: &str,
        result: &CandidateResult,
    ) -> StoreResult<bool> {
        const SCRIPT: &str = r"local recorded = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
              redis.call('PEXPIRE', KEYS[1], ARGV[3])
              if recorded == 1 then
                redis.call('RPUSH', KEYS[2], ARGV[1])
                redis.call('PEXPIRE', KEYS[2], ARGV[3])
              end
              return recorded";
        let recorded: i64 = redis::cmd("EVAL")
            .arg(SCRIPT)
            .arg(2)
            .arg(self.job_key(job_id, "results"))
            .arg(self.job_key(job_id, "finished"))
            .arg(&result.candidate_id)
            .arg(to_json(result))
            .arg(self.ttl_ms())
            .query_async(&mut self.conn())
            .await?;
        Ok(recorded == 1)
    }

    /// HSETNX of the result and, when it set it, its id appended to the finished
    /// ids and XADD of the event, as one script (one round trip, atomic).
    pub(super) async fn record_result_reported(
        &self,
        job_id: &str,
        result: &CandidateResult,
        event: &EventRecord,
    ) -> StoreResult<bool> {
        let mut pipe = redis::pipe();
        self.push_result_reported(&mut pipe, job_id, result, event);
        let (recorded,): (i64,) = pipe.query_async(&mut self.conn()).await?;
        Ok(recorded == 1)
    }

    /// The script of [`RedisStore::record_result_reported`] into `pipe`: its reply
    /// is 1 when it recorded the result, 0 when one was recorded already.
    pub(super) fn push_result_reported(
        &self,
        pipe: &mut redis::Pipeline,
        job_id: &str,
        result: &CandidateResult,
        event: &EventRecord,
    ) {
        const SCRIPT: &str = r"local recorded = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
              redis.call('PEXPIRE', KEYS[1], ARGV[3])
              if recorded == 1 then
                redis.call('RPUSH', KEYS[3], ARGV[1])
                redis.call('PEXPIRE', KEYS[3], ARGV[3])
                redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', 'e', ARGV[5])
                redis.call('PEXPIRE', KEYS[2], ARGV[3])
              end
              return recorded";
        pipe.cmd("EVAL")
            .arg(SCRIPT)
            .arg(3)
            .arg(self.job_key(job_id, "results"))
            .arg(self.job_key(job_id, "events"))
            .arg(self.job_key(job_id, "finished"))
            .arg(&result.candidate_id)
            .arg(to_json(result))
            .arg(self.ttl_ms())
            .arg(self.settings.max_events)
            .arg(to_json(event));
    }

    /// HMGET of the results.
    pub(super) async fn get_results(
        &self,
        job_id: &str,
        candidate_ids: &[String],
    ) -> StoreResult<Vec<Option<CandidateResult>>> {
        let key = self.job_key(job_id, "results");
        hash_records(self.conn(), &key, candidate_ids).await
    }

    /// HMGET of the results and HMGET of the candidates in one pipeline.
    pub(super) async fn results_and_candidates(
        &self,
        job_id: &str,
        result_ids: &[String],
        candidate_ids: &[String],
    ) -> StoreResult<ResultsAndCandidates> {
        let results_key = self.job_key(job_id, "results");
        let candidates_key = self.job_key(job_id, "candidates");
        let mut pipe = redis::pipe();
        // HMGET needs a field: an empty list asks for none (its reply is left out)
        for (key, ids) in [(&results_key, result_ids), (&candidates_key, candidate_ids)] {
            if !ids.is_empty() {
                pipe.cmd("HMGET").arg(key).arg(ids);
            }
        }
        let mut replies: Vec<Vec<Option<String>>> = pipe.query_async(&mut self.conn()).await?;
        let candidate_texts = match candidate_ids.is_empty() {
            true => Vec::new(),
            false => replies.pop().unwrap_or_default(),
        };
        let result_texts = replies.pop().unwrap_or_default();
        Ok((
            records_of(&results_key, result_texts)?,
            records_of(&candidates_key, candidate_texts)?,
        ))
    }

    pub(super) async fn has_result(&self, job_id: &str, candidate_id: &str) -> StoreResult<bool> {
        Ok(self
            .conn()
            .hexists(self.job_key(job_id, "results"), candidate_id)
            .await?)
    }

    pub(super) async fn results(
        &self,
        job_id: &str,
    ) -> StoreResult<HashMap<String, CandidateResult>> {
        self.read_results(job_id, |text| serde_json::from_str(text))
            .await
    }

    pub(super) async fn result_listing(
        &self,
        job_id: &str,
    ) -> StoreResult<HashMap<String, CandidateResult>> {
        self.read_results(job_id, result_listed).await
    }

    pub(super) async fn result_ids(&self, job_id: &str) -> StoreResult<Vec<String>> {
        Ok(self.conn().hkeys(self.job_key(job_id, "results")).await?)
    }

    /// LRANGE of the finished ids after the first `seen`, with HLEN of the results
    /// (one MULTI/EXEC: the two agree, every result being recorded with its id).
    /// When they do not — a result recorded without its id (by a coordinator of an
    /// earlier version), or the list shorter than `seen` — every id (HKEYS).
    pub(super) async fn result_ids_since(
        &self,
        job_id: &str,
        seen: usize,
    ) -> StoreResult<ResultIdsSince> {
        let results_key = self.job_key(job_id, "results");
        let finished_key = self.job_key(job_id, "finished");
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("LRANGE").arg(&finished_key).arg(seen).arg(-1);
        pipe.cmd("LLEN").arg(&finished_key);
        pipe.cmd("HLEN").arg(&results_key);
        let (new, listed, results): (Vec<String>, usize, usize) =
            pipe.query_async(&mut self.conn()).await?;
        if seen + new.len() == listed && listed == results {
            return Ok(ResultIdsSince::New(new));
        }
        Ok(ResultIdsSince::All {
            ids: self.result_ids(job_id).await?,
            next: listed,
        })
    }

    pub(super) async fn candidate_counts(&self, job_id: &str) -> StoreResult<(usize, usize)> {
        let mut pipe = redis::pipe();
        pipe.cmd("HLEN").arg(self.job_key(job_id, "candidates"));
        pipe.cmd("HLEN").arg(self.job_key(job_id, "results"));
        let (total, finished): (usize, usize) = pipe.query_async(&mut self.conn()).await?;
        Ok((total, finished))
    }
}
