//! What the job drivers size their queue windows by: the sum of the unfinished
//! jobs' weights. Read from the store at most every [`READ_EVERY`] (the drivers
//! of a coordinator share one reading; a job submitted or ended here drops it),
//! so sharing the slots costs no store round trip per result.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::StoreResult;
use crate::store::Store;

/// How long a reading serves.
pub(crate) const READ_EVERY: Duration = Duration::from_millis(200);

/// The farm's load as last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Load {
    /// the sum of the weights of the unfinished jobs
    pub active_weight: u64,
}

#[derive(Default)]
pub(crate) struct FarmLoad {
    last: Mutex<Option<(Instant, Load)>>,
}

impl FarmLoad {
    /// The load, read again when the last reading is older than [`READ_EVERY`].
    pub(crate) async fn read(&self, store: &dyn Store) -> StoreResult<Load> {
        if let Some((at, load)) = *self.lock()
            && at.elapsed() < READ_EVERY
        {
            return Ok(load);
        }
        let load = Load {
            active_weight: store.active_weight().await?,
        };
        *self.lock() = Some((Instant::now(), load));
        Ok(load)
    }

    /// Drops the last reading (a job was submitted or ended here): the next one
    /// reads the store.
    pub(crate) fn forget(&self) {
        *self.lock() = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Instant, Load)>> {
        self.last.lock().expect("farm load lock")
    }
}
