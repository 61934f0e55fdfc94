//! Where an interrupted rebuild resumes: the tables done, for one config and scope.

use std::path::PathBuf;

use super::*;

/// Why a rebuild checkpoint could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointWriteError {
    /// The checkpoint could not be turned into JSON.
    #[error(transparent)]
    Serialize(serde_json::Error),
    /// The file `path` could not be written (or renamed into place).
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Where an interrupted rebuild resumes: the source tables already rebuilt
/// (verified clean after their repairs) for this config and scope.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// [`fingerprint`] of the config and scope; a checkpoint of another is not used.
    pub fingerprint: String,
    /// Source tables done, in the order they were done.
    pub done: Vec<String>,
}

impl Checkpoint {
    /// A fresh checkpoint for `config` and `scope`.
    pub fn new(config: &Config, scope: &Scope) -> Checkpoint {
        Checkpoint {
            fingerprint: fingerprint(config, scope),
            done: Vec::new(),
        }
    }

    /// Whether it was made for this config and scope.
    pub fn fits(&self, config: &Config, scope: &Scope) -> bool {
        self.fingerprint == fingerprint(config, scope)
    }
}

/// A stable digest (FNV-1a, 64 bits, hex) of the config and scope.
pub fn fingerprint(config: &Config, scope: &Scope) -> String {
    let text = format!("{config:?}\u{0}{scope:?}");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}
