//! The LLM chat client against the fake model server over real HTTP on loopback:
//! answers and usage, retries within one deadline, the request shapes of both
//! APIs; and the token counting that keeps prompts within budget.

use std::time::{Duration, Instant};

use centroid_coordinator::llm::tokens::{PromptPart, count_tokens, fit_prompt, truncate_to_tokens};
use centroid_coordinator::llm::{ChatMessage, LlmClient, LlmError, LlmSettings, Provider};
use centroid_tests::fake_llm::{FakeLlm, Reply};
use serde_json::json;

fn settings(fake: &FakeLlm, api_key: &str) -> LlmSettings {
    LlmSettings {
        base_url: fake.base_url(),
        model: "fake-model".into(),
        api_key: api_key.into(),
        timeout_ms: 10_000,
        ..LlmSettings::default()
    }
}

fn conversation() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You plan analog layouts."),
        ChatMessage::system("Answer with one JSON object."),
        ChatMessage::user("Which pattern for M1/M2?"),
        ChatMessage::assistant("{\"pattern\": \"ABAB\"}"),
        ChatMessage::user("And with dummies?"),
    ]
}

async fn ask(settings: LlmSettings) -> Result<centroid_coordinator::llm::Completion, LlmError> {
    let client = LlmClient::new(settings).expect("configured");
    client.complete(&conversation()).await
}

#[tokio::test]
async fn a_good_reply_gives_its_content_and_usage() {
    let fake = FakeLlm::start(vec![], Reply::Json(json!({"pattern": "ABBA"}))).await;
    let completion = ask(settings(&fake, "")).await.expect("an answer");
    let content: serde_json::Value = serde_json::from_str(&completion.content).expect("JSON");
    assert_eq!(content, json!({"pattern": "ABBA"}));
    assert_eq!(
        (completion.prompt_tokens, completion.completion_tokens),
        (100, 20)
    );
    assert!(!completion.usage_estimated);
    assert_eq!(completion.attempts, 1);
    let request = &fake.requests()[0];
    assert_eq!(request["model"], "fake-model");
    assert_eq!(request["max_tokens"], 2048);
    assert_eq!(request["temperature"], 0.2);
    assert_eq!(request["messages"].as_array().map(Vec::len), Some(5));
    assert_eq!(request["messages"][0]["role"], "system");
    assert_eq!(request["messages"][3]["role"], "assistant");
    assert_eq!(request["messages"][4]["content"], "And with dummies?");
}

#[tokio::test]
async fn without_usage_the_tokens_are_counted_here() {
    let fake = FakeLlm::start(vec![], Reply::NoUsage("hello world".into())).await;
    let completion = ask(settings(&fake, "")).await.expect("an answer");
    assert!(completion.usage_estimated);
    assert_eq!(completion.content, "hello world");
    assert_eq!(completion.completion_tokens, 2);
    let prompt: usize = conversation()
        .iter()
        .map(|message| count_tokens(&message.content))
        .sum();
    assert!(
        completion.prompt_tokens as usize >= prompt,
        "{completion:?}"
    );
}

#[tokio::test]
async fn a_server_error_is_retried() {
    let fake = FakeLlm::start(vec![Reply::Status(500)], Reply::Json(json!({"ok": true}))).await;
    let completion = ask(settings(&fake, "")).await.expect("an answer");
    assert_eq!(completion.attempts, 2);
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn retries_end_after_the_configured_count() {
    let fake = FakeLlm::start(vec![], Reply::Status(503)).await;
    let error = ask(settings(&fake, "")).await.expect_err("always 503");
    assert_eq!(error.reason(), "http_503");
    assert!(matches!(error, LlmError::Http { status: 503, ref body } if body.contains("scripted")));
    assert_eq!(fake.requests().len(), 3, "the first attempt and 2 retries");
}

#[tokio::test]
async fn a_429_waits_for_retry_after() {
    let fake = FakeLlm::start(
        vec![Reply::StatusRetryAfter(429, 1)],
        Reply::Json(json!({"ok": true})),
    )
    .await;
    let started = Instant::now();
    let completion = ask(settings(&fake, "")).await.expect("an answer");
    assert_eq!(completion.attempts, 2);
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited {:?}, not the server's Retry-After",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_client_error_fails_at_once() {
    let fake = FakeLlm::start(vec![Reply::Status(400)], Reply::Json(json!({"ok": true}))).await;
    let error = ask(settings(&fake, "")).await.expect_err("400 is final");
    assert!(
        matches!(error, LlmError::Http { status: 400, .. }),
        "{error:?}"
    );
    assert_eq!(error.reason(), "http_400");
    assert_eq!(fake.requests().len(), 1, "no retry of a 400");
}

#[tokio::test]
async fn a_slow_server_times_out_within_the_deadline() {
    let slow = Reply::Delay(Duration::from_secs(5), Box::new(Reply::Json(json!({}))));
    let fake = FakeLlm::start(vec![], slow).await;
    let started = Instant::now();
    let error = ask(LlmSettings {
        timeout_ms: 500,
        ..settings(&fake, "")
    })
    .await
    .expect_err("too slow");
    assert_eq!(error, LlmError::Timeout { after_ms: 500 });
    assert_eq!(error.reason(), "timeout");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "returned after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let settings = LlmSettings {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        model: "fake-model".into(),
        timeout_ms: 5_000,
        ..LlmSettings::default()
    };
    let error = ask(settings).await.expect_err("nobody listens");
    assert_eq!(error.reason(), "transport", "{error:?}");
}

#[tokio::test]
async fn an_empty_or_misshapen_answer_is_a_bad_response() {
    let fake = FakeLlm::start(vec![], Reply::Text(String::new())).await;
    let error = ask(settings(&fake, "")).await.expect_err("empty content");
    assert_eq!(error.reason(), "bad_response", "{error:?}");
    assert_eq!(fake.requests().len(), 1, "not retried");
}

#[tokio::test]
async fn json_mode_asks_for_a_json_object_only_when_on() {
    let fake = FakeLlm::start(vec![], Reply::Json(json!({}))).await;
    ask(settings(&fake, "")).await.expect("json mode on");
    ask(LlmSettings {
        json_mode: false,
        ..settings(&fake, "")
    })
    .await
    .expect("json mode off");
    let requests = fake.requests();
    assert_eq!(
        requests[0]["response_format"],
        json!({"type": "json_object"})
    );
    assert!(
        requests[1].get("response_format").is_none(),
        "{}",
        requests[1]
    );
}

#[tokio::test]
async fn the_bearer_header_is_sent_only_with_a_key() {
    let fake = FakeLlm::start(vec![], Reply::Json(json!({}))).await;
    ask(settings(&fake, "sk-test")).await.expect("with a key");
    ask(settings(&fake, "")).await.expect("without a key");
    let headers = fake.headers();
    assert_eq!(
        headers[0].get("authorization").map(String::as_str),
        Some("Bearer sk-test")
    );
    assert!(
        !headers[1].contains_key("authorization"),
        "{:?}",
        headers[1]
    );
    assert_eq!(
        headers[0].get("content-type").map(String::as_str),
        Some("application/json")
    );
}

#[tokio::test]
async fn the_anthropic_api_has_its_own_path_headers_and_system() {
    let fake = FakeLlm::start(vec![], Reply::Json(json!({"pattern": "ABBA"}))).await;
    let completion = ask(LlmSettings {
        provider: Provider::Anthropic,
        ..settings(&fake, "sk-ant")
    })
    .await
    .expect("an answer from /v1/messages");
    assert_eq!(completion.content, json!({"pattern": "ABBA"}).to_string());
    assert_eq!(
        (completion.prompt_tokens, completion.completion_tokens),
        (100, 20)
    );
    let headers = &fake.headers()[0];
    assert_eq!(headers.get("x-api-key").map(String::as_str), Some("sk-ant"));
    assert_eq!(
        headers.get("anthropic-version").map(String::as_str),
        Some("2023-06-01")
    );
    assert!(!headers.contains_key("authorization"));
    let request = &fake.requests()[0];
    assert_eq!(
        request["system"],
        "You plan analog layouts.\n\nAnswer with one JSON object."
    );
    let roles: Vec<&str> = request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|message| message["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(request["max_tokens"], 2048);
    assert!(request.get("response_format").is_none());
}

#[test]
fn a_blocking_fake_serves_and_stops_even_with_a_reply_under_way() {
    use std::io::{Read, Write};
    let slow = Reply::Delay(Duration::from_secs(30), Box::new(Reply::Json(json!({}))));
    let fake = FakeLlm::start_blocking(vec![Reply::Json(json!({"n": 1}))], slow);
    let address = fake
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    let post = |stream: &mut std::net::TcpStream| {
        let body = r#"{"model": "m"}"#;
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).expect("send");
    };
    let mut first = std::net::TcpStream::connect(&address).expect("connect");
    post(&mut first);
    let mut answer = String::new();
    first.read_to_string(&mut answer).expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#"\"n\":1"#), "{answer}");
    let mut second = std::net::TcpStream::connect(&address).expect("connect");
    post(&mut second);
    let waiting = Instant::now();
    while fake.requests().len() < 2 {
        assert!(
            waiting.elapsed() < Duration::from_secs(10),
            "no second request"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    drop(fake);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "drop waited for the slow reply"
    );
}

#[test]
fn an_unconfigured_model_is_refused_with_the_reason() {
    let settings = LlmSettings::default();
    assert!(!settings.is_configured());
    assert!(
        settings
            .missing()
            .is_some_and(|why| why.contains("CENTROID_LLM_BASE_URL"))
    );
    let error = LlmClient::new(settings).err().expect("not configured");
    assert_eq!(error.reason(), "not_configured");
    let no_model = LlmSettings {
        base_url: "http://127.0.0.1:9/v1".into(),
        ..LlmSettings::default()
    };
    assert!(
        no_model
            .missing()
            .is_some_and(|why| why.contains("CENTROID_LLM_MODEL"))
    );
}

#[test]
fn the_debug_form_of_settings_hides_the_key() {
    let settings = LlmSettings {
        api_key: "sk-secret-123".into(),
        ..LlmSettings::default()
    };
    let shown = format!("{settings:?}");
    assert!(!shown.contains("sk-secret-123"), "{shown}");
    assert!(shown.contains("<set>"), "{shown}");
    assert!(format!("{:?}", LlmSettings::default()).contains("<empty>"));
}

#[test]
fn tokens_are_counted_by_cl100k() {
    assert_eq!(count_tokens("hello world"), 2);
    assert_eq!(count_tokens(""), 0);
}

#[test]
fn a_cut_text_stays_within_its_bound_and_says_so() {
    let text = "matched pair of M1 and M2, ".repeat(200);
    for bound in [12, 25, 100, 1000] {
        let cut = truncate_to_tokens(&text, bound);
        assert!(
            count_tokens(&cut) <= bound,
            "{bound}: {}",
            count_tokens(&cut)
        );
        assert!(cut.contains("[… truncated: "), "{bound}: {cut}");
        assert!(cut.starts_with("matched pair"), "{bound}");
    }
    assert_eq!(truncate_to_tokens("short", 10), "short");
    let unicode = "µm² Ω → ".repeat(100);
    for bound in 0..60 {
        assert!(count_tokens(&truncate_to_tokens(&unicode, bound)) <= bound);
    }
}

fn parts() -> Vec<PromptPart> {
    let part = |title: &str, priority, text: String, min_tokens| PromptPart {
        title: title.into(),
        priority,
        text,
        min_tokens,
    };
    vec![
        part("Skills", 2, "skill.route(net, layer) ".repeat(60), 10),
        part("Task", 0, "lay out the OTA".into(), 4),
        part("Devices", 1, "M1 nmos W=2u L=0.5u; ".repeat(40), 10),
        part("History", 2, "iteration 3: DRC clean, ".repeat(30), 20),
        part("Hint", 3, "keep it symmetric".into(), 2),
    ]
}

#[test]
fn a_fitted_prompt_never_exceeds_its_budget_and_keeps_priorities() {
    let order = [
        "## Task",
        "## Devices",
        "## Skills",
        "## History",
        "## Hint",
    ];
    for budget in 0..400 {
        let fitted = fit_prompt(parts(), budget);
        assert!(fitted.tokens <= budget, "{budget}: {}", fitted.tokens);
        assert_eq!(fitted.tokens, count_tokens(&fitted.text), "{budget}");
        let positions: Vec<usize> = order
            .iter()
            .filter_map(|title| fitted.text.find(title))
            .collect();
        assert!(positions.is_sorted(), "{budget}: priority order");
        let present = positions.len() + fitted.dropped.len();
        assert_eq!(
            present,
            order.len(),
            "{budget}: every part placed or dropped"
        );
        for title in &fitted.truncated {
            assert!(fitted.text.contains(&format!("## {title}")), "{budget}");
        }
    }
    assert_eq!(fit_prompt(parts(), 0).text, "");
    let roomy = fit_prompt(parts(), 10_000);
    assert!(roomy.truncated.is_empty() && roomy.dropped.is_empty());
    let tight = fit_prompt(parts(), 150);
    assert!(tight.text.starts_with("## Task\nlay out the OTA"));
    assert!(tight.text.contains("truncated: "));
    assert!(!tight.truncated.is_empty());
}
