//! A lane's queue: member changes coalesced into requests of alternating kind (ADD, DELETE, ...) as order allows, chunked to request size.

use super::*;

/// One member of a pending request.
pub(super) struct Member {
    pub(super) text: String,
    /// The records whose member changes asked for it.
    pub(super) records: Vec<usize>,
    /// Whether the request's restore found it.
    pub(super) restored: bool,
}

/// One pending set request: distinct members.
pub(super) struct SetRequest {
    pub(super) kind: SetKind,
    pub(super) members: Vec<Member>,
    pub(super) positions: HashMap<String, usize>,
    /// The record whose restore's ADD this request carries. Such a request
    /// goes out even without members (the marker only).
    pub(super) restore: Option<usize>,
}

impl SetRequest {
    pub(super) fn new(kind: SetKind) -> SetRequest {
        SetRequest {
            kind,
            members: Vec::new(),
            positions: HashMap::new(),
            restore: None,
        }
    }

    pub(super) fn entry(&mut self, member: String) -> &mut Member {
        let at = match self.positions.get(&member) {
            Some(&at) => at,
            None => {
                self.positions.insert(member.clone(), self.members.len());
                self.members.push(Member {
                    text: member,
                    records: Vec::new(),
                    restored: false,
                });
                self.members.len() - 1
            }
        };
        &mut self.members[at]
    }
}

/// The pending member changes of one node (see the parent module's doc).
#[derive(Default)]
pub(super) struct SetQueue {
    pub(super) target: Option<(usize, String)>,
    pub(super) requests: Vec<SetRequest>,
    /// Member → the last request touching it.
    pub(super) last_touch: HashMap<String, usize>,
    /// The last record queued and the request its last change went to.
    pub(super) last_record: Option<(usize, usize)>,
}

impl SetQueue {
    pub(super) fn push(&mut self, kind: SetKind, member: String, record: usize) {
        let member_floor = self.last_touch.get(&member).copied();
        let record_floor = self.last_record.filter(|(r, _)| *r == record).map(|(_, at)| at);
        let floor = member_floor.max(record_floor);
        // Kinds alternate, so the earliest request of `kind` at or after the
        // floor is the floor itself or the one after it.
        let found = match floor {
            Some(f) => (f..self.requests.len().min(f + 2)).find(|&i| self.requests[i].kind == kind),
            None => self.requests.iter().take(2).position(|r| r.kind == kind),
        };
        let at = match found {
            Some(at) => at,
            None => {
                self.requests.push(SetRequest::new(kind));
                self.requests.len() - 1
            }
        };
        debug_assert!(self.requests.windows(2).all(|w| w[0].kind != w[1].kind));
        self.requests[at].entry(member.clone()).records.push(record);
        self.last_touch.insert(member, at);
        self.last_record = Some((record, at));
    }

    /// Opens the (empty) queue with the ADD of a restore: the members found.
    pub(super) fn push_restore(&mut self, record: usize, members: Vec<String>) {
        debug_assert!(self.requests.is_empty(), "a restore follows a flush");
        let mut request = SetRequest::new(SetKind::Add);
        request.restore = Some(record);
        for member in members {
            self.last_touch.insert(member.clone(), 0);
            request.entry(member).restored = true;
        }
        self.requests.push(request);
        self.last_record = Some((record, 0));
    }

    pub(super) fn take(&mut self) -> Option<((usize, String), Vec<SetRequest>)> {
        self.last_touch.clear();
        self.last_record = None;
        let requests = std::mem::take(&mut self.requests);
        self.target.take().map(|target| (target, requests))
    }
}

/// How many parts a refused chunk splits into to find the culprit: each
/// member some record asked for, and the members only a restore found.
pub(super) fn culprits(chunk: &[Member]) -> usize {
    let asked = chunk.iter().filter(|m| !m.records.is_empty()).count();
    asked + usize::from(asked < chunk.len())
}

/// Splits members into request-sized chunks.
pub(in crate::apply) fn chunks<T>(members: Vec<T>, text: impl Fn(&T) -> &str) -> VecDeque<Vec<T>> {
    let mut out = VecDeque::new();
    let mut chunk = Vec::new();
    let mut bytes = 0;
    for member in members {
        let size = text(&member).len();
        if !chunk.is_empty() && (chunk.len() >= MAX_MEMBERS_PER_UPDATE || bytes + size > MAX_MEMBER_BYTES_PER_UPDATE) {
            out.push_back(std::mem::take(&mut chunk));
            bytes = 0;
        }
        bytes += size;
        chunk.push(member);
    }
    if !chunk.is_empty() {
        out.push_back(chunk);
    }
    out
}
