"""A third-party Python client of the coordinator's gRPC API (issue 17).

The client is generated at test time from ``proto/centroid/v1/*.proto`` with
``grpcio-tools`` into a pytest temporary directory (generated code is never committed),
and talks to a REAL ``centroid-coordinator`` (in-process store: ``--redis memory``) and a
REAL ``centroid-worker`` started as child processes on free loopback ports, the way the
Rust integration tests (``tests/src/lib.rs``) start them: port 0, a ready file holding
the bound address, ``--python``/``--skills-dir`` from ``CENTROID_PYTHON`` /
``CENTROID_SKILLS_DIR`` (default: this checkout's ``.venv`` and ``worker/skills``), and
the farm's bearer token (``--token-file``), which the client sends as ``authorization``
metadata through a client interceptor.

The binaries are those of ``target/debug`` (``cargo build -p centroid-coordinator
--bin centroid-coordinator`` and ``cargo build -p centroid-worker --bin centroid-worker``);
a missing one fails the tests, saying how to build it (never a skip).
"""

from __future__ import annotations

import collections
import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

SKILLS_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = SKILLS_DIR.parents[1]
PROTO_ROOT = REPO_ROOT / "proto"
TARGET_DIR = REPO_ROOT / "target" / "debug"
OTA5 = REPO_ROOT / "examples" / "ota5"
#: the Rust tests' coordinator flags: a silent worker is noticed within 1.5 s
COORDINATOR_FLAGS = [
    "--heartbeat-interval-ms", "200",
    "--heartbeat-timeout-ms", "1500",
    "--lease-timeout-ms", "2500",
]
WORKER_ID = "py-grpc-w1"
#: the farm's shared secret (written to a token file for the coordinator and the worker)
TOKEN = "py-client-token-5c2e9a7d"
WORKER_SLOTS = 2
#: how long a process may take to write its ready file / a worker to register
START_TIMEOUT_S = 60.0
#: deadline of a whole WatchJob stream of the OTA job
JOB_TIMEOUT_S = 180.0
GDS_HEADER = b"\x00\x06\x00\x02"
#: the kinds whose events carry no data (`data_json` is then the empty string)
KINDS_WITHOUT_DATA = {"JOB_EVENT_KIND_WAITING_FOR_WORKERS",
                      "JOB_EVENT_KIND_CANDIDATE_DEAD_LETTERED"}


def binary(name: str) -> Path:
    """A binary of this checkout's target/debug; a missing one fails the test."""
    path = TARGET_DIR / name
    if not path.is_file():
        package = name.removeprefix("centroid-") if name != "centroid" else "cli"
        pytest.fail(f"{path} is missing: build it with "
                    f"`cargo build -p centroid-{package} --bin {name}`", pytrace=False)
    return path


def python() -> Path:
    configured = os.environ.get("CENTROID_PYTHON")
    return Path(configured) if configured else REPO_ROOT / ".venv" / "bin" / "python"


def skills_dir() -> Path:
    configured = os.environ.get("CENTROID_SKILLS_DIR")
    return Path(configured) if configured else SKILLS_DIR


def child_environment() -> dict[str, str]:
    """The environment without any CENTROID_* setting (a token, a listen address, a
    config file of the caller would change what is tested), logs at info."""
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith("CENTROID_")}
    environment["CENTROID_LOG"] = "info"
    return environment


def tail(path: Path, lines: int = 60) -> str:
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


# ---------------------------------------------------------------------------
# the generated client
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Api:
    """The generated modules: messages (`pb`), stubs (`rpc`), the structured error (`errors`)."""

    pb: ModuleType
    rpc: ModuleType
    errors: ModuleType

    def kind_name(self, kind: int) -> str:
        name: str = self.pb.JobEventKind.Name(kind)
        return name


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    out = tmp_path_factory.mktemp("grpc_client")
    protos = sorted(str(path.relative_to(PROTO_ROOT))
                    for path in (PROTO_ROOT / "centroid" / "v1").glob("*.proto"))
    assert protos, f"no .proto files under {PROTO_ROOT}"
    generated = subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_ROOT}",
         f"--python_out={out}", f"--grpc_python_out={out}", f"--pyi_out={out}", *protos],
        capture_output=True, text=True, check=False)
    assert generated.returncode == 0, f"protoc failed:\n{generated.stderr}"
    assert (out / "centroid" / "v1" / "coordinator_pb2_grpc.py").is_file(), sorted(out.rglob("*"))
    sys.path.insert(0, str(out))
    try:
        yield Api(pb=importlib.import_module("centroid.v1.coordinator_pb2"),
                  rpc=importlib.import_module("centroid.v1.coordinator_pb2_grpc"),
                  errors=importlib.import_module("centroid.v1.errors_pb2"))
    finally:
        sys.path.remove(str(out))
        for name in [name for name in sys.modules if name == "centroid" or
                     name.startswith("centroid.")]:
            del sys.modules[name]


# ---------------------------------------------------------------------------
# the bearer token, sent as metadata by a standard client interceptor
# ---------------------------------------------------------------------------

class _CallDetails(collections.namedtuple(
        "_CallDetails",
        ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")),
        grpc.ClientCallDetails):
    pass


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds ``authorization: Bearer <token>`` to every call."""

    def __init__(self, token: str) -> None:
        self.header = ("authorization", f"Bearer {token}")

    def _details(self, details: Any) -> _CallDetails:
        return _CallDetails(details.method, details.timeout,
                            [*(details.metadata or ()), self.header], details.credentials,
                            details.wait_for_ready, details.compression)

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)


def authorized_channel(address: str) -> grpc.Channel:
    return grpc.intercept_channel(grpc.insecure_channel(address), _BearerToken(TOKEN))


# ---------------------------------------------------------------------------
# the cluster: a coordinator and a worker, child processes of the test
# ---------------------------------------------------------------------------

@dataclass
class Cluster:
    dir: Path
    processes: list[tuple[str, subprocess.Popen[bytes], Path]] = field(default_factory=list)
    coordinator_address: str = ""

    def start(self, name: str, command: list[str]) -> str:
        """Starts a process writing its bound address into a ready file; returns the address."""
        ready = self.dir / f"{name}.ready"
        log = self.dir / f"{name}.log"
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                [*command, "--ready-file", str(ready)], cwd=self.dir, env=child_environment(),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
        self.processes.append((name, process, log))
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if ready.exists() and (address := ready.read_text().strip()):
                return address
            if process.poll() is not None:
                pytest.fail(f"{name} exited ({process.returncode}) before serving:\n{tail(log)}",
                            pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not serve within {START_TIMEOUT_S} s:\n{tail(log)}",
                            pytrace=False)
            time.sleep(0.02)

    def logs(self) -> str:
        return "\n".join(f"--- {name} ---\n{tail(log)}" for name, _, log in self.processes)

    def stop(self) -> None:
        """SIGKILL (the worker's KLayout processes die with it: PR_SET_PDEATHSIG)."""
        for _, process, _ in reversed(self.processes):
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, api: Api) -> Iterator[Cluster]:
    coordinator, worker = binary("centroid-coordinator"), binary("centroid-worker")
    running = Cluster(dir=tmp_path_factory.mktemp("cluster"))
    token_file = running.dir / "token"
    token_file.write_text(TOKEN + "\n")
    token = ["--token-file", str(token_file)]
    try:
        running.coordinator_address = running.start(
            "coordinator",
            [str(coordinator), "--listen", "127.0.0.1:0", "--redis", "memory", *token,
             *COORDINATOR_FLAGS])
        running.start("worker", [
            str(worker), "--listen", "127.0.0.1:0", *token,
            "--coordinator", f"http://{running.coordinator_address}",
            "--worker-id", WORKER_ID, "--slots", str(WORKER_SLOTS),
            "--heartbeat-interval-ms", "200", "--drain-grace-ms", "2000",
            "--memory-limit-mb", "0",
            "--python", str(python()), "--skills-dir", str(skills_dir()),
        ])
        wait_for_worker(running, api)
        yield running
    finally:
        running.stop()


def wait_for_worker(cluster: Cluster, api: Api) -> None:
    with authorized_channel(cluster.coordinator_address) as channel:
        jobs = api.rpc.JobsStub(channel)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            listed = jobs.ListWorkers(api.pb.ListWorkersRequest(), timeout=5)
            if any(status.alive and status.info.worker_id == WORKER_ID
                   for status in listed.workers):
                return
            time.sleep(0.05)
    pytest.fail(f"worker {WORKER_ID} did not register:\n{cluster.logs()}", pytrace=False)


@pytest.fixture
def jobs(cluster: Cluster, api: Api) -> Iterator[Any]:
    """A Jobs stub on a fresh channel to the coordinator, carrying the token."""
    with authorized_channel(cluster.coordinator_address) as channel:
        yield api.rpc.JobsStub(channel)


def submit_ota5(api: Api, jobs: Any, name: str, options: Any) -> str:
    request = api.pb.SubmitJobRequest(
        netlist_json=(OTA5 / "netlist.json").read_text(),
        drc_rules_json=(OTA5 / "drc_rules.json").read_text(),
        objectives_json=(OTA5 / "objectives.json").read_text(),
        options=options,
        name=name,
    )
    job_id: str = jobs.SubmitJob(request, timeout=30).job_id
    assert job_id, "SubmitJob answered no job id"
    return job_id


# ---------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------

def test_ota5_job_is_submitted_watched_and_its_best_gds_fetched(
        api: Api, cluster: Cluster, jobs: Any) -> None:
    options = api.pb.JobOptions(candidates_per_iteration=2, max_iterations=1, seed=42,
                                candidate_deadline_ms=120_000)
    job_id = submit_ota5(api, jobs, "ota5-python-client", options)

    events = list(jobs.WatchJob(api.pb.WatchJobRequest(job_id=job_id), timeout=JOB_TIMEOUT_S))
    kinds = [api.kind_name(event.kind) for event in events]
    assert events, "WatchJob ended without an event"
    assert {"JOB_EVENT_KIND_STATE_CHANGED", "JOB_EVENT_KIND_COMPLETED"} <= set(kinds), \
        f"{kinds}\n{cluster.logs()}"
    assert kinds[-1] == "JOB_EVENT_KIND_COMPLETED", kinds
    assert [event.last for event in events] == [False] * (len(events) - 1) + [True], \
        "only the final event is marked last"
    assert all(event.job_id == job_id for event in events)
    assert len({event.cursor for event in events}) == len(events), "cursors are distinct"
    for event, kind in zip(events, kinds, strict=True):
        if kind in KINDS_WITHOUT_DATA and event.data_json == "":
            continue
        data = json.loads(event.data_json)
        assert isinstance(data, dict), f"{kind}: data_json is not a JSON object: {data!r}"
    states = [json.loads(event.data_json).get("to") for event, kind in zip(events, kinds,
                                                                            strict=True)
              if kind == "JOB_EVENT_KIND_STATE_CHANGED"]
    assert {"parsing", "planning", "executing", "evaluating", "completed"} <= set(states), states
    completed = json.loads(events[-1].data_json)
    assert completed["outcome"] == "completed", completed

    view = jobs.GetJob(api.pb.GetJobRequest(job_id=job_id), timeout=30)
    assert view.job.outcome == "completed", f"{view.job}\n{cluster.logs()}"
    assert view.job.state == "done", view.job
    assert view.job.job_state == api.pb.JOB_STATE_DONE, view.job
    assert view.job.job_outcome == api.pb.JOB_OUTCOME_COMPLETED, view.job
    assert events[-1].job_state == api.pb.JOB_STATE_DONE, events[-1]
    best_id = view.job.best_candidate_id
    assert best_id, view.job
    assert best_id == completed["best_candidate_id"]
    best = [candidate for candidate in view.candidates if candidate.candidate_id == best_id]
    assert len(best) == 1, [candidate.candidate_id for candidate in view.candidates]
    assert best[0].status == "finished", best[0]
    assert json.loads(best[0].evaluation_json)["score"] == pytest.approx(view.job.best_score)
    assert len(view.candidates) == 2, [candidate.candidate_id for candidate in view.candidates]
    assert json.loads(view.best_plan_json)["steps"], view.best_plan_json

    gds_refs = [artifact for artifact in view.artifacts
                if artifact.candidate_id == best_id and artifact.name.endswith(".gds")]
    assert len(gds_refs) == 1, list(view.artifacts)
    gds_ref = gds_refs[0]
    assert gds_ref.name == "layout.gds", gds_ref  # the planner's name for a routed TOP
    assert gds_ref.media_type == "application/x-gdsii", gds_ref
    chunks = list(jobs.FetchArtifact(
        api.pb.FetchArtifactRequest(job_id=job_id, candidate_id=best_id, name=gds_ref.name),
        timeout=30))
    content = b""
    for chunk in chunks:
        assert chunk.offset == len(content), "chunks arrive in order"
        assert chunk.name == gds_ref.name and chunk.total_size == gds_ref.size
        content += chunk.content
    assert len(content) == gds_ref.size > 100
    assert content[:4] == GDS_HEADER, f"not a GDSII HEADER record: {content[:4]!r}"


def test_a_job_of_slow_candidates_is_cancelled_and_its_watch_ends(
        api: Api, cluster: Cluster, jobs: Any) -> None:
    # 12 candidates sleeping 60 s each on 2 slots: the job cannot end by itself in time
    options = api.pb.JobOptions(candidates_per_iteration=12, max_iterations=1, seed=7,
                                candidate_deadline_ms=120_000, noop_plan=True, sleep_ms=60_000)
    job_id = submit_ota5(api, jobs, "slow-python-client", options)
    watch = jobs.WatchJob(api.pb.WatchJobRequest(job_id=job_id), timeout=60)
    kinds: list[str] = []
    for event in watch:
        kinds.append(api.kind_name(event.kind))
        if kinds[-1] == "JOB_EVENT_KIND_CANDIDATE_DISPATCHED":
            break
    assert kinds[-1:] == ["JOB_EVENT_KIND_CANDIDATE_DISPATCHED"], f"{kinds}\n{cluster.logs()}"

    started = time.monotonic()
    cancelled = jobs.CancelJob(api.pb.CancelJobRequest(job_id=job_id, reason="python client"),
                               timeout=30)
    assert (cancelled.state, cancelled.outcome) == ("done", "cancelled"), cancelled
    assert (cancelled.job_state, cancelled.job_outcome) == (
        api.pb.JOB_STATE_DONE, api.pb.JOB_OUTCOME_CANCELLED), cancelled
    assert time.monotonic() - started < 10, "the cancel took effect at once"

    rest = list(watch)  # the same stream: it ends after the job's final event
    kinds.extend(api.kind_name(event.kind) for event in rest)
    assert rest and rest[-1].last, kinds
    assert kinds[-1] == "JOB_EVENT_KIND_CANCELLED", kinds
    assert "JOB_EVENT_KIND_CANDIDATE_FINISHED" not in kinds, "no sleeping candidate finished"
    view = jobs.GetJob(api.pb.GetJobRequest(job_id=job_id), timeout=30)
    assert view.job.outcome == "cancelled", view.job
    assert {candidate.status for candidate in view.candidates} == {"abandoned"}, \
        [(candidate.candidate_id, candidate.status) for candidate in view.candidates]

    # cancelling again is a no-op, and a finished job is left as it is
    again = jobs.CancelJob(api.pb.CancelJobRequest(job_id=job_id), timeout=30)
    assert (again.state, again.outcome) == ("done", "cancelled"), again


def unknown_job_error(api: Api, jobs: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as raised:
        jobs.GetJob(api.pb.GetJobRequest(job_id="no-such-job"), timeout=30)
    return raised.value


def test_an_unknown_job_fails_with_not_found_and_a_structured_error(
        api: Api, jobs: Any) -> None:
    """The details are a standard ``google.rpc.Status`` (what
    ``grpc_status.rpc_status.from_call`` reads) holding a ``google.rpc.ErrorInfo``
    and the whole ``centroid.v1.Error``."""
    error: Any = unknown_job_error(api, jobs)
    assert error.code() == grpc.StatusCode.NOT_FOUND, error
    assert "no-such-job" in error.details(), error.details()
    status = rpc_status.from_call(error)
    assert status is not None, "no details attached"
    assert status.code == grpc.StatusCode.NOT_FOUND.value[0], status
    assert "no-such-job" in status.message, status

    info = error_details_pb2.ErrorInfo()
    structured = api.errors.Error()
    unpacked = {detail.type_url for detail in status.details}
    assert unpacked == {"type.googleapis.com/google.rpc.ErrorInfo",
                        "type.googleapis.com/centroid.v1.Error"}, unpacked
    for detail in status.details:
        if detail.Is(info.DESCRIPTOR):
            assert detail.Unpack(info)
        else:
            assert detail.Unpack(structured)
    assert (info.reason, info.domain) == ("NOT_FOUND", "centroid"), info
    assert info.metadata["retryable"] == "false", info
    assert structured.code == api.errors.ERROR_CODE_NOT_FOUND, structured
    assert not structured.retryable, structured
    assert "no-such-job" in structured.message, structured


def test_without_the_token_every_call_is_refused_saying_what_to_set(
        api: Api, cluster: Cluster) -> None:
    with grpc.insecure_channel(cluster.coordinator_address) as channel:
        anonymous = api.rpc.JobsStub(channel)
        for call, request in [(anonymous.ListJobs, api.pb.ListJobsRequest()),
                              (anonymous.GetJob, api.pb.GetJobRequest(job_id="x"))]:
            with pytest.raises(grpc.RpcError) as raised:
                call(request, timeout=30)
            error: Any = raised.value
            assert error.code() == grpc.StatusCode.UNAUTHENTICATED, error
            assert "CENTROID_TOKEN" in error.details(), error.details()


def test_a_w3c_traceparent_becomes_the_jobs_trace_id(api: Api, jobs: Any) -> None:
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    request = api.pb.SubmitJobRequest(
        netlist_json=(OTA5 / "netlist.json").read_text(),
        drc_rules_json=(OTA5 / "drc_rules.json").read_text(),
        objectives_json=(OTA5 / "objectives.json").read_text(),
        options=api.pb.JobOptions(candidates_per_iteration=1, max_iterations=1, noop_plan=True),
        name="traced",
    )
    job_id = jobs.SubmitJob(request, timeout=30,
                            metadata=[("traceparent", f"00-{trace_id}-b7ad6b7169203331-01")]).job_id
    view = jobs.GetJob(api.pb.GetJobRequest(job_id=job_id), timeout=30)
    assert view.job.trace_id == trace_id, view.job

