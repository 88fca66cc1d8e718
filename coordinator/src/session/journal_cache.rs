//! The driver's copy of its job's journal: every candidate with its design point,
//! origin, parent and evaluation — without its plan, which the search never
//! reads and which carries the rule set inline.
//!
//! Each iteration used to re-read (and clone) every candidate and every result of
//! the job to evaluate the few new ones and to plan the next: the slots waited
//! ≈1.7 ms per candidate of the journal between iterations. The cache reads a
//! candidate once; afterwards only the ids (one cheap call) and the new records.
//!
//! Invariant: only the job's driver writes the job's candidates (planning adds
//! them, evaluation sets their evaluation through [`JournalCache::set_evaluation`]),
//! so the cache never holds an older evaluation than the store. A driver that
//! takes the job over starts with an empty cache and reads everything once.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::context::{Context, Interrupted};
use crate::model::{CandidateRecord, Evaluation};

/// Candidates read per store call when many are not cached.
const UNSEEN_PER_CALL: usize = 256;

#[derive(Default)]
pub(super) struct JournalCache {
    records: Mutex<BTreeMap<String, CandidateRecord>>,
}

impl JournalCache {
    /// Every candidate of the job, sorted by id, plans left out.
    pub(super) async fn read(
        &self,
        context: &Context,
        job_id: &str,
    ) -> Result<Vec<CandidateRecord>, Interrupted> {
        if self.lock().is_empty() {
            let all = context
                .with_store_retry("read candidates", || {
                    context.store.candidate_listing(job_id)
                })
                .await?;
            let mut records = self.lock();
            for record in all {
                records.insert(record.candidate_id.clone(), record);
            }
        } else {
            let ids = context
                .with_store_retry("read candidate ids", || context.store.candidate_ids(job_id))
                .await?;
            let unseen: Vec<String> = {
                let records = self.lock();
                ids.into_iter()
                    .filter(|id| !records.contains_key(id))
                    .collect()
            };
            for chunk in unseen.chunks(UNSEEN_PER_CALL) {
                let read = context
                    .with_store_retry("read candidates", || {
                        context.store.get_candidates(job_id, chunk)
                    })
                    .await?;
                let mut records = self.lock();
                for record in read.into_iter().flatten() {
                    records.insert(record.candidate_id.clone(), without_plan(record));
                }
            }
        }
        Ok(self.lock().values().cloned().collect())
    }

    /// Records an origin written to the store.
    pub(super) fn set_origin(&self, candidate_id: &str, origin: crate::model::Origin) {
        if let Some(record) = self.lock().get_mut(candidate_id) {
            record.origin = origin;
        }
    }

    /// Records an evaluation written to the store.
    pub(super) fn set_evaluation(&self, candidate_id: &str, evaluation: &Evaluation) {
        if let Some(record) = self.lock().get_mut(candidate_id) {
            record.evaluation = Some(evaluation.clone());
        }
    }

    /// Records candidates just stored by the driver (an iteration drafted), so that
    /// their first evaluation need not read them back.
    pub(super) fn remember(&self, stored: &[CandidateRecord]) {
        let mut records = self.lock();
        for record in stored {
            records
                .entry(record.candidate_id.clone())
                .or_insert_with(|| without_plan(record.clone()));
        }
    }

    /// Those of `candidate_ids` cached as of `iteration` without an evaluation;
    /// `None` when one of `candidate_ids` is not cached (the caller reads the store).
    pub(super) fn unevaluated(
        &self,
        candidate_ids: &[String],
        iteration: u32,
    ) -> Option<Vec<String>> {
        let records = self.lock();
        let mut unevaluated = Vec::new();
        for candidate_id in candidate_ids {
            let record = records.get(candidate_id)?;
            if record.iteration == iteration && record.evaluation.is_none() {
                unevaluated.push(candidate_id.clone());
            }
        }
        Some(unevaluated)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, CandidateRecord>> {
        self.records.lock().expect("journal cache lock")
    }
}

fn without_plan(mut record: CandidateRecord) -> CandidateRecord {
    record.plan.steps = Vec::new();
    record
}
