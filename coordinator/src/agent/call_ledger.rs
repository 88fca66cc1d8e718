//! The model calls of one advice as they are sent and answered, kept where the
//! session can read them while the advice is still being asked. An advice the
//! job stops waiting for (the job ended, or its share was drafted without it)
//! is abandoned mid-way; its calls — answered ones with their records, those
//! still out with their prompt and the time waited — are then recorded all the
//! same, so every request the server received is a call in the job's records.
//!
//! The ledger is task-local: the session runs an advice inside
//! [`CallLedger::scope`], and [`super::conversation::ask`] writes each call into
//! the ledger of the task it runs in (none outside an advice: a ReAct repair).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use centroid_planner::advice::LlmCall;

tokio::task_local! {
    static LEDGER: CallLedger;
}

/// The calls of one advice so far (cheap to clone: one shared list).
#[derive(Debug, Clone, Default)]
pub struct CallLedger {
    calls: Arc<Mutex<Vec<Entry>>>,
}

#[derive(Debug)]
struct Entry {
    /// the call as sent (no answer yet), then as recorded once answered
    record: LlmCall,
    sent: Instant,
    answered: bool,
}

/// Where a call sent within an advice sits in its ledger.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sent(usize);

impl CallLedger {
    /// Runs `future` (an advice) with this ledger as the one its calls go into.
    pub fn scope<F: Future>(&self, future: F) -> impl Future<Output = F::Output> + use<F> {
        LEDGER.scope(self.clone(), future)
    }

    /// Every call sent so far, in the order sent, and whether it was answered
    /// (or failed): then as recorded, else as sent with the time waited so far.
    pub fn calls(&self) -> Vec<(LlmCall, bool)> {
        let entries = self.calls.lock().expect("call ledger");
        entries
            .iter()
            .map(|entry| {
                let mut call = entry.record.clone();
                if !entry.answered {
                    call.duration_ms = entry.sent.elapsed().as_millis() as u64;
                }
                (call, entry.answered)
            })
            .collect()
    }
}

/// Notes `call` (its prompt, no answer yet) as sent, in the ledger of the
/// advice being asked; `None` outside one.
pub(super) fn sent(call: &LlmCall) -> Option<Sent> {
    LEDGER
        .try_with(|ledger| {
            let mut entries = ledger.calls.lock().expect("call ledger");
            entries.push(Entry {
                record: call.clone(),
                sent: Instant::now(),
                answered: false,
            });
            Sent(entries.len() - 1)
        })
        .ok()
}

/// Notes the call `sent` as answered (or failed) with its record.
pub(super) fn answered(sent: Option<Sent>, call: &LlmCall) {
    let Some(Sent(index)) = sent else {
        return;
    };
    let noted = LEDGER.try_with(|ledger| {
        let mut entries = ledger.calls.lock().expect("call ledger");
        if let Some(entry) = entries.get_mut(index) {
            entry.record = call.clone();
            entry.answered = true;
        }
    });
    debug_assert!(
        noted.is_ok(),
        "a call is answered in the task it was sent from"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(role: &str, outcome: &str) -> LlmCall {
        LlmCall {
            role: role.into(),
            iteration: 2,
            model: "m".into(),
            prompt_tokens: 0,
            completion_tokens: 0,
            usage_estimated: true,
            duration_ms: 0,
            attempts: 1,
            outcome: outcome.into(),
            reason: String::new(),
            summary: String::new(),
            trace_id: String::new(),
            messages: Vec::new(),
            answer: String::new(),
        }
    }

    #[tokio::test]
    async fn an_abandoned_advice_lists_its_answered_and_its_outstanding_calls() {
        let ledger = CallLedger::default();
        ledger
            .scope(async {
                let critic = sent(&call("critic", ""));
                let _planner = sent(&call("planner", ""));
                answered(critic, &call("critic", "used"));
            })
            .await;
        let seen: Vec<(String, String, bool)> = ledger
            .calls()
            .into_iter()
            .map(|(call, answered)| (call.role, call.outcome, answered))
            .collect();
        assert_eq!(
            seen,
            vec![
                ("critic".into(), "used".into(), true),
                ("planner".into(), String::new(), false)
            ]
        );
        assert!(
            sent(&call("react", "")).is_none(),
            "outside an advice nothing is noted"
        );
    }
}
