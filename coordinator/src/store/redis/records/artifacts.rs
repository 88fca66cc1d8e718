//! The artifacts of a job's candidates in Redis: bytes and metadata in two hashes.

use std::collections::HashMap;

use redis::AsyncCommands;

use super::super::RedisStore;
use super::super::codec::{from_json, to_json};
use crate::error::StoreResult;
use crate::model::ArtifactMeta;

impl RedisStore {
    pub(super) async fn put_artifact(
        &self,
        job_id: &str,
        meta: &ArtifactMeta,
        content: &[u8],
    ) -> StoreResult<()> {
        let field = format!("{}/{}", meta.candidate_id, meta.name);
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("HSET")
            .arg(self.job_key(job_id, "artifacts"))
            .arg(&field)
            .arg(content)
            .ignore();
        pipe.cmd("HSET")
            .arg(self.job_key(job_id, "artifact_index"))
            .arg(&field)
            .arg(to_json(meta))
            .ignore();
        for suffix in ["artifacts", "artifact_index"] {
            pipe.cmd("PEXPIRE")
                .arg(self.job_key(job_id, suffix))
                .arg(self.ttl_ms())
                .ignore();
        }
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    pub(super) async fn delete_candidate_artifacts(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<()> {
        let fields: Vec<String> = self
            .artifacts(job_id)
            .await?
            .into_iter()
            .filter(|meta| meta.candidate_id == candidate_id)
            .map(|meta| format!("{}/{}", meta.candidate_id, meta.name))
            .collect();
        if fields.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("HDEL")
            .arg(self.job_key(job_id, "artifacts"))
            .arg(&fields)
            .ignore();
        pipe.cmd("HDEL")
            .arg(self.job_key(job_id, "artifact_index"))
            .arg(&fields)
            .ignore();
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    pub(super) async fn artifacts(&self, job_id: &str) -> StoreResult<Vec<ArtifactMeta>> {
        let key = self.job_key(job_id, "artifact_index");
        let all: HashMap<String, String> = self.conn().hgetall(&key).await?;
        let mut metas: Vec<ArtifactMeta> = all
            .values()
            .map(|text| from_json(&key, text))
            .collect::<StoreResult<_>>()?;
        metas.sort_by(|left, right| {
            (&left.candidate_id, &left.name).cmp(&(&right.candidate_id, &right.name))
        });
        Ok(metas)
    }

    pub(super) async fn get_artifact(
        &self,
        job_id: &str,
        candidate_id: &str,
        name: &str,
    ) -> StoreResult<Option<Vec<u8>>> {
        Ok(self
            .conn()
            .hget(
                self.job_key(job_id, "artifacts"),
                format!("{candidate_id}/{name}"),
            )
            .await?)
    }
}
