//! Who may do what on the coordinator's services (issue 29): the caller of a
//! request (the [`Principal`] the authenticating interceptor put in its
//! extensions), the checks of the Jobs and Coordinator services, PERMISSION_DENIED
//! as a structured error, and the audit log (tracing target [`AUDIT_TARGET`]).
//!
//! A job belongs to its submitter: users see, watch, fetch from and cancel their
//! own jobs, admins every job (and the records written before jobs had owners);
//! only workers and admins register, heartbeat and deregister workers; a worker
//! submits nothing; the long-term memory is the admins'.

use centroid_proto::{Error, ErrorCode};
use centroid_runtime::Principal;
use tonic::{Request, Status};

use crate::model::JobRecord;

/// The tracing target of the audit log.
pub const AUDIT_TARGET: &str = "centroid::audit";

/// What an audited action is about.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    Job(&'a str),
    Worker(&'a str),
    /// the farm as a whole (a listing, the memory)
    Farm,
}

/// The caller of `request`. Every service is served behind the interceptor, which
/// always names one; a request without is refused (never served as anyone).
pub fn caller<T>(request: &Request<T>) -> Result<Principal, Status> {
    request
        .extensions()
        .get::<Principal>()
        .cloned()
        .ok_or_else(|| {
            Error::new(
                ErrorCode::Unauthenticated,
                "the caller of this request is not identified",
            )
            .with_retryable(false)
            .to_status()
        })
}

/// One line of the audit log: who did what to which job or worker, and how it ended.
pub fn audit(principal: &Principal, action: &str, subject: Subject<'_>, outcome: &str) {
    let name = &*principal.name;
    let role = principal.role.name();
    match subject {
        Subject::Job(job_id) => tracing::info!(
            target: AUDIT_TARGET, principal = name, role, action, job_id, outcome, "audit"
        ),
        Subject::Worker(worker_id) => tracing::info!(
            target: AUDIT_TARGET, principal = name, role, action, worker_id, outcome, "audit"
        ),
        Subject::Farm => {
            tracing::info!(target: AUDIT_TARGET, principal = name, role, action, outcome, "audit")
        }
    }
}

/// PERMISSION_DENIED for `action` on `subject`, logged as a refusal.
pub fn refuse(principal: &Principal, action: &str, subject: Subject<'_>, why: &str) -> Status {
    audit(principal, action, subject, "denied");
    let mut details = serde_json::json!({
        "principal": &*principal.name,
        "role": principal.role.name(),
        "action": action,
    });
    let target = match subject {
        Subject::Job(job_id) => {
            details["job_id"] = job_id.into();
            format!(" job {job_id}")
        }
        Subject::Worker(worker_id) => {
            details["worker_id"] = worker_id.into();
            format!(" worker {worker_id}")
        }
        Subject::Farm => String::new(),
    };
    Error::new(
        ErrorCode::PermissionDenied,
        format!(
            "{} ({}) may not {action}{target}: {why}",
            principal.name,
            principal.role.name()
        ),
    )
    .with_retryable(false)
    .with_details(details)
    .to_status()
}

/// Whether `principal` may `action` on `job` (its own, or any for an admin).
pub fn check_job(principal: &Principal, action: &str, job: &JobRecord) -> Result<(), Status> {
    if principal.may_access_job_of(job.owner.as_deref()) {
        return Ok(());
    }
    let why = match job.owner {
        Some(_) => "the job belongs to another principal",
        None => "the job has no recorded owner (admins only)",
    };
    Err(refuse(principal, action, Subject::Job(&job.job_id), why))
}

/// Whether `principal` may submit jobs (admins and users).
pub fn check_submitter(principal: &Principal) -> Result<(), Status> {
    match principal.may_submit() {
        true => Ok(()),
        false => Err(refuse(
            principal,
            "submit",
            Subject::Farm,
            "workers do not submit jobs",
        )),
    }
}

/// Whether `principal` may `action` (register, heartbeat, deregister) a worker.
pub fn check_worker(principal: &Principal, action: &str, worker_id: &str) -> Result<(), Status> {
    match principal.may_serve_as_worker() {
        true => Ok(()),
        false => Err(refuse(
            principal,
            action,
            Subject::Worker(worker_id),
            "only worker principals and admins manage workers",
        )),
    }
}

/// Whether `principal` is an admin (for what concerns the whole farm's data).
pub fn check_admin(principal: &Principal, action: &str) -> Result<(), Status> {
    match principal.is_admin() {
        true => Ok(()),
        false => Err(refuse(principal, action, Subject::Farm, "admins only")),
    }
}

#[cfg(test)]
mod tests {
    use centroid_runtime::Role;

    use super::*;
    use crate::model::JobOptions;

    fn principal(name: &str, role: Role) -> Principal {
        Principal {
            name: name.into(),
            role,
        }
    }

    fn job_of(owner: Option<&str>) -> JobRecord {
        let mut job = JobRecord::new("j1".into(), "j".into(), JobOptions::default(), 0);
        job.owner = owner.map(str::to_string);
        job
    }

    #[test]
    fn a_refusal_is_permission_denied_with_structured_details() {
        let alice = principal("alice", Role::User);
        assert!(check_job(&alice, "cancel", &job_of(Some("alice"))).is_ok());
        let status = check_job(&alice, "cancel", &job_of(Some("bob"))).unwrap_err();
        assert_eq!(status.code(), tonic::Code::PermissionDenied);
        let error = Error::from_status(&status);
        assert_eq!(error.error_code(), ErrorCode::PermissionDenied);
        assert!(!error.retryable);
        assert_eq!(error.details()["principal"], "alice");
        assert_eq!(error.details()["job_id"], "j1");
        assert!(!error.message.contains("bob"), "{}", error.message);
        assert!(check_job(&alice, "get", &job_of(None)).is_err());
        let admin = principal("root", Role::Admin);
        assert!(check_job(&admin, "get", &job_of(None)).is_ok());
        assert!(check_job(&admin, "get", &job_of(Some("bob"))).is_ok());
        let worker = principal("w", Role::Worker);
        assert!(check_submitter(&worker).is_err());
        assert!(check_worker(&worker, "register", "w1").is_ok());
        let status = check_worker(&alice, "register", "w1").unwrap_err();
        assert_eq!(
            Error::from_status(&status).details()["worker_id"],
            "w1",
            "{status:?}"
        );
        assert!(check_admin(&alice, "list cases").is_err());
    }

    #[test]
    fn a_request_without_a_caller_is_refused() {
        let status = caller(&Request::new(())).unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unauthenticated);
        let mut request = Request::new(());
        request.extensions_mut().insert(Principal::shared_token());
        assert_eq!(caller(&request).unwrap(), Principal::shared_token());
    }
}
