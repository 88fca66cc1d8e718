//! The gRPC face: the worker-facing `Coordinator` service (registration,
//! heartbeats) and the CLI-facing `Jobs` service, both wrapping [`Coordinator`].
//! Every call is authenticated (`RequireToken`, with the principals file when one is
//! configured) and checked against its caller's role and the job's owner
//! ([`crate::access`]).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use centroid_proto::reflection::reflection_service;
use centroid_proto::v1::coordinator_server::{Coordinator as CoordinatorRpc, CoordinatorServer};
use centroid_proto::v1::jobs_server::{Jobs, JobsServer};
use centroid_proto::v1::{
    ArtifactChunk, CancelJobRequest, CancelJobResponse, DeregisterWorkerRequest,
    DeregisterWorkerResponse, FetchArtifactRequest, ForgetCaseRequest, ForgetCaseResponse,
    GetCaseRequest, GetCaseResponse, GetJobRequest, GetJobResponse, HeartbeatRequest,
    HeartbeatResponse, InputIssue as ProtoIssue, JobEvent, ListCasesRequest, ListCasesResponse,
    ListJobsRequest, ListJobsResponse, ListWorkersRequest, ListWorkersResponse,
    RegisterWorkerRequest, RegisterWorkerResponse, SubmitJobRequest, SubmitJobResponse,
    WatchJobRequest, WorkerInfo, WorkerStatus,
};
use centroid_proto::{Error, ErrorCode, PROTOCOL_VERSION, check_protocol_version, check_worker_id};
use centroid_runtime::{
    HEALTH_FILE_DESCRIPTOR_SET, Principal, RequireToken, health_service, trace_context,
};
use tokio::net::TcpListener;
use tokio_stream::Stream;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::server::NamedService;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use crate::access::{self, Subject};
use crate::artifacts::CHUNK_BYTES;
use crate::coordinator::{Coordinator, SubmitOptions};
use crate::error::CoordinatorError;
use crate::heap_trim;
use crate::model::JobInputs;
use crate::proto_views::{cancel_response, case_summary, job_event, job_response, job_summary};

/// How long CancelJob waits for the job to end before answering with its state.
const CANCEL_ANSWER_WAIT: Duration = Duration::from_secs(5);
/// How many of the newest jobs a non-admin's ListJobs looks through for its own
/// (the Redis store lists at most its `max_jobs`, 1,000 by default).
const OWN_JOBS_WINDOW: usize = 1_000;

/// Both services over one [`Coordinator`].
#[derive(Clone)]
pub struct CoordinatorService {
    coordinator: Coordinator,
}

impl CoordinatorService {
    pub fn new(coordinator: Coordinator) -> CoordinatorService {
        CoordinatorService { coordinator }
    }

    /// Whether `principal` may `action` on job `job_id`: NOT_FOUND when there is
    /// no such job, PERMISSION_DENIED when it is not the principal's.
    async fn check_job(
        &self,
        principal: &Principal,
        action: &str,
        job_id: &str,
    ) -> Result<(), Status> {
        let job = self
            .coordinator
            .store()
            .get_job(job_id)
            .await
            .map_err(CoordinatorError::from)?
            .ok_or_else(|| CoordinatorError::UnknownJob(job_id.to_string()))?;
        access::check_job(principal, action, &job)
    }
}

#[tonic::async_trait]
impl CoordinatorRpc for CoordinatorService {
    async fn register_worker(
        &self,
        request: Request<RegisterWorkerRequest>,
    ) -> Result<Response<RegisterWorkerResponse>, Status> {
        let principal = access::caller(&request)?;
        let Some(worker) = request.into_inner().worker else {
            return Err(Error::new(ErrorCode::InvalidParam, "worker info missing")
                .with_retryable(false)
                .to_status());
        };
        access::check_worker(&principal, "register", &worker.worker_id)?;
        let worker_id = worker.worker_id.clone();
        let rejected = |status: Status| {
            access::audit(
                &principal,
                "register",
                Subject::Worker(&worker_id),
                "rejected",
            );
            status
        };
        check_protocol_version(worker.protocol_version)
            .map_err(|error| rejected(error.to_status()))?;
        check_worker_id(&worker.worker_id).map_err(|error| rejected(error.to_status()))?;
        if worker.address.is_empty() || worker.slots == 0 || worker.instance_id.is_empty() {
            return Err(rejected(
                Error::new(
                    ErrorCode::InvalidParam,
                    "worker_id, instance_id, address and slots are required",
                )
                .with_retryable(false)
                .to_status(),
            ));
        }
        if let Err(taken) = self.coordinator.registry().register(worker) {
            access::audit(
                &principal,
                "register",
                Subject::Worker(&worker_id),
                "conflict",
            );
            let message = format!(
                "worker id {} belongs to a live worker (another instance) at {}; retry once it stops heartbeating, or choose another --worker-id",
                taken.worker_id, taken.live_address
            );
            return Err(Error::new(ErrorCode::Conflict, message)
                .with_retryable(true)
                .to_status());
        }
        access::audit(&principal, "register", Subject::Worker(&worker_id), "ok");
        Ok(Response::new(RegisterWorkerResponse {
            protocol_version: PROTOCOL_VERSION,
            heartbeat_interval_ms: self.coordinator.config().heartbeat_interval_ms,
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        let principal = access::caller(&request)?;
        let heartbeat = request.into_inner();
        access::check_worker(&principal, "heartbeat", &heartbeat.worker_id)?;
        let known = self.coordinator.registry().heartbeat(
            &heartbeat.worker_id,
            &heartbeat.instance_id,
            heartbeat.free_slots,
            heartbeat.draining,
        );
        Ok(Response::new(HeartbeatResponse { known }))
    }

    async fn deregister_worker(
        &self,
        request: Request<DeregisterWorkerRequest>,
    ) -> Result<Response<DeregisterWorkerResponse>, Status> {
        let principal = access::caller(&request)?;
        let request = request.into_inner();
        access::check_worker(&principal, "deregister", &request.worker_id)?;
        self.coordinator.registry().deregister(
            &request.worker_id,
            &request.instance_id,
            &request.reason,
        );
        access::audit(
            &principal,
            "deregister",
            Subject::Worker(&request.worker_id),
            "ok",
        );
        Ok(Response::new(DeregisterWorkerResponse {}))
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<JobEvent, Status>> + Send>>;
type ChunkStream = Pin<Box<dyn Stream<Item = Result<ArtifactChunk, Status>> + Send>>;

#[tonic::async_trait]
impl Jobs for CoordinatorService {
    async fn submit_job(
        &self,
        request: Request<SubmitJobRequest>,
    ) -> Result<Response<SubmitJobResponse>, Status> {
        let principal = access::caller(&request)?;
        access::check_submitter(&principal)?;
        let trace_id = trace_context::trace_id_of(request.metadata()).unwrap_or_default();
        let request = request.into_inner();
        let input_bytes = request.netlist_json.len()
            + request.drc_rules_json.len()
            + request.objectives_json.len()
            + request.testbench_sp.len();
        let options = request.options.unwrap_or_default();
        let submitted = self
            .coordinator
            .submit(
                JobInputs {
                    netlist_json: request.netlist_json,
                    drc_rules_json: request.drc_rules_json,
                    objectives_json: request.objectives_json,
                    testbench_sp: request.testbench_sp,
                },
                SubmitOptions {
                    name: request.name,
                    candidates_per_iteration: options.candidates_per_iteration,
                    max_iterations: options.max_iterations,
                    seed: options.seed,
                    time_budget_ms: options.time_budget_ms,
                    candidate_deadline_ms: options.candidate_deadline_ms,
                    noop_plan: options.noop_plan,
                    sleep_ms: options.sleep_ms,
                    signoff_deck: options.signoff_deck,
                    planner: options.planner,
                    patience: options.patience,
                    priority: options.priority,
                    trace_id,
                    owner: Some(principal.name.to_string()),
                },
            )
            .await;
        // the decoded request and its parse are freed by now: give the pages back
        if input_bytes >= heap_trim::LARGE_REQUEST_BYTES {
            heap_trim::release_freed_memory();
        }
        let submitted = submitted
            .inspect_err(|_| access::audit(&principal, "submit", Subject::Farm, "rejected"))?;
        access::audit(&principal, "submit", Subject::Job(&submitted.job_id), "ok");
        Ok(Response::new(SubmitJobResponse {
            job_id: submitted.job_id,
            warnings: submitted
                .warnings
                .into_iter()
                .map(|issue| ProtoIssue {
                    file: issue.file,
                    pointer: issue.pointer,
                    message: issue.message,
                })
                .collect(),
        }))
    }

    type WatchJobStream = EventStream;

    async fn watch_job(
        &self,
        request: Request<WatchJobRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let principal = access::caller(&request)?;
        let request = request.into_inner();
        self.check_job(&principal, "watch", &request.job_id).await?;
        let after = (!request.after_cursor.is_empty()).then_some(request.after_cursor);
        let mut receiver = self.coordinator.watch(&request.job_id, after).await?;
        let (sender, output) = tokio::sync::mpsc::channel(256);
        let job_id = request.job_id.clone();
        tokio::spawn(async move {
            while let Some(next) = receiver.recv().await {
                let next = next
                    .map(|(cursor, event)| job_event(&job_id, cursor, event))
                    .map_err(Status::from);
                if sender.send(next).await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(output))))
    }

    async fn get_job(
        &self,
        request: Request<GetJobRequest>,
    ) -> Result<Response<GetJobResponse>, Status> {
        let principal = access::caller(&request)?;
        let job_id = request.into_inner().job_id;
        self.check_job(&principal, "get", &job_id).await?;
        let view = self.coordinator.get(&job_id).await?;
        Ok(Response::new(job_response(view)))
    }

    async fn list_jobs(
        &self,
        request: Request<ListJobsRequest>,
    ) -> Result<Response<ListJobsResponse>, Status> {
        let principal = access::caller(&request)?;
        let limit = match request.into_inner().limit {
            0 => 100,
            limit => limit.min(1000),
        } as usize;
        let window = match principal.is_admin() {
            true => limit,
            false => OWN_JOBS_WINDOW,
        };
        let jobs = self
            .coordinator
            .list_with_counts(limit, window, |job| {
                principal.may_access_job_of(job.owner.as_deref())
            })
            .await?;
        Ok(Response::new(ListJobsResponse {
            jobs: jobs
                .iter()
                .map(|(job, total, finished)| job_summary(job, *total, *finished))
                .collect(),
        }))
    }

    async fn cancel_job(
        &self,
        request: Request<CancelJobRequest>,
    ) -> Result<Response<CancelJobResponse>, Status> {
        let principal = access::caller(&request)?;
        let request = request.into_inner();
        self.check_job(&principal, "cancel", &request.job_id)
            .await?;
        let requested = self
            .coordinator
            .cancel(&request.job_id, &request.reason)
            .await
            .inspect_err(|_| {
                access::audit(
                    &principal,
                    "cancel",
                    Subject::Job(&request.job_id),
                    "failed",
                )
            })?;
        access::audit(&principal, "cancel", Subject::Job(&request.job_id), "ok");
        // answer with the state after the cancel took effect (bounded: a job driven by
        // another coordinator notices the request at its next lease renewal)
        let job = match requested.is_finished() {
            true => requested,
            false => {
                self.coordinator
                    .wait(&request.job_id, CANCEL_ANSWER_WAIT)
                    .await?
            }
        };
        Ok(Response::new(cancel_response(&job)))
    }

    type FetchArtifactStream = ChunkStream;

    async fn fetch_artifact(
        &self,
        request: Request<FetchArtifactRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        let principal = access::caller(&request)?;
        let request = request.into_inner();
        self.check_job(&principal, "fetch", &request.job_id).await?;
        let (meta, content) = self
            .coordinator
            .fetch_artifact(&request.job_id, &request.candidate_id, &request.name)
            .await?;
        let total = content.len() as u64;
        let chunks: Vec<Result<ArtifactChunk, Status>> = if content.is_empty() {
            vec![Ok(ArtifactChunk {
                name: meta.name.clone(),
                media_type: meta.media_type.clone(),
                offset: 0,
                total_size: 0,
                content: Vec::new(),
            })]
        } else {
            content
                .chunks(CHUNK_BYTES)
                .enumerate()
                .map(|(index, chunk)| {
                    Ok(ArtifactChunk {
                        name: meta.name.clone(),
                        media_type: meta.media_type.clone(),
                        offset: (index * CHUNK_BYTES) as u64,
                        total_size: total,
                        content: chunk.to_vec(),
                    })
                })
                .collect()
        };
        Ok(Response::new(Box::pin(tokio_stream::iter(chunks))))
    }

    async fn list_cases(
        &self,
        request: Request<ListCasesRequest>,
    ) -> Result<Response<ListCasesResponse>, Status> {
        access::check_admin(&access::caller(&request)?, "list the memory's cases")?;
        let cases = self.coordinator.cases().await?;
        Ok(Response::new(ListCasesResponse {
            cases: cases.into_iter().map(case_summary).collect(),
        }))
    }

    async fn get_case(
        &self,
        request: Request<GetCaseRequest>,
    ) -> Result<Response<GetCaseResponse>, Status> {
        access::check_admin(&access::caller(&request)?, "read the memory's cases")?;
        let job_id = request.into_inner().job_id;
        let case = self
            .coordinator
            .cases()
            .await?
            .into_iter()
            .find(|case| case.job_id == job_id)
            .ok_or(CoordinatorError::UnknownCase(job_id))?;
        Ok(Response::new(GetCaseResponse {
            case_json: serde_json::to_string(&case).unwrap_or_default(),
        }))
    }

    async fn forget_case(
        &self,
        request: Request<ForgetCaseRequest>,
    ) -> Result<Response<ForgetCaseResponse>, Status> {
        access::check_admin(&access::caller(&request)?, "forget the memory's cases")?;
        self.coordinator
            .forget_case(&request.into_inner().job_id)
            .await?;
        Ok(Response::new(ForgetCaseResponse {}))
    }

    async fn list_workers(
        &self,
        _request: Request<ListWorkersRequest>,
    ) -> Result<Response<ListWorkersResponse>, Status> {
        let mut workers = self.coordinator.registry().statuses();
        // workers registered with other coordinators sharing the store
        let local = self.coordinator.registry().known_ids();
        if let Ok(cards) = self.coordinator.store().worker_cards().await {
            for card in cards
                .into_iter()
                .filter(|card| !local.contains(&card.worker_id))
            {
                workers.push(WorkerStatus {
                    info: Some(WorkerInfo {
                        worker_id: card.worker_id,
                        address: card.address,
                        slots: card.slots,
                        skills: card.skills,
                        klayout_version: card.klayout_version,
                        protocol_version: PROTOCOL_VERSION,
                        hostname: card.hostname,
                        // not told to other coordinators: no registration comes through them
                        instance_id: String::new(),
                        prefetch: 0,
                    }),
                    free_slots: card.slots,
                    running: 0,
                    draining: false,
                    alive: true,
                    last_heartbeat_ms_ago: crate::model::now_ms().saturating_sub(card.last_seen_ms),
                });
            }
        }
        Ok(Response::new(ListWorkersResponse { workers }))
    }
}

/// Serves both services on `listener` until `shutdown` resolves.
pub async fn serve(
    coordinator: Coordinator,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), CoordinatorError> {
    let authenticate = RequireToken::new(coordinator.config().common.token.clone())
        .with_principals(coordinator.config().access.clone());
    let health = health_service(
        Arc::new(coordinator.clone()),
        &[
            <CoordinatorServer<CoordinatorService> as NamedService>::NAME,
            <JobsServer<CoordinatorService> as NamedService>::NAME,
        ],
    )
    .await;
    let reflection = reflection_service(&[HEALTH_FILE_DESCRIPTOR_SET]);
    let mut server = tonic::transport::Server::builder();
    if let Some(tls) = &coordinator.config().common.tls {
        server = server.tls_config(tls.server_config()?)?;
    }
    let service = CoordinatorService::new(coordinator);
    let jobs = JobsServer::new(service.clone())
        .max_encoding_message_size(64 * 1024 * 1024)
        .max_decoding_message_size(64 * 1024 * 1024);
    server
        .http2_keepalive_interval(Some(Duration::from_secs(10)))
        .add_service(health)
        .add_service(InterceptedService::new(reflection, authenticate.clone()))
        .add_service(InterceptedService::new(
            CoordinatorServer::new(service),
            authenticate.clone(),
        ))
        .add_service(InterceptedService::new(jobs, authenticate))
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown)
        .await?;
    Ok(())
}

/// Binds `address` (port 0 picks a free one).
pub async fn bind(address: &str) -> Result<(TcpListener, SocketAddr), CoordinatorError> {
    let listener = TcpListener::bind(address).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}
