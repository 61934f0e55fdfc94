//! `aws_kit::lambda::serve` against a stand-in for the Lambda Runtime API
//! (HTTP on localhost): the consumer is handed each payload exactly as
//! Lambda sent it, its answer is posted as the invocation's response, and
//! a payload it refuses is posted as the invocation's error.
//!
//! Its own test binary: the runtime reads its endpoint from the process's
//! environment.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_kit::lambda::{serve, Consumer, Stats};
use model::outcome::Outcome;
use model::record::ParseError;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// How long any one step may take before the test says what it waited on.
const PATIENCE: Duration = Duration::from_secs(20);

/// The payloads Lambda hands out, in order.
const PAYLOADS: [&str; 2] = [r#"{"Records": [],  "x": "as sent"}"#, "not a batch"];

/// No counts.
#[derive(Default)]
struct Counted;

impl Stats for Counted {
    fn metrics_line(&self, _function: &str, _duration: Duration, _now_ms: u64) -> String {
        String::new()
    }
    fn log_summary(&self, _resumes_from: Option<&str>) {}
}

/// Keeps every payload it is handed; refuses one that is not an object.
#[derive(Clone, Default)]
struct Keeper(Arc<Mutex<Vec<Vec<u8>>>>);

impl Consumer for Keeper {
    type Stats = Counted;

    async fn handle(&self, payload: &[u8]) -> Result<Outcome<Counted>, ParseError> {
        self.0.lock().expect("lock").push(payload.to_vec());
        if payload.starts_with(b"{") {
            Ok(Outcome::default())
        } else {
            Err(ParseError {
                line: 1,
                column: 1,
                message: "not a batch".to_owned(),
            })
        }
    }
}

/// One HTTP request: method, path, body.
async fn request(reader: &mut BufReader<TcpStream>) -> Option<(String, String, Vec<u8>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).await.ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    Some((method, path, body))
}

/// Serves `/next` with the payloads in turn (then never answers), and sends
/// every posted response or error to `posted` as (path, body).
async fn runtime_api(listener: TcpListener, posted: mpsc::UnboundedSender<(String, String)>) {
    let next = Arc::new(Mutex::new(0usize));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let (next, posted) = (next.clone(), posted.clone());
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream);
            while let Some((method, path, body)) = request(&mut reader).await {
                let reply = if method == "GET" && path.ends_with("/invocation/next") {
                    let n = {
                        let mut next = next.lock().expect("lock");
                        *next += 1;
                        *next
                    };
                    let Some(payload) = PAYLOADS.get(n - 1) else {
                        std::future::pending::<()>().await;
                        return;
                    };
                    format!(
                        "HTTP/1.1 200 OK\r\nLambda-Runtime-Aws-Request-Id: req-{n}\r\nLambda-Runtime-Deadline-Ms: 99999999999999\r\nLambda-Runtime-Invoked-Function-Arn: arn:aws:lambda:us-east-1:000000000000:function:f\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{payload}",
                        payload.len()
                    )
                } else {
                    let _ = posted.send((path, String::from_utf8_lossy(&body).into_owned()));
                    "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_owned()
                };
                if reader.get_mut().write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

#[tokio::test]
async fn each_payload_reaches_the_consumer_as_sent_and_its_answer_is_posted() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a local port");
    let address = listener.local_addr().expect("address");
    let (posted, mut answers) = mpsc::unbounded_channel();
    tokio::spawn(runtime_api(listener, posted));
    // The runtime's settings; this binary has this one test.
    std::env::set_var("AWS_LAMBDA_RUNTIME_API", address.to_string());
    std::env::set_var("AWS_LAMBDA_FUNCTION_NAME", "f");
    std::env::set_var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128");
    std::env::set_var("AWS_LAMBDA_FUNCTION_VERSION", "1");
    let keeper = Keeper::default();
    // `serve` runs until the runtime stops it: it runs here beside the
    // wait for the answers, and is dropped once they are in.
    let collect = async {
        let mut got = Vec::new();
        for _ in 0..PAYLOADS.len() {
            let answer = tokio::time::timeout(PATIENCE, answers.recv())
                .await
                .unwrap_or_else(|_| panic!("no answer posted to the runtime API within {PATIENCE:?}; got {got:?}"))
                .expect("the stand-in runtime API runs");
            got.push(answer);
        }
        got
    };
    let got = tokio::select! {
        ended = serve(keeper.clone(), "f".to_owned()) => panic!("serve ended: {ended:?}"),
        got = collect => got,
    };

    let handed: Vec<Vec<u8>> = keeper.0.lock().expect("lock").clone();
    let sent: Vec<Vec<u8>> = PAYLOADS.iter().map(|p| p.as_bytes().to_vec()).collect();
    assert_eq!(handed, sent, "the consumer is handed each payload byte for byte");
    assert_eq!(got[0].0, "/2018-06-01/runtime/invocation/req-1/response");
    let response: serde_json::Value = serde_json::from_str(&got[0].1).expect("JSON");
    assert_eq!(response, serde_json::json!({"batchItemFailures": []}));
    assert_eq!(got[1].0, "/2018-06-01/runtime/invocation/req-2/error");
    assert!(got[1].1.contains("not a batch"), "{}", got[1].1);
}
