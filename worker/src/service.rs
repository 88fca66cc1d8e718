//! The tonic `Worker` service: the gRPC face of [`WorkerState`].

use std::sync::Arc;
use std::time::Duration;

use centroid_proto::v1::worker_server::Worker;
use centroid_proto::v1::{
    CancelCandidateRequest, CancelCandidateResponse, DrainRequest, DrainResponse, HealthRequest,
    HealthResponse, ListSkillsRequest, ListSkillsResponse, RunCandidateRequest,
    RunCandidateResponse, Skill,
};
use centroid_proto::{Error, ErrorCode};
use centroid_runtime::trace_context;
use tonic::{Request, Response, Status};

use crate::state::WorkerState;

/// The gRPC face of [`WorkerState`].
#[derive(Debug, Clone)]
pub struct WorkerService {
    state: Arc<WorkerState>,
}

impl WorkerService {
    pub fn new(state: Arc<WorkerState>) -> WorkerService {
        WorkerService { state }
    }
}

#[tonic::async_trait]
impl Worker for WorkerService {
    async fn run_candidate(
        &self,
        request: Request<RunCandidateRequest>,
    ) -> Result<Response<RunCandidateResponse>, Status> {
        let trace_id = trace_context::trace_id_of(request.metadata()).unwrap_or_default();
        self.state
            .run_candidate(request.into_inner(), trace_id)
            .await
            .map(Response::new)
            .map_err(|error| error.to_status())
    }

    async fn list_skills(
        &self,
        _request: Request<ListSkillsRequest>,
    ) -> Result<Response<ListSkillsResponse>, Status> {
        let catalog = self.state.catalog();
        Ok(Response::new(ListSkillsResponse {
            skills: catalog
                .describe()
                .into_iter()
                .map(|(name, description, input_schema)| Skill {
                    name,
                    description,
                    input_schema_json: input_schema.to_string(),
                })
                .collect(),
            klayout_version: catalog.klayout_version.clone(),
            skill_server_version: catalog.server_version.clone(),
        }))
    }

    async fn health(
        &self,
        _request: Request<HealthRequest>,
    ) -> Result<Response<HealthResponse>, Status> {
        Ok(Response::new(self.state.health()))
    }

    async fn drain(
        &self,
        request: Request<DrainRequest>,
    ) -> Result<Response<DrainResponse>, Status> {
        let grace = match request.into_inner().grace_ms {
            0 => self.state.default_drain_grace(),
            milliseconds => Duration::from_millis(milliseconds),
        };
        Ok(Response::new(self.state.drain(grace).await))
    }

    async fn cancel_candidate(
        &self,
        request: Request<CancelCandidateRequest>,
    ) -> Result<Response<CancelCandidateResponse>, Status> {
        let request = request.into_inner();
        if request.candidate_id.is_empty() {
            return Err(Error::new(ErrorCode::InvalidParam, "candidate_id is empty")
                .with_retryable(false)
                .to_status());
        }
        let found = self
            .state
            .cancel_candidate(&request.candidate_id, &request.reason);
        Ok(Response::new(CancelCandidateResponse { found }))
    }
}
