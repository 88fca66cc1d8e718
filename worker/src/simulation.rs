//! BENCH AND TEST MODE ONLY (`--simulate-candidate-ms N`): a worker that starts no
//! KLayout and answers every candidate after N ms with a valid result (every step
//! `ok`, `data` `{}`). It serves the real `Worker` gRPC service, registers and
//! heartbeats like a real worker (`registration`), runs at most `--slots`
//! candidates at once with a waiting room of `--prefetch` calls like a real
//! worker's ([`crate::waiting_room`]), refuses a call beyond both with
//! RESOURCE_EXHAUSTED and stops a candidate on `CancelCandidate`, so a farm
//! of thousands of slots can be simulated by a few processes to measure the
//! coordinator's dispatch (`tests/benches/dispatch_scale.rs`). It offers only the
//! debug skills: jobs with `noop_plan` run on it, nothing else does.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use centroid_proto::v1::worker_server::{Worker, WorkerServer};
use centroid_proto::v1::{
    CancelCandidateRequest, CancelCandidateResponse, DrainRequest, DrainResponse, HealthRequest,
    HealthResponse, ListSkillsRequest, ListSkillsResponse, RunCandidateRequest,
    RunCandidateResponse, Skill, StepResult,
};
use centroid_proto::{Error, ErrorCode, PROTOCOL_VERSION};
use centroid_runtime::{RequireToken, tls};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use crate::config::WorkerConfig;
use crate::error::WorkerError;
use crate::node::incoming_without_nagle;
use crate::registration::{
    RegistrationHandle, RegistrationSettings, WorkerReport, spawn_registration,
};
use crate::waiting_room::{Admission, Admissions};

/// The skills a simulated worker offers: those of `noop_plan` jobs.
pub const SIMULATED_SKILLS: &[&str] = &["debug.noop", "debug.sleep"];

/// What the simulated worker's calls share.
pub struct SimulatedState {
    worker_id: String,
    slots: usize,
    /// the free slots (unit tokens) and the calls waiting for one
    admissions: Arc<Admissions<()>>,
    delay: Duration,
    draining: AtomicBool,
    /// the candidates running or waiting for a slot, each with the sender that stops it
    running: Mutex<HashMap<String, oneshot::Sender<String>>>,
    registration: Mutex<Option<RegistrationHandle>>,
}

impl SimulatedState {
    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<String>>> {
        self.running.lock().expect("simulated running lock")
    }

    async fn run(&self, request: RunCandidateRequest) -> Result<RunCandidateResponse, Error> {
        if request.candidate_id.is_empty() || request.plan.is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidParam,
                "candidate_id is empty or the plan has no steps",
            )
            .with_retryable(false));
        }
        if self.draining.load(Ordering::SeqCst) {
            return Err(not_started_draining());
        }
        let admitted = self.admissions.admit(&request.candidate_id);
        if let Admission::Full = admitted {
            return Err(Error::new(
                ErrorCode::ResourceExhausted,
                format!(
                    "all {} slots are busy and all {} waiting places taken",
                    self.slots,
                    self.admissions.prefetch()
                ),
            )
            .with_retryable(true));
        }
        if let Admission::Closed = admitted {
            return Err(not_started_draining());
        }
        let (stop, mut stopped) = oneshot::channel();
        let candidate_id = request.candidate_id.clone();
        self.running().insert(candidate_id.clone(), stop);
        let _listed = Listed {
            state: self,
            candidate_id: &candidate_id,
        };
        // a slot is a unit token: holding one is what counts
        match admitted {
            Admission::Now(()) => {}
            Admission::Wait(waiting) => tokio::select! {
                slot = waiting.slot() => slot.ok_or_else(not_started_draining)?,
                Ok(reason) = &mut stopped => {
                    return Err(Error::new(ErrorCode::Cancelled, reason).with_retryable(false));
                }
            },
            Admission::Full | Admission::Closed => unreachable!("answered above"),
        }
        let _slot = HeldSlot {
            admissions: &self.admissions,
            slot: Some(()),
        };
        let started = Instant::now();
        let outcome = tokio::select! {
            _ = tokio::time::sleep(self.delay) => Ok(()),
            Ok(reason) = stopped => Err(reason),
        };
        if let Err(reason) = outcome {
            return Err(Error::new(ErrorCode::Cancelled, reason).with_retryable(false));
        }
        let duration_ms = started.elapsed().as_millis() as u64;
        let steps = request
            .plan
            .iter()
            .map(|step| StepResult {
                step_id: step.step_id.clone(),
                skill: step.skill.clone(),
                ok: true,
                error: None,
                data_json: "{}".into(),
                duration_ms: duration_ms / request.plan.len() as u64,
            })
            .collect();
        Ok(RunCandidateResponse {
            candidate_id: request.candidate_id,
            session_id: request.session_id,
            ok: true,
            steps,
            artifacts: Vec::new(),
            error: None,
            worker_id: self.worker_id.clone(),
            slot: 0,
            duration_ms,
        })
    }
}

/// A call that will not start because the worker drains: retryable elsewhere.
fn not_started_draining() -> Error {
    Error::new(ErrorCode::ServiceUnavailable, "worker is draining").with_retryable(true)
}

/// A call listed as cancellable until it answers (or its caller hangs up).
struct Listed<'a> {
    state: &'a SimulatedState,
    candidate_id: &'a str,
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        self.state.running().remove(self.candidate_id);
    }
}

/// A slot held until the call answers (or its caller hangs up).
struct HeldSlot<'a> {
    admissions: &'a Arc<Admissions<()>>,
    slot: Option<()>,
}

impl Drop for HeldSlot<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            self.admissions.give_back(slot);
        }
    }
}

impl WorkerReport for SimulatedState {
    fn worker_id(&self) -> String {
        self.worker_id.clone()
    }

    fn slot_count(&self) -> u32 {
        self.slots as u32
    }

    fn prefetch(&self) -> u32 {
        self.admissions.prefetch() as u32
    }

    fn free_slots(&self) -> u32 {
        self.admissions.free_count() as u32
    }

    fn running_candidates(&self) -> Vec<String> {
        self.running().keys().cloned().collect()
    }

    fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    fn skill_names(&self) -> Vec<String> {
        SIMULATED_SKILLS
            .iter()
            .map(|name| name.to_string())
            .collect()
    }

    fn klayout_version(&self) -> String {
        "simulated (no KLayout)".into()
    }
}

/// The `Worker` service of a simulated worker.
struct SimulatedService(Arc<SimulatedState>);

#[tonic::async_trait]
impl Worker for SimulatedService {
    async fn run_candidate(
        &self,
        request: Request<RunCandidateRequest>,
    ) -> Result<Response<RunCandidateResponse>, Status> {
        self.0
            .run(request.into_inner())
            .await
            .map(Response::new)
            .map_err(|error| error.to_status())
    }

    async fn list_skills(
        &self,
        _request: Request<ListSkillsRequest>,
    ) -> Result<Response<ListSkillsResponse>, Status> {
        Ok(Response::new(ListSkillsResponse {
            skills: SIMULATED_SKILLS
                .iter()
                .map(|name| Skill {
                    name: name.to_string(),
                    description: "simulated: answered after the set delay".into(),
                    input_schema_json: r#"{"type":"object"}"#.into(),
                })
                .collect(),
            klayout_version: self.0.klayout_version(),
            skill_server_version: "simulated".into(),
        }))
    }

    async fn health(
        &self,
        _request: Request<HealthRequest>,
    ) -> Result<Response<HealthResponse>, Status> {
        let state = &self.0;
        Ok(Response::new(HealthResponse {
            worker_id: state.worker_id.clone(),
            protocol_version: PROTOCOL_VERSION,
            draining: state.is_draining(),
            slots: state.slots as u32,
            free_slots: state.free_slots(),
            slot_health: Vec::new(),
            klayout_version: state.klayout_version(),
            rejected_busy: 0,
            prefetch: state.prefetch(),
            waiting: state.admissions.waiting_count() as u32,
            most_admitted: state.admissions.most_admitted() as u32,
        }))
    }

    async fn drain(
        &self,
        _request: Request<DrainRequest>,
    ) -> Result<Response<DrainResponse>, Status> {
        self.0.draining.store(true, Ordering::SeqCst);
        let failed_back = self.0.admissions.close_waiting_room() as u32;
        let finished = (self.0.running().len() as u32).saturating_sub(failed_back);
        Ok(Response::new(DrainResponse {
            finished,
            failed_back,
        }))
    }

    async fn cancel_candidate(
        &self,
        request: Request<CancelCandidateRequest>,
    ) -> Result<Response<CancelCandidateResponse>, Status> {
        let request = request.into_inner();
        let stop = self.0.running().remove(&request.candidate_id);
        let found = stop.is_some_and(|stop| stop.send(request.reason).is_ok());
        Ok(Response::new(CancelCandidateResponse { found }))
    }
}

/// A serving simulated worker.
pub struct SimulatedNode {
    pub local_address: SocketAddr,
    pub state: Arc<SimulatedState>,
    /// fires when the coordinator refuses the registration
    pub registration_refused: Option<oneshot::Receiver<WorkerError>>,
    server_shutdown: oneshot::Sender<()>,
    server_task: JoinHandle<Result<(), tonic::transport::Error>>,
}

impl SimulatedNode {
    /// Serves the simulated worker on `listener` and registers it with the
    /// configured coordinator; candidates take `delay` each.
    pub async fn start(
        config: &WorkerConfig,
        listener: TcpListener,
        delay: Duration,
    ) -> Result<SimulatedNode, WorkerError> {
        let local_address = listener.local_addr()?;
        let worker_id = config
            .worker_id
            .clone()
            .unwrap_or_else(|| format!("simulated-{}", local_address.port()));
        let state = Arc::new(SimulatedState {
            worker_id,
            slots: config.slot_count(),
            admissions: Admissions::new(vec![(); config.slot_count()], config.prefetch_count()),
            delay,
            draining: AtomicBool::new(false),
            running: Mutex::new(HashMap::new()),
            registration: Mutex::new(None),
        });
        let service = InterceptedService::new(
            WorkerServer::new(SimulatedService(state.clone())),
            RequireToken::new(config.common.token.clone()),
        );
        let mut server = tonic::transport::Server::builder();
        if let Some(tls) = &config.common.tls {
            server = server.tls_config(tls.server_config()?)?;
        }
        let (server_shutdown, shutdown_requested) = oneshot::channel::<()>();
        let server_task = tokio::spawn(server.add_service(service).serve_with_incoming_shutdown(
            incoming_without_nagle(listener),
            async {
                // a dropped sender stops the server as a sent one does
                shutdown_requested.await.ok();
            },
        ));
        tracing::warn!(address = %local_address, worker_id = %state.worker_id, slots = state.slots, prefetch = state.admissions.prefetch(), delay_ms = delay.as_millis() as u64, "SIMULATED worker serving (bench/test mode: no KLayout, every candidate answered ok after the delay)");
        let mut registration_refused = None;
        if let Some(url) = &config.coordinator {
            let settings = RegistrationSettings {
                coordinator_url: url.clone(),
                coordinator_endpoint: tls::endpoint(config.common.tls.as_ref(), url)?,
                advertise_address: config.advertise_address.clone().unwrap_or_else(|| {
                    tls::url_for(config.common.tls.as_ref(), &local_address.to_string())
                }),
                heartbeat_interval: Duration::from_millis(config.heartbeat_interval_ms),
                hostname: "simulated".into(),
                token: config.coordinator_token(),
                instance_id: uuid::Uuid::new_v4().simple().to_string(),
            };
            let (refused, refusal) = oneshot::channel();
            let handle = spawn_registration(state.clone(), settings, refused);
            *state.registration.lock().expect("registration lock") = Some(handle);
            registration_refused = Some(refusal);
        }
        Ok(SimulatedNode {
            local_address,
            state,
            registration_refused,
            server_shutdown,
            server_task,
        })
    }

    /// Deregisters and stops serving.
    pub async fn stop(self) -> Result<(), WorkerError> {
        let registration = self
            .state
            .registration
            .lock()
            .expect("registration lock")
            .take();
        if let Some(registration) = registration {
            registration.deregister("stopped").await;
        }
        // the server may have stopped already; then the send finds no receiver
        if self.server_shutdown.send(()).is_err() {
            tracing::debug!("the simulated worker's server had stopped already");
        }
        match self.server_task.await {
            Ok(served) => served.map_err(WorkerError::from),
            Err(join_error) => Err(WorkerError::Io(std::io::Error::other(join_error))),
        }
    }
}

/// What the operator's endpoint and the ready file ask a simulated worker.
pub struct SimulatedProbe(pub Arc<SimulatedState>);

#[tonic::async_trait]
impl centroid_runtime::OperationsProbe for SimulatedProbe {
    async fn metrics(&self) -> String {
        let state = &self.0;
        format!(
            "# simulated worker (bench/test mode)\ncentroid_worker_slots {}\ncentroid_worker_free_slots {}\n",
            state.slots,
            state.free_slots()
        )
    }

    async fn ready(&self) -> Result<(), String> {
        if self.0.is_draining() {
            return Err("draining".into());
        }
        Ok(())
    }
}
