//! A function's process: its `bootstrap` taken from the zip that ships
//! (refused unless Lambda could run it: present, a regular file, with its
//! execute bit set in the zip), started with exactly the deployed
//! function's environment and what Lambda adds to it, its output written to
//! a log file.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::sync::{mpsc, watch};

use super::Deployed;

/// The file Lambda runs in a `provided` runtime's zip.
pub const BOOTSTRAP: &str = "bootstrap";

/// Why a process did not start.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot read {zip}: {reason}; build it with scripts/build-functions.sh")]
    Zip { zip: PathBuf, reason: String },
    #[error("{zip} holds no `{BOOTSTRAP}` at its top (Lambda would fail with Runtime.InvalidEntrypoint)")]
    NoBootstrap { zip: PathBuf },
    #[error(
        "the `{BOOTSTRAP}` in {zip} is not executable (mode {mode:o}): Lambda would fail with Runtime.InvalidEntrypoint"
    )]
    NotExecutable { zip: PathBuf, mode: u32 },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start {path}: {source}")]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A running function process.
pub struct Process {
    exited: watch::Receiver<Option<String>>,
    stop: mpsc::Sender<()>,
}

/// Takes the `bootstrap` out of `zip` into `work`; its path.
pub fn extract(zip: &Path, work: &Path) -> Result<PathBuf, ProcessError> {
    let unreadable = |reason: String| ProcessError::Zip {
        zip: zip.to_path_buf(),
        reason,
    };
    let file = std::fs::File::open(zip).map_err(|e| unreadable(e.to_string()))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| unreadable(e.to_string()))?;
    let mut entry = archive
        .by_name(BOOTSTRAP)
        .map_err(|_| ProcessError::NoBootstrap { zip: zip.to_path_buf() })?;
    let mode = entry.unix_mode().unwrap_or(0);
    if !entry.is_file() || mode & 0o111 == 0 {
        return Err(ProcessError::NotExecutable {
            zip: zip.to_path_buf(),
            mode,
        });
    }
    let write = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ProcessError::Write { path, source }
    };
    std::fs::create_dir_all(work).map_err(write(work))?;
    let path = work.join(BOOTSTRAP);
    // Written aside and renamed over the old one: another `run` of the same
    // functions may be executing that one, which cannot be opened for
    // writing then ("Text file busy"); it keeps running the file it has.
    let aside = work.join(format!("{BOOTSTRAP}.{}.part", std::process::id()));
    let written = (|| {
        let mut out = std::fs::File::create(&aside).map_err(write(&aside))?;
        std::io::copy(&mut entry, &mut out).map_err(write(&aside))?;
        drop(out);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&aside, std::fs::Permissions::from_mode(0o755)).map_err(write(&aside))?;
        }
        std::fs::rename(&aside, &path).map_err(write(&path))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&aside);
    }
    written?;
    // Absolute: the process starts in `work`, where a relative path would point elsewhere.
    std::path::absolute(&path).map_err(write(&path))
}

/// What Lambda adds to a function's own variables (`docs/deploying.md`
/// lists them), for a process whose Runtime API is at `api`.
pub fn lambda_environment(function: &Deployed, api: SocketAddr, task_root: &Path) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("AWS_LAMBDA_RUNTIME_API".to_owned(), api.to_string()),
        ("AWS_LAMBDA_FUNCTION_NAME".to_owned(), function.name.clone()),
        (
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE".to_owned(),
            function.memory_mb.to_string(),
        ),
        ("AWS_LAMBDA_FUNCTION_VERSION".to_owned(), "$LATEST".to_owned()),
        (
            "AWS_LAMBDA_LOG_GROUP_NAME".to_owned(),
            format!("/aws/lambda/{}", function.name),
        ),
        ("AWS_LAMBDA_LOG_STREAM_NAME".to_owned(), "rehearsal".to_owned()),
        ("AWS_EXECUTION_ENV".to_owned(), "AWS_Lambda_provided.al2023".to_owned()),
        ("LAMBDA_TASK_ROOT".to_owned(), task_root.display().to_string()),
        ("LAMBDA_RUNTIME_DIR".to_owned(), task_root.display().to_string()),
        ("_HANDLER".to_owned(), BOOTSTRAP.to_owned()),
        ("TZ".to_owned(), ":UTC".to_owned()),
        ("LANG".to_owned(), "en_US.UTF-8".to_owned()),
        ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
    ])
}

impl Process {
    /// Starts `bootstrap` (from [`extract`]) as `function` in `work`, its
    /// Runtime API at `api`, with `extra` (endpoint, credentials, region)
    /// added; stdout and stderr go to `log`.
    pub fn start(
        function: &Deployed,
        bootstrap: &Path,
        work: &Path,
        extra: &BTreeMap<String, String>,
        api: SocketAddr,
        log: PathBuf,
    ) -> Result<Process, ProcessError> {
        let mut environment = lambda_environment(function, api, work);
        environment.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        environment.extend(function.environment.iter().map(|(k, v)| (k.clone(), v.clone())));
        let out = std::fs::File::create(&log).map_err(|source| ProcessError::Write {
            path: log.clone(),
            source,
        })?;
        let err = out.try_clone().map_err(|source| ProcessError::Write {
            path: log.clone(),
            source,
        })?;
        let mut child = tokio::process::Command::new(bootstrap)
            .current_dir(work)
            .env_clear()
            .envs(&environment)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| ProcessError::Spawn {
                path: bootstrap.to_path_buf(),
                source,
            })?;
        let (exited_tx, exited) = watch::channel(None);
        let (stop, mut stopping) = mpsc::channel::<()>(1);
        tokio::spawn(async move {
            let status = tokio::select! {
                status = child.wait() => status,
                _ = stopping.recv() => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            let said = match status {
                Ok(status) => status.to_string(),
                Err(e) => format!("not known: {e}"),
            };
            let _ = exited_tx.send(Some(said));
        });
        Ok(Process { exited, stop })
    }

    /// Resolves when the process has exited, with its exit status.
    pub async fn exited(&self) -> String {
        let mut exited = self.exited.clone();
        loop {
            if let Some(status) = exited.borrow_and_update().clone() {
                return status;
            }
            if exited.changed().await.is_err() {
                return "not known: its watcher stopped".to_owned();
            }
        }
    }

    /// Kills the process and waits for it to go.
    pub async fn stop(&self) {
        let _ = self.stop.send(()).await;
        let _ = self.exited().await;
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::Write as _;
    use std::process::{Command, Stdio};

    use super::*;

    /// A zip holding `program` as an executable `bootstrap`.
    fn zip_of(program: &[u8], dir: &Path) -> PathBuf {
        let path = dir.join("bootstrap.zip");
        let file = std::fs::File::create(&path).expect("create the zip");
        let mut zip = zip::ZipWriter::new(file);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .unix_permissions(0o755);
        zip.start_file(BOOTSTRAP, options).expect("start the entry");
        zip.write_all(program).expect("write the entry");
        zip.finish().expect("finish the zip");
        path
    }

    /// Two `run`s of the same functions at once: the second extracts the
    /// bootstrap while the first one's process executes it (a file being
    /// executed cannot be opened for writing: "Text file busy").
    #[test]
    fn a_bootstrap_is_extracted_again_while_it_runs() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        // An ELF program that runs until its input ends (not a multi-call
        // binary, which would take its name from the copy's).
        let cat = std::fs::canonicalize("/bin/cat").expect("/bin/cat");
        if cat.file_name().is_none_or(|name| name != "cat") {
            eprintln!("skipped: /bin/cat is {}, a multi-call binary", cat.display());
            return;
        }
        let cat = std::fs::read(&cat).expect("/bin/cat");
        let zip = zip_of(&cat, dir.path());
        let work = dir.path().join("run");
        let first = extract(&zip, &work).expect("the first extraction");
        let mut running = Command::new(&first)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start the bootstrap");
        let again = extract(&zip, &work);
        drop(running.stdin.take());
        let status = running.wait().expect("the bootstrap ends with its input");
        assert_eq!(again.expect("extracted while running"), first);
        assert!(status.success(), "{status}");
        let left: Vec<_> = std::fs::read_dir(&work).expect("the work folder").collect();
        assert_eq!(left.len(), 1, "only the bootstrap is left: {left:?}");
    }
}
