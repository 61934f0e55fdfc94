//! The built functions run as Lambda runs them (`streamdex run
//! --functions DIR`): each `bootstrap`, taken from the zip that ships, is a
//! process of its own, with the environment the deployed function has
//! (its variables, and what Lambda adds: its name, memory, the Runtime API's
//! address), pulling its invocations from a Runtime API stand-in on
//! loopback ([`api`]). A [`Hosted`] function is a [`Function`] to the
//! runner's mappings, or the reaper's [`ReapTarget`].
//!
//! The process is started at once, as Lambda starts an execution
//! environment, and its cold start (from the process's start to its first
//! answer) is measured.

pub mod api;
pub mod deployment;
pub mod process;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use event_router::Reaped;
use futures::future::BoxFuture;
use futures::FutureExt;
use model::settlement::BatchResponse;

use self::api::{Answer, Api};
use self::deployment::DeployedMapping;
use self::process::Process;
use super::function::{Function, Invocation, Response};
use super::reaper_feed::{ReapFailed, ReapTarget};
use crate::stack::{FunctionRole, Stack};
use aws_kit::clock::Clock;

/// A deployed function, as the stack describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployed {
    pub name: String,
    pub arn: String,
    /// The function's own variables.
    pub environment: BTreeMap<String, String>,
    pub memory_mb: i32,
    pub timeout: Duration,
}

/// Why a function could not be hosted or invoked.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{function}: {source}")]
    Process {
        function: String,
        #[source]
        source: process::ProcessError,
    },
    #[error(transparent)]
    Deployment(#[from] deployment::DeploymentError),
    #[error("{function}: cannot serve the Runtime API: {source}")]
    Serve {
        function: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "another `streamdex run --functions` is running from {} (it holds {}): each function unpacks into \
         {}/BINARY/run and logs to {}/BINARY/run.log, so one run at a time per folder; wait for it to end, \
         or copy the folder and give the copy",
        dir.display(), lock.display(), dir.display(), dir.display()
    )]
    Busy { dir: PathBuf, lock: PathBuf },
    #[error("cannot lock {}: {source}; is the folder there? (scripts/build-functions.sh writes it)", lock.display())]
    Lock {
        lock: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The file in the functions' folder that a run holds locked while it
/// runs them.
pub const LOCK_FILE: &str = "run.lock";

/// Locks the functions' folder `dir` for this run (see [`LOCK_FILE`]): the
/// lock is held while the file returned is open, and let go when the
/// process ends, however it ends.
pub fn lock_folder(dir: &Path) -> Result<std::fs::File, HostError> {
    let lock = dir.join(LOCK_FILE);
    let failed = |source| HostError::Lock {
        lock: lock.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock)
        .map_err(failed)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(HostError::Busy {
            dir: dir.to_path_buf(),
            lock,
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(failed(source)),
    }
}

/// One function process and its Runtime API.
pub struct Hosted {
    pub name: String,
    api: Api,
    process: Process,
    clock: Arc<dyn Clock>,
    timeout: Duration,
    started: Instant,
    /// Microseconds the first invocation took, from handing it over to its answer (0: none yet).
    first_answer_us: AtomicU64,
    invocations: AtomicU64,
}

impl Hosted {
    /// Starts the `bootstrap` of `zip` (extracted into `work`) as `function`,
    /// with `extra` added to its environment (the endpoint, credentials and
    /// region the stand-in's account gives).
    pub async fn start(
        function: &Deployed,
        zip: &Path,
        work: &Path,
        extra: &BTreeMap<String, String>,
        log: PathBuf,
        clock: Arc<dyn Clock>,
    ) -> Result<Hosted, HostError> {
        let api = Api::start(&function.arn).await.map_err(|source| HostError::Serve {
            function: function.name.clone(),
            source,
        })?;
        let failed = |source| HostError::Process {
            function: function.name.clone(),
            source,
        };
        let bootstrap = process::extract(zip, work).map_err(failed)?;
        // The cold start counts from here: the zip is read before, as Lambda reads it before the start.
        let started = Instant::now();
        let process = Process::start(function, &bootstrap, work, extra, api.address, log).map_err(failed)?;
        Ok(Hosted {
            name: function.name.clone(),
            api,
            process,
            clock,
            timeout: function.timeout,
            started,
            first_answer_us: AtomicU64::new(0),
            invocations: AtomicU64::new(0),
        })
    }

    /// The cold start: the process's start-up (from its start to its
    /// first request for an invocation) and its first invocation (from
    /// handing it over to its answer). Time the process spent waiting for
    /// records to arrive is in neither.
    pub fn cold_start(&self) -> Option<(Duration, Duration)> {
        let init = self.api.first_poll()?.checked_duration_since(self.started)?;
        match self.first_answer_us.load(Ordering::Relaxed) {
            0 => None,
            us => Some((init, Duration::from_micros(us))),
        }
    }

    /// Invocations answered or failed so far.
    pub fn invocations(&self) -> u64 {
        self.invocations.load(Ordering::Relaxed)
    }

    /// Hands `payload` to the process and waits for its answer, at most the
    /// function's timeout; a process that has exited answers nothing.
    pub async fn invoke(&self, payload: &[u8]) -> Result<Bytes, String> {
        let n = self.invocations.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("{:08x}-{n:012}", self.clock.now_ms() & 0xffff_ffff);
        let timeout_ms = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
        let deadline_ms = self.clock.now_ms().saturating_add(timeout_ms);
        let handed = Instant::now();
        let answered = self
            .api
            .invoke(id, Bytes::copy_from_slice(payload), deadline_ms)
            .await
            .map_err(|e| e.to_string())?;
        let outcome = tokio::select! {
            answer = answered => answer.map_err(|_| api::ApiError::Dropped.to_string()),
            status = self.process.exited() => Err(match self.api.init_error() {
                Some(init) => format!("the process exited ({status}) after failing to start: {init}"),
                None => format!("the process exited ({status})"),
            }),
            () = tokio::time::sleep(self.timeout) => Err(format!(
                "no answer within the function's timeout of {} s (Task timed out)",
                self.timeout.as_secs()
            )),
        };
        if n == 1 {
            let us = u64::try_from(handed.elapsed().as_micros()).unwrap_or(u64::MAX).max(1);
            self.first_answer_us.store(us, Ordering::Relaxed);
        }
        match outcome? {
            Answer::Response(body) => Ok(body),
            Answer::Error(error) => Err(format!("function error: {error}")),
        }
    }

    /// Stops the process.
    pub async fn stop(&self) {
        self.process.stop().await;
    }
}

/// The built functions, each a process of its own, and the deployed
/// mappings that feed them: what [`super::local::connect`] wires instead
/// of the consumers in process.
pub struct Hosting {
    pub functions: Vec<(FunctionRole, Arc<Hosted>)>,
    pub mappings: Vec<DeployedMapping>,
    /// The functions' folder, locked ([`lock_folder`]).
    _lock: std::fs::File,
}

impl Hosting {
    /// The hosted function of `role`.
    pub fn function(&self, role: FunctionRole) -> Option<&Arc<Hosted>> {
        self.functions.iter().find(|(r, _)| *r == role).map(|(_, f)| f)
    }

    /// Starts each function of `stack` that is deployed on the endpoint of
    /// `lambda`, from `dir/BINARY/bootstrap.zip` (what
    /// `scripts/build-functions.sh` writes), with the deployed environment
    /// and `extra`; its log is `dir/BINARY/run.log`. The mappings are the
    /// ones `streamdex deploy --defer-mappings` wrote to `mappings`. The
    /// folder is locked while the hosting lasts: a second run from it is
    /// [`HostError::Busy`].
    pub async fn start(
        lambda: &aws_sdk_lambda::Client,
        stack: &Stack,
        dir: &Path,
        mappings: &Path,
        extra: &BTreeMap<String, String>,
        clock: Arc<dyn Clock>,
    ) -> Result<Hosting, HostError> {
        let mut hosting = Hosting {
            functions: Vec::new(),
            mappings: deployment::read_mappings(mappings)?,
            _lock: lock_folder(dir)?,
        };
        for function in &stack.functions {
            let deployed = deployment::function(lambda, &function.name).await?;
            let own = dir.join(function.role.binary());
            let hosted = Hosted::start(
                &deployed,
                &own.join(crate::template::CODE_ZIP),
                &own.join("run"),
                extra,
                own.join("run.log"),
                clock.clone(),
            )
            .await?;
            hosting.functions.push((function.role, Arc::new(hosted)));
        }
        Ok(hosting)
    }

    /// Stops every process.
    pub async fn stop(&self) {
        for (_, hosted) in &self.functions {
            hosted.stop().await;
        }
    }
}

/// A hosted stream consumer, as a mapping's function.
pub struct HostedFunction(pub Arc<Hosted>);

impl Function for HostedFunction {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn invoke<'a>(&'a self, payload: &'a [u8], _now_ms: u64) -> BoxFuture<'a, Invocation> {
        async move {
            let failed = |error: String| Invocation {
                response: Response::Error(error.clone()),
                emf: None,
                failures: vec![error],
                quarantined: 0,
            };
            let body = match self.0.invoke(payload).await {
                Ok(body) => body,
                Err(e) => return failed(e),
            };
            match serde_json::from_slice::<BatchResponse>(&body) {
                Ok(answer) => Invocation {
                    response: match answer.batch_item_failures.first() {
                        None => Response::Success,
                        Some(f) if f.item_identifier.is_empty() => Response::Error("the whole batch failed".to_owned()),
                        Some(f) => Response::FailedFrom(f.item_identifier.clone()),
                    },
                    // The process prints its own EMF line and its failures' reasons to its log.
                    emf: None,
                    failures: Vec::new(),
                    quarantined: 0,
                },
                Err(e) => failed(format!(
                    "the answer is not a batch response ({e}): {}",
                    String::from_utf8_lossy(&body)
                )),
            }
        }
        .boxed()
    }
}

/// The hosted reaper, as the reap rules' target.
pub struct HostedReaper(pub Arc<Hosted>);

impl ReapTarget for HostedReaper {
    fn reap<'a>(&'a self, event: &'a [u8]) -> BoxFuture<'a, Result<Reaped, ReapFailed>> {
        async move {
            // A function error is retried, as Lambda retries an asynchronous invocation.
            let body = self.0.invoke(event).await.map_err(|message| ReapFailed {
                message,
                retryable: true,
            })?;
            serde_json::from_slice(&body).map_err(|e| ReapFailed {
                message: format!("the reaper's answer is not what it reaped ({e})"),
                retryable: false,
            })
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_from_a_locked_folder_is_refused_until_the_first_ends() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let first = lock_folder(dir.path()).expect("the first run locks the folder");
        let refused = lock_folder(dir.path()).expect_err("a second run from the same folder");
        assert!(matches!(refused, HostError::Busy { .. }), "{refused:?}");
        let said = refused.to_string();
        assert!(
            said.contains(&dir.path().display().to_string()) && said.contains(LOCK_FILE),
            "{said}"
        );
        drop(first);
        lock_folder(dir.path()).expect("once the first run ends, the folder is free");
    }

    #[test]
    fn a_folder_that_is_not_there_is_named() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let missing = dir.path().join("not-built");
        let error = lock_folder(&missing).expect_err("no such folder");
        assert!(matches!(error, HostError::Lock { .. }), "{error:?}");
        assert!(error.to_string().contains("not-built"), "{error}");
    }
}
