//! A fake OpenAI-compatible model server for benchmarks: answers every request
//! with the JSON of `--reply-file` after `--delay-ms`, prints its base URL
//! (`http://127.0.0.1:PORT/v1`) on the first line of stdout and serves until killed.

use std::time::Duration;

use centroid_tests::fake_llm::{FakeLlm, Reply};

const USAGE: &str = "usage: fake-llm --reply-file FILE [--delay-ms N]";

/// The reply of every request, from the command line.
fn reply_from_arguments() -> Result<Reply, String> {
    let mut delay_ms = 0u64;
    let mut reply_file = None;
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--delay-ms" => {
                delay_ms = arguments
                    .next()
                    .and_then(|value| value.parse().ok())
                    .ok_or("--delay-ms takes a whole number of milliseconds")?;
            }
            "--reply-file" => reply_file = arguments.next(),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let reply_file = reply_file.ok_or("--reply-file FILE is required")?;
    let text =
        std::fs::read_to_string(&reply_file).map_err(|error| format!("{reply_file}: {error}"))?;
    let content: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| format!("{reply_file}: not JSON: {error}"))?;
    Ok(Reply::Delay(
        Duration::from_millis(delay_ms),
        Box::new(Reply::Json(content)),
    ))
}

fn main() {
    let reply = match reply_from_arguments() {
        Ok(reply) => reply,
        Err(error) => {
            eprintln!("fake-llm: {error}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let fake = FakeLlm::start_blocking(vec![], reply);
    println!("{}", fake.base_url());
    loop {
        std::thread::park();
    }
}
