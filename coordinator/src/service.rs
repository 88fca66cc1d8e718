//! The gRPC face: the worker-facing `Coordinator` service (registration,
//! heartbeats) and the CLI-facing `Jobs` service, both wrapping [`Coordinator`].

use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

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
use centroid_proto::{Error, ErrorCode, PROTOCOL_VERSION, check_protocol_version};
use centroid_runtime::{RequireToken, trace_context};
use tokio::net::TcpListener;
use tokio_stream::Stream;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use crate::artifacts::CHUNK_BYTES;
use crate::coordinator::{Coordinator, SubmitOptions};
use crate::error::CoordinatorError;
use crate::model::JobInputs;
use crate::proto_views::{cancel_response, case_summary, job_event, job_response, job_summary};

/// How long CancelJob waits for the job to end before answering with its state.
const CANCEL_ANSWER_WAIT: Duration = Duration::from_secs(5);

/// Both services over one [`Coordinator`].
#[derive(Clone)]
pub struct CoordinatorService {
    coordinator: Coordinator,
}

impl CoordinatorService {
    pub fn new(coordinator: Coordinator) -> CoordinatorService {
        CoordinatorService { coordinator }
    }
}

#[tonic::async_trait]
impl CoordinatorRpc for CoordinatorService {
    async fn register_worker(
        &self,
        request: Request<RegisterWorkerRequest>,
    ) -> Result<Response<RegisterWorkerResponse>, Status> {
        let Some(worker) = request.into_inner().worker else {
            return Err(Error::new(ErrorCode::InvalidParam, "worker info missing")
                .with_retryable(false)
                .to_status());
        };
        check_protocol_version(worker.protocol_version).map_err(|error| error.to_status())?;
        if worker.worker_id.is_empty() || worker.address.is_empty() || worker.slots == 0 {
            return Err(Error::new(
                ErrorCode::InvalidParam,
                "worker_id, address and slots are required",
            )
            .with_retryable(false)
            .to_status());
        }
        if let Err(taken) = self.coordinator.registry().register(worker) {
            let message = format!(
                "worker id {} belongs to a live worker at {}; retry once it stops heartbeating, or choose another --worker-id",
                taken.worker_id, taken.live_address
            );
            return Err(Error::new(ErrorCode::Conflict, message)
                .with_retryable(true)
                .to_status());
        }
        Ok(Response::new(RegisterWorkerResponse {
            protocol_version: PROTOCOL_VERSION,
            heartbeat_interval_ms: self.coordinator.config().heartbeat_interval_ms,
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        let heartbeat = request.into_inner();
        let known = self.coordinator.registry().heartbeat(
            &heartbeat.worker_id,
            heartbeat.free_slots,
            heartbeat.draining,
        );
        Ok(Response::new(HeartbeatResponse { known }))
    }

    async fn deregister_worker(
        &self,
        request: Request<DeregisterWorkerRequest>,
    ) -> Result<Response<DeregisterWorkerResponse>, Status> {
        let request = request.into_inner();
        self.coordinator
            .registry()
            .deregister(&request.worker_id, &request.reason);
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
        let trace_id = trace_context::trace_id_of(request.metadata()).unwrap_or_default();
        let request = request.into_inner();
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
                },
            )
            .await?;
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
        let request = request.into_inner();
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
        let view = self.coordinator.get(&request.into_inner().job_id).await?;
        Ok(Response::new(job_response(view)))
    }

    async fn list_jobs(
        &self,
        request: Request<ListJobsRequest>,
    ) -> Result<Response<ListJobsResponse>, Status> {
        let limit = match request.into_inner().limit {
            0 => 100,
            limit => limit.min(1000),
        } as usize;
        let jobs = self.coordinator.list_with_counts(limit).await?;
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
        let request = request.into_inner();
        let requested = self
            .coordinator
            .cancel(&request.job_id, &request.reason)
            .await?;
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
        let request = request.into_inner();
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
        _request: Request<ListCasesRequest>,
    ) -> Result<Response<ListCasesResponse>, Status> {
        let cases = self.coordinator.cases().await?;
        Ok(Response::new(ListCasesResponse {
            cases: cases.into_iter().map(case_summary).collect(),
        }))
    }

    async fn get_case(
        &self,
        request: Request<GetCaseRequest>,
    ) -> Result<Response<GetCaseResponse>, Status> {
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
    let authenticate = RequireToken::new(coordinator.config().common.token.clone());
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
