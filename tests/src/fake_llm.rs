//! A fake OpenAI-compatible (and Anthropic-style) model server for tests and
//! benchmarks: real HTTP on 127.0.0.1, replies taken from a script in order,
//! then a fallback reply for every further request. It records every request
//! body and its headers.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// a completion whose content is this JSON, serialized
    Json(Value),
    /// a completion whose content is this text (e.g. garbage)
    Text(String),
    /// an HTTP error with a small JSON body
    Status(u16),
    /// an HTTP error with a `Retry-After` header (seconds)
    StatusRetryAfter(u16, u64),
    /// the reply after a pause
    Delay(Duration, Box<Reply>),
    /// the reply once the gate is opened (never, if it is not)
    Held(Gate, Box<Reply>),
    /// a completion with this content and no `usage`
    NoUsage(String),
}

/// What a [`Reply::Held`] waits for: the test opens it (e.g. once the job it
/// watches has reached a point), and every reply held by it is sent.
#[derive(Debug, Clone)]
pub struct Gate(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Gate {
    fn default() -> Gate {
        Gate(Arc::new(tokio::sync::watch::Sender::new(false)))
    }
}

impl Gate {
    /// Lets every reply held by the gate go (those held later go at once).
    pub fn open(&self) {
        self.0.send_replace(true);
    }

    async fn opened(&self) {
        let mut open = self.0.subscribe();
        // the sender lives in `self`: the wait ends only when the gate opens
        if open.wait_for(|open| *open).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

struct Script {
    replies: VecDeque<Reply>,
    fallback: Reply,
    requests: Vec<Value>,
    headers: Vec<HashMap<String, String>>,
}

type Shared = Arc<Mutex<Script>>;

/// A running fake server; stops serving when dropped (a server of
/// [`FakeLlm::start_blocking`] also ends its thread and runtime).
pub struct FakeLlm {
    address: std::net::SocketAddr,
    script: Shared,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeLlm {
    /// Starts the server on the current tokio runtime: OpenAI-style
    /// `POST /v1/chat/completions` and Anthropic-style `POST /v1/messages`, each
    /// answered in its API's shape. Replies come from `script` in order, then
    /// `fallback` for every further request.
    pub async fn start(script: Vec<Reply>, fallback: Reply) -> FakeLlm {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let (shared, stop, serving) = serve(listener, script, fallback);
        tokio::spawn(serving.0);
        FakeLlm {
            address: serving.1,
            script: shared,
            stop: Some(stop),
            thread: None,
        }
    }

    /// As [`FakeLlm::start`], on a thread of its own with its own runtime (for
    /// tests without a runtime, e.g. ones that run `centroid` as a child process).
    pub fn start_blocking(script: Vec<Reply>, fallback: Reply) -> FakeLlm {
        let (ready_sender, ready) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the fake server");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind 127.0.0.1:0");
                let (shared, stop, serving) = serve(listener, script, fallback);
                ready_sender
                    .send((serving.1, shared, stop))
                    .expect("the test waits");
                serving.0.await;
            });
        });
        let (address, script, stop) = ready.recv().expect("the fake server starts");
        FakeLlm {
            address,
            script,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Every request body received, in order (those answered with errors too);
    /// a body that is not JSON is kept as a JSON string.
    pub fn requests(&self) -> Vec<Value> {
        self.script.lock().expect("script lock").requests.clone()
    }

    /// The headers of every request (lower-case names), in order.
    pub fn headers(&self) -> Vec<HashMap<String, String>> {
        self.script.lock().expect("script lock").headers.clone()
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

type Serving = (
    std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    std::net::SocketAddr,
);

fn serve(
    listener: tokio::net::TcpListener,
    script: Vec<Reply>,
    fallback: Reply,
) -> (Shared, oneshot::Sender<()>, Serving) {
    let shared: Shared = Arc::new(Mutex::new(Script {
        replies: script.into(),
        fallback,
        requests: Vec::new(),
        headers: Vec::new(),
    }));
    let address = listener.local_addr().expect("a bound address");
    let app = Router::new()
        .route("/v1/chat/completions", post(answer))
        .route("/v1/messages", post(answer))
        .with_state(shared.clone());
    let (stop, stopped) = oneshot::channel::<()>();
    // not a graceful shutdown: a stopped fake must not wait for a delayed reply
    let serving = Box::pin(async move {
        tokio::select! {
            _ = axum::serve(listener, app).into_future() => {}
            _ = stopped => {}
        }
    });
    (shared, stop, (serving, address))
}

async fn answer(
    State(script): State<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> Response {
    let reply = {
        let mut script = script.lock().expect("script lock");
        script
            .requests
            .push(serde_json::from_str(&body).unwrap_or(Value::String(body)));
        script.headers.push(
            headers
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_ascii_lowercase(),
                        value.to_str().unwrap_or_default().to_string(),
                    )
                })
                .collect(),
        );
        match script.replies.pop_front() {
            Some(reply) => reply,
            None => script.fallback.clone(),
        }
    };
    let anthropic = uri.path().ends_with("/messages");
    respond(reply, anthropic).await
}

async fn respond(mut reply: Reply, anthropic: bool) -> Response {
    loop {
        reply = match reply {
            Reply::Delay(pause, inner) => {
                tokio::time::sleep(pause).await;
                *inner
            }
            Reply::Held(gate, inner) => {
                gate.opened().await;
                *inner
            }
            other => break reply_now(other, anthropic),
        };
    }
}

fn reply_now(reply: Reply, anthropic: bool) -> Response {
    let (content, usage) = match reply {
        Reply::Json(value) => (value.to_string(), true),
        Reply::Text(text) => (text, true),
        Reply::NoUsage(text) => (text, false),
        Reply::Status(status) => return error(status, None),
        Reply::StatusRetryAfter(status, seconds) => return error(status, Some(seconds)),
        Reply::Delay(..) | Reply::Held(..) => unreachable!("unwrapped above"),
    };
    let body = if anthropic {
        let mut body = json!({"type": "message", "role": "assistant",
                              "content": [{"type": "text", "text": content}]});
        if usage {
            body["usage"] = json!({"input_tokens": 100, "output_tokens": 20});
        }
        body
    } else {
        let mut body = json!({"object": "chat.completion", "model": "fake-model",
                              "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": content}}]});
        if usage {
            body["usage"] =
                json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120});
        }
        body
    };
    (StatusCode::OK, axum::Json(body)).into_response()
}

fn error(status: u16, retry_after: Option<u64>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body =
        axum::Json(json!({"error": {"message": "scripted failure", "code": status.as_u16()}}));
    match retry_after {
        Some(seconds) => (status, [("retry-after", seconds.to_string())], body).into_response(),
        None => (status, body).into_response(),
    }
}
