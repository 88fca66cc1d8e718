//! The CLI side of the coordinator's `Jobs` gRPC service: connect, submit, watch,
//! fetch. Failed calls come back with their structured error (code, message, details).

use std::time::Duration;

use anyhow::{Context, anyhow};
use centroid_proto::v1::jobs_client::JobsClient;
use centroid_proto::v1::{
    CancelJobRequest, CancelJobResponse, FetchArtifactRequest, GetJobRequest, GetJobResponse,
    JobEvent, ListJobsRequest, ListWorkersRequest, ListWorkersResponse, SubmitJobRequest,
    SubmitJobResponse, WatchJobRequest,
};
use centroid_runtime::{AttachToken, AuthChannel, BearerToken, Tls, tls, trace_context};
use centroid_schemas::{InputErrors, InputIssue};

/// Largest message the CLI accepts (artifacts come in chunks well below it).
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The coordinator refused the inputs (same issues as `centroid validate`).
    #[error("{0}")]
    InvalidInputs(InputErrors),
    #[error("{code}: {message}")]
    Rpc {
        code: String,
        message: String,
        retryable: bool,
    },
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

fn rpc_error(status: tonic::Status) -> ClientError {
    let error = centroid_proto::Error::from_status(&status);
    let details = error.details();
    if let Some(issues) = details
        .get("issues")
        .and_then(|issues| serde_json::from_value::<Vec<InputIssue>>(issues.clone()).ok())
        && !issues.is_empty()
    {
        return ClientError::InvalidInputs(InputErrors { issues });
    }
    ClientError::Rpc {
        code: error.error_code().wire_name().to_owned(),
        message: error.message,
        retryable: error.retryable,
    }
}

/// Where a farm's coordinator is, the token its calls need and their TLS.
#[derive(Debug, Clone)]
pub struct Farm {
    pub coordinator: String,
    pub token: Option<BearerToken>,
    /// `None` = plain TCP
    pub tls: Option<Tls>,
}

#[derive(Clone)]
pub struct Jobs {
    client: JobsClient<AuthChannel>,
}

impl Jobs {
    /// Connects to the farm's coordinator (`http://host:port`, `https://host:port` or
    /// `host:port`; over TLS when the farm has a TLS root).
    pub async fn connect(farm: &Farm) -> anyhow::Result<Jobs> {
        let address = farm.coordinator.as_str();
        let endpoint = tls::endpoint(farm.tls.as_ref(), address)
            .with_context(|| format!("coordinator address {address}"))?
            .connect_timeout(Duration::from_secs(10))
            .http2_keep_alive_interval(Duration::from_secs(15));
        let channel = endpoint
            .connect()
            .await
            .with_context(|| format!("cannot reach the coordinator at {address}"))?;
        let client = JobsClient::with_interceptor(channel, AttachToken::new(farm.token.clone()))
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        Ok(Jobs { client })
    }

    /// Submits a job with a fresh W3C trace id (`traceparent`): the job keeps it,
    /// and every process's log lines about the job carry it.
    pub async fn submit(
        &self,
        request: SubmitJobRequest,
    ) -> Result<SubmitJobResponse, ClientError> {
        let trace_id = trace_context::new_trace_id();
        let mut request = tonic::Request::new(request);
        trace_context::attach(request.metadata_mut(), &trace_id);
        tracing::info!(trace_id = %trace_id, "submitting the job");
        self.client
            .clone()
            .submit_job(request)
            .await
            .map(tonic::Response::into_inner)
            .map_err(rpc_error)
    }

    pub async fn get(&self, job_id: &str) -> Result<GetJobResponse, ClientError> {
        self.client
            .clone()
            .get_job(GetJobRequest {
                job_id: job_id.to_owned(),
            })
            .await
            .map(tonic::Response::into_inner)
            .map_err(rpc_error)
    }

    pub async fn list(&self) -> Result<Vec<centroid_proto::v1::JobSummary>, ClientError> {
        let response = self
            .client
            .clone()
            .list_jobs(ListJobsRequest { limit: 0 })
            .await
            .map_err(rpc_error)?;
        Ok(response.into_inner().jobs)
    }

    pub async fn cancel(
        &self,
        job_id: &str,
        reason: &str,
    ) -> Result<CancelJobResponse, ClientError> {
        self.client
            .clone()
            .cancel_job(CancelJobRequest {
                job_id: job_id.to_owned(),
                reason: reason.to_owned(),
            })
            .await
            .map(tonic::Response::into_inner)
            .map_err(rpc_error)
    }

    /// The farm's long-term memory: its cases.
    pub async fn cases(&self) -> Result<Vec<centroid_proto::v1::CaseSummary>, ClientError> {
        let response = self
            .client
            .clone()
            .list_cases(centroid_proto::v1::ListCasesRequest {})
            .await
            .map_err(rpc_error)?;
        Ok(response.into_inner().cases)
    }

    /// One case of the farm's memory, as JSON.
    pub async fn case(&self, job_id: &str) -> Result<String, ClientError> {
        let response = self
            .client
            .clone()
            .get_case(centroid_proto::v1::GetCaseRequest {
                job_id: job_id.to_owned(),
            })
            .await
            .map_err(rpc_error)?;
        Ok(response.into_inner().case_json)
    }

    /// Removes a case from the farm's memory.
    pub async fn forget_case(&self, job_id: &str) -> Result<(), ClientError> {
        self.client
            .clone()
            .forget_case(centroid_proto::v1::ForgetCaseRequest {
                job_id: job_id.to_owned(),
            })
            .await
            .map(|_| ())
            .map_err(rpc_error)
    }

    pub async fn workers(&self) -> Result<ListWorkersResponse, ClientError> {
        self.client
            .clone()
            .list_workers(ListWorkersRequest {})
            .await
            .map(tonic::Response::into_inner)
            .map_err(rpc_error)
    }

    /// Calls `on_event` for every event of the job (past ones first) until its last
    /// event. A dropped stream is resumed after the last cursor seen.
    pub async fn watch(
        &self,
        job_id: &str,
        mut on_event: impl FnMut(&JobEvent),
    ) -> Result<(), ClientError> {
        let mut cursor = String::new();
        let mut reconnects = 0u32;
        loop {
            let request = WatchJobRequest {
                job_id: job_id.to_owned(),
                after_cursor: cursor.clone(),
            };
            let mut stream = match self.client.clone().watch_job(request).await {
                Ok(response) => response.into_inner(),
                Err(status) if status.code() == tonic::Code::Unavailable && reconnects < 30 => {
                    reconnects += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                Err(status) => return Err(rpc_error(status)),
            };
            loop {
                match stream.message().await {
                    Ok(Some(event)) => {
                        reconnects = 0;
                        cursor = event.cursor.clone();
                        on_event(&event);
                        if event.last {
                            return Ok(());
                        }
                    }
                    Ok(None) => break,
                    Err(status) if reconnects < 30 => {
                        tracing::warn!(%status, "event stream interrupted; resuming");
                        reconnects += 1;
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        break;
                    }
                    Err(status) => return Err(rpc_error(status)),
                }
            }
        }
    }

    /// Downloads an artifact whole (empty `candidate_id` = the best candidate).
    pub async fn fetch(
        &self,
        job_id: &str,
        candidate_id: &str,
        name: &str,
    ) -> Result<Vec<u8>, ClientError> {
        let request = FetchArtifactRequest {
            job_id: job_id.to_owned(),
            candidate_id: candidate_id.to_owned(),
            name: name.to_owned(),
        };
        let mut stream = self
            .client
            .clone()
            .fetch_artifact(request)
            .await
            .map_err(rpc_error)?
            .into_inner();
        let mut content = Vec::new();
        while let Some(chunk) = stream.message().await.map_err(rpc_error)? {
            if chunk.offset != content.len() as u64 {
                return Err(ClientError::Other(anyhow!(
                    "artifact {name}: chunk at offset {} after {} bytes",
                    chunk.offset,
                    content.len()
                )));
            }
            content.extend_from_slice(&chunk.content);
            if chunk.total_size > 0 && content.len() as u64 > chunk.total_size {
                return Err(ClientError::Other(anyhow!(
                    "artifact {name}: more bytes than announced"
                )));
            }
        }
        Ok(content)
    }
}
