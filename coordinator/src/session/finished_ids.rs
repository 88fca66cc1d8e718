//! The driver's copy of its job's finished ids: the candidates with a result.
//!
//! The driver looks at its job every few ms while a round runs (each finished
//! entry wakes it, at most every 20 ms: `dispatcher/progress_pace.rs`), and each
//! look needs the set of candidates with a result. Read whole, that set is
//! O(candidates of the job) per look — at a thousand slots, thousands of ids
//! fifty times a second per job. The store keeps the ids in the order recorded
//! ([`crate::store::JobRecords::result_ids_since`]); the driver keeps what it has
//! read and asks only for the ids after them. A driver that takes a job over
//! starts empty and reads every id once.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crate::context::{Context, Interrupted};
use crate::store::ResultIdsSince;

#[derive(Default)]
pub(super) struct FinishedIds(Mutex<Seen>);

#[derive(Default)]
struct Seen {
    /// shared with the last `Progress` handed out: copied only when a new id
    /// arrives while that one is still held
    ids: Arc<HashSet<String>>,
    /// where the next read of the store's ordered ids starts
    next: usize,
}

impl FinishedIds {
    /// Every candidate of the job with a result, as of now.
    pub(super) async fn read(
        &self,
        context: &Context,
        job_id: &str,
    ) -> Result<Arc<HashSet<String>>, Interrupted> {
        let next = self.lock().next;
        let since = context
            .with_store_retry("read result ids", || {
                context.store.result_ids_since(job_id, next)
            })
            .await?;
        let mut seen = self.lock();
        match since {
            ResultIdsSince::New(new) => {
                // another read may have moved on meanwhile (the driver reads from one
                // task, so this does not happen; it would only repeat ids)
                seen.next = seen.next.max(next + new.len());
                if !new.is_empty() {
                    Arc::make_mut(&mut seen.ids).extend(new);
                }
            }
            ResultIdsSince::All { ids, next } => {
                seen.ids = Arc::new(ids.into_iter().collect());
                seen.next = next;
            }
        }
        Ok(seen.ids.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.0.lock().expect("finished ids lock")
    }
}
