//! Fault injection (tests, and other crates' tests with the `testing`
//! feature): [`FaultyStore`] wraps a [`Store`] and, for every call, asks a
//! [`Script`] which fault to inject: throttling, a timeout after the request
//! landed, unprocessed row writes, a refusal or a deployment error.
//!
//! Everything is deterministic: [`RandomFaults`] draws from a seeded RNG, and
//! under a current-thread runtime the calls arrive in a deterministic order.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

use model::index::RowKey;
use model::Image;

use super::{RowGuard, RowOutcome, RowWrite, SetChange, SetOutcome, SetStamp, Store, StoreError};

/// One call, as the script sees it.
#[derive(Debug, Clone, Copy)]
pub enum Call<'a> {
    WriteRows(&'a [RowWrite]),
    UpdateSet {
        edge_set: usize,
        node: &'a str,
        change: &'a SetChange,
    },
    Query {
        table: &'a str,
        partition: &'a str,
    },
    SetMarker {
        edge_set: usize,
        node: &'a str,
        complete: bool,
    },
}

impl Call<'_> {
    /// A hash of the call's content: a resend of the same request has the same one.
    pub fn fingerprint(&self) -> u64 {
        let mut h = DefaultHasher::new();
        match self {
            Call::WriteRows(writes) => {
                0u8.hash(&mut h);
                for w in *writes {
                    (w.index, &w.key, w.put.is_some()).hash(&mut h);
                }
            }
            Call::UpdateSet { edge_set, node, change } => {
                1u8.hash(&mut h);
                (edge_set, node).hash(&mut h);
                match change {
                    SetChange::Add(m) => (0u8, m).hash(&mut h),
                    SetChange::Remove(m) => (1u8, m).hash(&mut h),
                }
            }
            Call::Query { table, partition } => (2u8, table, partition).hash(&mut h),
            Call::SetMarker {
                edge_set,
                node,
                complete,
            } => (3u8, edge_set, node, complete).hash(&mut h),
        }
        h.finish()
    }

    fn owned(&self) -> CallLog {
        match self {
            Call::WriteRows(writes) => CallLog::WriteRows(
                writes
                    .iter()
                    .map(|w| (w.index, w.key.clone(), w.put.is_some()))
                    .collect(),
            ),
            Call::UpdateSet { edge_set, node, change } => CallLog::UpdateSet {
                edge_set: *edge_set,
                node: (*node).to_owned(),
                change: (*change).clone(),
            },
            Call::Query { table, partition } => CallLog::Query {
                table: (*table).to_owned(),
                partition: (*partition).to_owned(),
            },
            Call::SetMarker {
                edge_set,
                node,
                complete,
            } => CallLog::SetMarker {
                edge_set: *edge_set,
                node: (*node).to_owned(),
                complete: *complete,
            },
        }
    }
}

/// What to do with one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Pass it through.
    None,
    /// Fail with `Transient` without doing anything (throttling, a 5xx).
    Throttle,
    /// Do the request, then fail with `Transient` (a timeout after it landed).
    TimeoutAfter,
    /// `write_rows` only: do all writes but those at these positions, and
    /// return those as unprocessed. Other calls pass through.
    Unprocessed(Vec<usize>),
    /// Fail with `Refused` without doing anything.
    Refused(String),
    /// Fail with `Deployment` without doing anything.
    Deployment(String),
}

/// Decides the fault of each call.
pub trait Script: Send {
    fn fault(&mut self, call: &Call<'_>) -> Fault;
}

impl<F: FnMut(&Call<'_>) -> Fault + Send> Script for F {
    fn fault(&mut self, call: &Call<'_>) -> Fault {
        self(call)
    }
}

/// Random faults from a seeded RNG, with rates per kind. The same request
/// (same [`Call::fingerprint`]) never gets more than `max_consecutive` faults
/// in a row, so with `max_consecutive` below the executor's attempts every
/// request eventually succeeds; unprocessed results always let at least one
/// write through.
#[derive(Debug, Clone)]
pub struct RandomFaults {
    rng: fastrand::Rng,
    pub throttle: f64,
    pub timeout: f64,
    pub unprocessed: f64,
    pub refused: f64,
    pub max_consecutive: u32,
    streaks: HashMap<u64, u32>,
}

impl RandomFaults {
    /// No faults until rates are set.
    pub fn new(seed: u64) -> RandomFaults {
        RandomFaults {
            rng: fastrand::Rng::with_seed(seed),
            throttle: 0.0,
            timeout: 0.0,
            unprocessed: 0.0,
            refused: 0.0,
            max_consecutive: 2,
            streaks: HashMap::new(),
        }
    }

    /// Throttling, timeouts and unprocessed items at these rates; no refusals.
    pub fn transient(seed: u64, throttle: f64, timeout: f64, unprocessed: f64, max_consecutive: u32) -> RandomFaults {
        RandomFaults {
            throttle,
            timeout,
            unprocessed,
            max_consecutive,
            ..RandomFaults::new(seed)
        }
    }
}

impl Script for RandomFaults {
    fn fault(&mut self, call: &Call<'_>) -> Fault {
        let fingerprint = call.fingerprint();
        let streak = self.streaks.get(&fingerprint).copied().unwrap_or(0);
        if streak >= self.max_consecutive {
            self.streaks.remove(&fingerprint);
            return Fault::None;
        }
        let draw = self.rng.f64();
        let throttle = self.throttle;
        let timeout = throttle + self.timeout;
        let unprocessed = timeout + self.unprocessed;
        let refused = unprocessed + self.refused;
        let fault = if draw < throttle {
            Fault::Throttle
        } else if draw < timeout {
            Fault::TimeoutAfter
        } else if draw < unprocessed {
            match call {
                Call::WriteRows(writes) if writes.len() > 1 => {
                    let keep = self.rng.usize(0..writes.len());
                    let left: Vec<usize> = (0..writes.len()).filter(|&i| i != keep && self.rng.bool()).collect();
                    if left.is_empty() {
                        Fault::None
                    } else {
                        Fault::Unprocessed(left)
                    }
                }
                _ => Fault::None,
            }
        } else if draw < refused {
            Fault::Refused("injected refusal".to_owned())
        } else {
            Fault::None
        };
        if fault == Fault::None {
            self.streaks.remove(&fingerprint);
        } else {
            self.streaks.insert(fingerprint, streak + 1);
        }
        fault
    }
}

/// One call as made (for assertions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallLog {
    /// `(index, key, is_put)` per write.
    WriteRows(Vec<(usize, RowKey, bool)>),
    UpdateSet {
        edge_set: usize,
        node: String,
        change: SetChange,
    },
    Query {
        table: String,
        partition: String,
    },
    SetMarker {
        edge_set: usize,
        node: String,
        complete: bool,
    },
}

/// What the wrapper saw and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultLog {
    /// Every call with the fault injected, in order.
    pub calls: Vec<(CallLog, Fault)>,
}

impl FaultLog {
    /// How many calls got a fault other than `None`.
    pub fn injected(&self) -> usize {
        self.calls.iter().filter(|(_, f)| *f != Fault::None).count()
    }
}

/// A [`Store`] that injects the faults its [`Script`] decides.
pub struct FaultyStore<S> {
    inner: S,
    script: Mutex<Box<dyn Script>>,
    log: Mutex<FaultLog>,
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<S: Store> FaultyStore<S> {
    pub fn new(inner: S, script: impl Script + 'static) -> FaultyStore<S> {
        FaultyStore {
            inner,
            script: Mutex::new(Box::new(script)),
            log: Mutex::new(FaultLog::default()),
        }
    }

    /// Replaces the script.
    pub fn set_script(&self, script: impl Script + 'static) {
        *lock(&self.script) = Box::new(script);
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The calls so far.
    pub fn log(&self) -> FaultLog {
        lock(&self.log).clone()
    }

    /// Takes the calls so far.
    pub fn take_log(&self) -> FaultLog {
        std::mem::take(&mut *lock(&self.log))
    }

    fn decide(&self, call: Call<'_>) -> Fault {
        let fault = lock(&self.script).fault(&call);
        lock(&self.log).calls.push((call.owned(), fault.clone()));
        fault
    }
}

fn injected<T>(fault: &Fault) -> Option<Result<T, StoreError>> {
    match fault {
        Fault::Throttle => Some(Err(StoreError::transient("injected throttling".to_owned()))),
        Fault::Refused(message) => Some(Err(StoreError::refused(message.clone()))),
        Fault::Deployment(message) => Some(Err(StoreError::deployment(message.clone()))),
        Fault::None | Fault::TimeoutAfter | Fault::Unprocessed(_) => None,
    }
}

fn timeout<T>(fault: &Fault, result: Result<T, StoreError>) -> Result<T, StoreError> {
    match (fault, result) {
        (Fault::TimeoutAfter, Ok(_)) => Err(StoreError::transient(
            "injected timeout (the request landed)".to_owned(),
        )),
        (_, result) => result,
    }
}

impl<S: Store> Store for FaultyStore<S> {
    async fn write_rows(&self, writes: &[RowWrite]) -> Result<Vec<RowWrite>, StoreError> {
        let fault = self.decide(Call::WriteRows(writes));
        if let Some(result) = injected(&fault) {
            return result;
        }
        let (send, mut left) = match &fault {
            Fault::Unprocessed(positions) => {
                let mut send = Vec::new();
                let mut left = Vec::new();
                for (i, w) in writes.iter().enumerate() {
                    if positions.contains(&i) {
                        left.push(w.clone());
                    } else {
                        send.push(w.clone());
                    }
                }
                (std::borrow::Cow::Owned(send), left)
            }
            _ => (std::borrow::Cow::Borrowed(writes), Vec::new()),
        };
        if send.is_empty() {
            return Ok(left);
        }
        let result = self.inner.write_rows(&send).await.map(|mut unprocessed| {
            unprocessed.append(&mut left);
            unprocessed
        });
        timeout(&fault, result)
    }

    async fn put_row_if(&self, write: &RowWrite, guard: &RowGuard) -> Result<RowOutcome, StoreError> {
        let fault = self.decide(Call::WriteRows(std::slice::from_ref(write)));
        if let Some(result) = injected(&fault) {
            return result;
        }
        timeout(&fault, self.inner.put_row_if(write, guard).await)
    }

    async fn update_set_stamped(
        &self,
        edge_set: usize,
        node: &str,
        change: &SetChange,
        stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        let fault = self.decide(Call::UpdateSet { edge_set, node, change });
        if let Some(result) = injected(&fault) {
            return result;
        }
        timeout(
            &fault,
            self.inner.update_set_stamped(edge_set, node, change, stamp).await,
        )
    }

    async fn query_partition(&self, table: &str, partition: &str) -> Result<Vec<Image>, StoreError> {
        let fault = self.decide(Call::Query { table, partition });
        if let Some(result) = injected(&fault) {
            return result;
        }
        timeout(&fault, self.inner.query_partition(table, partition).await)
    }

    async fn set_marker_stamped(
        &self,
        edge_set: usize,
        node: &str,
        complete: bool,
        stamp: SetStamp<'_>,
    ) -> Result<SetOutcome, StoreError> {
        let fault = self.decide(Call::SetMarker {
            edge_set,
            node,
            complete,
        });
        if let Some(result) = injected(&fault) {
            return result;
        }
        timeout(
            &fault,
            self.inner.set_marker_stamped(edge_set, node, complete, stamp).await,
        )
    }
}
