//! A stand-in for the Lambda Runtime API on loopback, for one function
//! process: the process long-polls `GET /2018-06-01/runtime/invocation/next`
//! for its next invocation and posts the answer to
//! `.../invocation/{id}/response` (or `/error`); a failed start posts to
//! `.../init/error`. [`Api::invoke`] queues an invocation and hands back
//! what the process answered.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

/// The API's version prefix, as the runtime clients call it.
pub const PREFIX: &str = "/2018-06-01/runtime";

/// What the function answered to one invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The body posted to `/response`.
    Response(Bytes),
    /// The body posted to `/error` (the runtime's `errorType` and `errorMessage`).
    Error(String),
}

/// One invocation waiting for the process.
struct Pending {
    id: String,
    payload: Bytes,
    deadline_ms: u64,
    answer: oneshot::Sender<Answer>,
}

struct Shared {
    function_arn: String,
    /// Invocations the process has not taken yet.
    queue: tokio::sync::Mutex<mpsc::Receiver<Pending>>,
    /// Invocations taken and not yet answered, by request id.
    taken: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    /// What the process posted to `/init/error`, if it did.
    init_error: Mutex<Option<String>>,
    /// When the process first asked for an invocation: its start-up was done.
    first_poll: std::sync::OnceLock<std::time::Instant>,
}

/// The API of one function process.
pub struct Api {
    pub address: SocketAddr,
    sender: mpsc::Sender<Pending>,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

/// Why an invocation got no answer through the API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    #[error("the Runtime API stand-in has stopped")]
    Stopped,
    #[error("the function answered nothing: its request was dropped")]
    Dropped,
}

impl Api {
    /// Serves on a free loopback port.
    pub async fn start(function_arn: &str) -> std::io::Result<Api> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let (sender, receiver) = mpsc::channel(16);
        let shared = Arc::new(Shared {
            function_arn: function_arn.to_owned(),
            queue: tokio::sync::Mutex::new(receiver),
            taken: Mutex::new(HashMap::new()),
            init_error: Mutex::new(None),
            first_poll: std::sync::OnceLock::new(),
        });
        let serving = shared.clone();
        let server = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let shared = serving.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| handle(shared.clone(), request));
                    // A connection the process drops ends here; nothing to report.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Api {
            address,
            sender,
            shared,
            server,
        })
    }

    /// When the process first asked for an invocation, if it has.
    pub fn first_poll(&self) -> Option<std::time::Instant> {
        self.shared.first_poll.get().copied()
    }

    /// What the process posted to `/init/error`, if it did.
    pub fn init_error(&self) -> Option<String> {
        self.shared.init_error.lock().ok().and_then(|e| e.clone())
    }

    /// Queues an invocation; the receiver gets the process's answer.
    pub async fn invoke(
        &self,
        id: String,
        payload: Bytes,
        deadline_ms: u64,
    ) -> Result<oneshot::Receiver<Answer>, ApiError> {
        let (answer, answered) = oneshot::channel();
        self.sender
            .send(Pending {
                id,
                payload,
                deadline_ms,
                answer,
            })
            .await
            .map_err(|_| ApiError::Stopped)?;
        Ok(answered)
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn reply(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response
}

async fn handle(shared: Arc<Shared>, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    let Some(rest) = path.strip_prefix(PREFIX) else {
        return Ok(reply(StatusCode::NOT_FOUND, format!("no such path {path}")));
    };
    if method == Method::GET && rest == "/invocation/next" {
        let _ = shared.first_poll.set(std::time::Instant::now());
        let next = shared.queue.lock().await.recv().await;
        let Some(pending) = next else {
            return Ok(reply(StatusCode::GONE, "the stand-in is stopping"));
        };
        let mut response = reply(StatusCode::OK, pending.payload);
        let headers = response.headers_mut();
        let pairs = [
            ("lambda-runtime-aws-request-id", pending.id.clone()),
            ("lambda-runtime-deadline-ms", pending.deadline_ms.to_string()),
            ("lambda-runtime-invoked-function-arn", shared.function_arn.clone()),
            (
                "lambda-runtime-trace-id",
                format!("Root=1-00000000-{:0>24};Sampled=0", pending.id),
            ),
            ("content-type", "application/json".to_owned()),
        ];
        for (name, value) in pairs {
            if let Ok(value) = hyper::header::HeaderValue::from_str(&value) {
                headers.insert(name, value);
            }
        }
        if let Ok(mut taken) = shared.taken.lock() {
            taken.insert(pending.id, pending.answer);
        }
        return Ok(response);
    }
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => return Ok(reply(StatusCode::BAD_REQUEST, format!("unreadable body: {e}"))),
    };
    if method == Method::POST && rest == "/init/error" {
        if let Ok(mut init) = shared.init_error.lock() {
            *init = Some(String::from_utf8_lossy(&body).into_owned());
        }
        return Ok(reply(StatusCode::ACCEPTED, "{}"));
    }
    let answered = rest
        .strip_prefix("/invocation/")
        .and_then(|r| r.split_once('/'))
        .filter(|_| method == Method::POST);
    let Some((id, kind)) = answered else {
        return Ok(reply(StatusCode::NOT_FOUND, format!("no such call {method} {path}")));
    };
    let answer = match kind {
        "response" => Answer::Response(body),
        "error" => Answer::Error(String::from_utf8_lossy(&body).into_owned()),
        _ => return Ok(reply(StatusCode::NOT_FOUND, format!("no such call {method} {path}"))),
    };
    let sender = shared.taken.lock().ok().and_then(|mut t| t.remove(id));
    match sender {
        Some(sender) => {
            // The invoker may have given up (its deadline passed); the answer is then moot.
            let _ = sender.send(answer);
            Ok(reply(StatusCode::ACCEPTED, "{}"))
        }
        None => Ok(reply(
            StatusCode::BAD_REQUEST,
            format!("invocation {id} is not waiting for an answer"),
        )),
    }
}
