//! Checkpoints: per stream, shard and consumer, the last sequence number
//! the consumer is done with (and whether it finished the shard), kept in a
//! JSON file so that a restart resumes where the last run stopped.
//!
//! The file is written whole to a temporary file beside it and renamed over
//! it, so a crash leaves the old or the new version, never half of one.
//! Checkpoints of a stream that no longer exists (a table re-created, a
//! server reset) are ignored: a new stream has a new ARN.
//!
//! ```json
//! {"version": 1, "streams": {"arn:...": {"table": "records", "shards": {
//!   "shardId-...": {"indexer": {"sequence_number": "4000...", "finished": false}}}}}}
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use model::filter::Consumer;

use super::expiry::Expiry;
use serde::{Deserialize, Serialize};

/// The file format's version.
pub const VERSION: u32 = 1;

/// Why checkpoints could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("reading checkpoints from {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "checkpoints file {path} is not valid (line {line}, column {column}: {reason}); \
         move it away to start from TRIM_HORIZON"
    )]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("checkpoints file {path} has version {found}; this streamdex writes version {VERSION}")]
    Version { path: PathBuf, found: u32 },
    #[error("writing checkpoints to {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where one consumer is on one shard.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Position {
    /// The last sequence number it is done with; `None`: none yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<String>,
    /// The shard is closed and it is done with all of it.
    #[serde(default)]
    pub finished: bool,
}

/// One stream's checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StreamCheckpoints {
    pub table: String,
    /// shard id → consumer (`indexer`, `router`) → position.
    #[serde(default)]
    pub shards: BTreeMap<String, BTreeMap<String, Position>>,
}

/// Every checkpoint, by stream ARN.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoints {
    pub version: u32,
    #[serde(default)]
    pub streams: BTreeMap<String, StreamCheckpoints>,
    /// Local TTL's deletions whose records may not have been read yet (see [`super::expiry`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expiries: Vec<Expiry>,
}

impl Default for Checkpoints {
    fn default() -> Checkpoints {
        Checkpoints {
            version: VERSION,
            streams: BTreeMap::new(),
            expiries: Vec::new(),
        }
    }
}

impl Checkpoints {
    /// Reads `path`; a missing file is empty checkpoints.
    pub fn load(path: &Path) -> Result<Checkpoints, CheckpointError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Checkpoints::default()),
            Err(source) => {
                return Err(CheckpointError::Read {
                    path: path.to_owned(),
                    source,
                })
            }
        };
        let checkpoints: Checkpoints = serde_json::from_str(&text).map_err(|e| CheckpointError::Parse {
            path: path.to_owned(),
            line: e.line(),
            column: e.column(),
            reason: e.to_string(),
        })?;
        if checkpoints.version != VERSION {
            return Err(CheckpointError::Version {
                path: path.to_owned(),
                found: checkpoints.version,
            });
        }
        Ok(checkpoints)
    }

    /// Writes `path` atomically (a temporary file renamed over it),
    /// creating its folder.
    pub fn save(&self, path: &Path) -> Result<(), CheckpointError> {
        let failed = |source| CheckpointError::Write {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(failed)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| failed(std::io::Error::other(e)))?;
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(".tmp");
        let temporary = PathBuf::from(temporary);
        std::fs::write(&temporary, text + "\n").map_err(failed)?;
        std::fs::rename(&temporary, path).map_err(failed)
    }

    /// A consumer's position on a shard (default: nothing done yet).
    pub fn get(&self, stream: &str, shard: &str, consumer: Consumer) -> Position {
        self.streams
            .get(stream)
            .and_then(|s| s.shards.get(shard))
            .and_then(|c| c.get(consumer.as_str()))
            .cloned()
            .unwrap_or_default()
    }

    /// Sets a consumer's position on a shard; returns whether it changed.
    pub fn set(&mut self, table: &str, stream: &str, shard: &str, consumer: Consumer, position: Position) -> bool {
        let entry = self
            .streams
            .entry(stream.to_owned())
            .or_insert_with(|| StreamCheckpoints {
                table: table.to_owned(),
                shards: BTreeMap::new(),
            })
            .shards
            .entry(shard.to_owned())
            .or_default()
            .entry(consumer.as_str().to_owned())
            .or_default();
        if *entry == position {
            return false;
        }
        *entry = position;
        true
    }

    /// The shards of a stream a consumer has finished.
    pub fn finished(&self, stream: &str, consumer: Consumer) -> std::collections::BTreeSet<String> {
        self.streams
            .get(stream)
            .map(|s| {
                s.shards
                    .iter()
                    .filter(|(_, c)| c.get(consumer.as_str()).is_some_and(|p| p.finished))
                    .map(|(shard, _)| shard.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The default checkpoints file of a deployment (`NAMESPACE` from
/// [`crate::stack::namespace`]): `$XDG_STATE_HOME/streamdex/`, else
/// `$HOME/.local/state/streamdex/`, else `.streamdex/`, then
/// `checkpoints-NAMESPACE.json`.
pub fn default_path(namespace: &str, env: impl Fn(&str) -> Option<String>) -> PathBuf {
    let file = format!("checkpoints-{namespace}.json");
    let non_empty = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if let Some(state) = non_empty("XDG_STATE_HOME") {
        return Path::new(&state).join("streamdex").join(file);
    }
    if let Some(home) = non_empty("HOME") {
        return Path::new(&home).join(".local/state/streamdex").join(file);
    }
    Path::new(".streamdex").join(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("streamdex-checkpoints-{}-{name}", std::process::id()))
    }

    #[test]
    fn checkpoints_survive_a_save_and_load() {
        let dir = temp("roundtrip");
        let path = dir.join("nested/checkpoints.json");
        let mut c = Checkpoints::default();
        let at = |seq: &str| Position {
            sequence_number: Some(seq.to_owned()),
            finished: false,
        };
        assert!(c.set("records", "arn:s", "shard-1", Consumer::Indexer, at("100")));
        assert!(
            !c.set("records", "arn:s", "shard-1", Consumer::Indexer, at("100")),
            "unchanged"
        );
        c.set(
            "records",
            "arn:s",
            "shard-0",
            Consumer::Router,
            Position {
                sequence_number: None,
                finished: true,
            },
        );
        c.save(&path).unwrap();
        assert!(
            !std::fs::read_to_string(&path).unwrap().contains("expiries"),
            "no local TTL, no field: files stay as before"
        );
        c.expiries.push(Expiry {
            table: "records".to_owned(),
            key: vec![("pk".to_owned(), "S".to_owned(), "a".to_owned())],
            attribute: "expiresAt".to_owned(),
            ttl: "1700000000".to_owned(),
            noted_ms: 1_700_000_000_500,
            deleted: true,
            sequence_number: Some("4000".to_owned()),
        });
        c.save(&path).unwrap();
        let back = Checkpoints::load(&path).unwrap();
        assert_eq!(back, c, "local TTL's deletions survive a restart");
        assert_eq!(back.get("arn:s", "shard-1", Consumer::Indexer), at("100"));
        assert_eq!(back.get("arn:s", "shard-1", Consumer::Router), Position::default());
        assert_eq!(back.get("arn:other", "shard-1", Consumer::Indexer), Position::default());
        assert_eq!(
            back.finished("arn:s", Consumer::Router).into_iter().collect::<Vec<_>>(),
            ["shard-0"]
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_missing_file_is_empty_and_a_bad_one_is_refused_with_its_line() {
        let dir = temp("bad");
        assert_eq!(
            Checkpoints::load(&dir.join("none.json")).unwrap(),
            Checkpoints::default()
        );
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\"version\": 1,\n \"streams\": [}").unwrap();
        let e = Checkpoints::load(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.json") && e.contains("line 2"), "{e}");
        std::fs::write(&bad, "{\"version\": 9}").unwrap();
        assert!(matches!(
            Checkpoints::load(&bad),
            Err(CheckpointError::Version { found: 9, .. })
        ));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_default_path_follows_the_state_dir() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
        };
        assert_eq!(
            default_path("sdx", env(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")])),
            PathBuf::from("/s/streamdex/checkpoints-sdx.json")
        );
        assert_eq!(
            default_path("sdx", env(&[("HOME", "/h")])),
            PathBuf::from("/h/.local/state/streamdex/checkpoints-sdx.json")
        );
        assert_eq!(
            default_path("sdx", env(&[])),
            PathBuf::from(".streamdex/checkpoints-sdx.json")
        );
    }
}
