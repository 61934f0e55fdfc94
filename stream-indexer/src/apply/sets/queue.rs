//! A lane's queue: member changes coalesced into requests of alternating kind (ADD, DELETE, ...) as order allows, chunked to request size.

use std::hash::BuildHasher;

use hashbrown::hash_table::{Entry, HashTable};
use smallvec::SmallVec;

use super::*;

/// One member of a pending request.
pub(super) struct Member {
    pub(super) text: String,
    /// The records whose member changes asked for it: nearly always one.
    pub(super) records: SmallVec<[usize; 1]>,
    /// Whether the request's restore found it.
    pub(super) restored: bool,
}

/// One pending set request: distinct members.
pub(super) struct SetRequest {
    pub(super) kind: SetKind,
    pub(super) members: Vec<Member>,
    /// The record whose restore's ADD this request carries. Such a request
    /// goes out even without members (the marker only).
    pub(super) restore: Option<usize>,
}

impl SetRequest {
    pub(super) fn new(kind: SetKind) -> SetRequest {
        SetRequest {
            kind,
            members: Vec::new(),
            restore: None,
        }
    }
}

/// Where a member was last touched: its request, and its place among that
/// request's members. A member's next change goes to that request or a
/// later one, so that request is the only one where it may already have a
/// place.
#[derive(Clone, Copy)]
pub(super) struct Touch {
    request: usize,
    place: usize,
}

/// Up to this many distinct members, a queue finds a member's touch by
/// comparing texts; past it, by a hash table. Most queues hold a member or
/// two (one node's changes in one batch): for them, hashing every member
/// and filling a table cost more than the comparisons.
const SCANNED: usize = 8;

/// Member texts to where they were last touched: one map per queue, none
/// per request. It holds the places alone: a member's text is read from its
/// place, so it is not copied into the map.
#[derive(Default)]
struct Touches {
    /// Each member's touch, while there are at most [`SCANNED`] members.
    few: SmallVec<[Touch; 2]>,
    /// Past that, each member's touch by the hash of its text (`few` then
    /// empty). Touches are never removed but all at once, so the table is
    /// in use exactly when it is not empty.
    places: HashTable<Touch>,
    /// foldhash (randomly seeded, as the memory store's maps), not SipHash:
    /// every set change of a large queue passes here.
    hasher: foldhash::fast::RandomState,
}

impl Touches {
    /// Whether the touches are in `places` (see there).
    fn hashed(&self) -> bool {
        !self.places.is_empty()
    }

    /// `member`'s hash, for [`Touches::get`] and [`Touches::set`] (a
    /// member looked up and then added is hashed once); `None` while the
    /// touches are few, and found by comparing texts.
    fn hash(&self, member: &str) -> Option<u64> {
        self.hashed().then(|| self.hasher.hash_one(member))
    }

    fn get(&self, requests: &[SetRequest], member: &str, hash: Option<u64>) -> Option<Touch> {
        match hash {
            Some(hash) => self.places.find(hash, |&t| text_at(requests, t) == Some(member)),
            None => self.few.iter().find(|&&t| text_at(requests, t) == Some(member)),
        }
        .copied()
    }

    /// Sets `member`'s touch to `touch` (a new place of it in `requests`).
    fn set(&mut self, requests: &[SetRequest], member: &str, hash: Option<u64>, touch: Touch) {
        let hasher = &self.hasher;
        let hash = self.hashed().then(|| hash.unwrap_or_else(|| hasher.hash_one(member)));
        let Some(hash) = hash else {
            match self.few.iter_mut().find(|t| text_at(requests, **t) == Some(member)) {
                Some(at) => *at = touch,
                None => self.few.push(touch),
            }
            if self.few.len() > SCANNED {
                for t in self.few.drain(..) {
                    let hash = hasher.hash_one(text_at(requests, t).unwrap_or_default());
                    self.places
                        .insert_unique(hash, t, |&t| hasher.hash_one(text_at(requests, t).unwrap_or_default()));
                }
            }
            return;
        };
        match self.places.entry(
            hash,
            |&t| text_at(requests, t) == Some(member),
            |&t| hasher.hash_one(text_at(requests, t).unwrap_or_default()),
        ) {
            Entry::Occupied(mut at) => *at.get_mut() = touch,
            Entry::Vacant(at) => {
                at.insert(touch);
            }
        }
    }

    fn clear(&mut self) {
        self.few.clear();
        self.places.clear();
    }
}

/// The text of the member at `touch`.
fn text_at(requests: &[SetRequest], touch: Touch) -> Option<&str> {
    let member = requests.get(touch.request)?.members.get(touch.place)?;
    Some(member.text.as_str())
}

/// The pending member changes of one node (see the parent module's doc).
#[derive(Default)]
pub(super) struct SetQueue {
    pub(super) target: Option<(usize, String)>,
    pub(super) requests: Vec<SetRequest>,
    /// Member → where it was last touched.
    last_touch: Touches,
    /// The last record queued and the request its last change went to.
    pub(super) last_record: Option<(usize, usize)>,
}

impl SetQueue {
    pub(super) fn push(&mut self, kind: SetKind, member: String, record: usize) {
        let hash = self.last_touch.hash(&member);
        let touched = self.last_touch.get(&self.requests, &member, hash);
        let member_floor = touched.map(|t| t.request);
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
        self.last_record = Some((record, at));
        match touched {
            Some(t) if t.request == at => self.requests[at].members[t.place].records.push(record),
            _ => self.add(at, member, hash, Some(record)),
        }
    }

    /// Opens the (empty) queue with the ADD of a restore: the members found.
    pub(super) fn push_restore(&mut self, record: usize, members: Vec<String>) {
        debug_assert!(self.requests.is_empty(), "a restore follows a flush");
        let mut request = SetRequest::new(SetKind::Add);
        request.restore = Some(record);
        self.requests.push(request);
        for member in members {
            // Found twice: once is enough.
            let hash = self.last_touch.hash(&member);
            if self.last_touch.get(&self.requests, &member, hash).is_none() {
                self.add(0, member, hash, None);
            }
        }
        self.last_record = Some((record, 0));
    }

    /// Adds `member` to request `at`, where it has no place yet: asked for
    /// by `record`, or (`None`) found by the request's restore. `hash` is
    /// the member's ([`Touches::hash`]).
    fn add(&mut self, at: usize, member: String, hash: Option<u64>, record: Option<usize>) {
        let Some(request) = self.requests.get_mut(at) else {
            // `at` is always a request of the queue (the callers just made
            // or found it); dropping a member would lose a set change.
            debug_assert!(false, "no request {at} in a queue of {}", self.requests.len());
            return;
        };
        let place = request.members.len();
        request.members.push(Member {
            text: member,
            records: record.into_iter().collect(),
            restored: record.is_none(),
        });
        let touch = Touch { request: at, place };
        let requests = &self.requests;
        if let Some(text) = text_at(requests, touch) {
            self.last_touch.set(requests, text, hash, touch);
        }
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
pub(in crate::apply) fn chunks<T>(members: Vec<T>, text: impl Fn(&T) -> &str, most: usize) -> VecDeque<Vec<T>> {
    let mut out = VecDeque::new();
    let fits =
        members.len() <= most && members.iter().map(|m| text(m).len()).sum::<usize>() <= MAX_MEMBER_BYTES_PER_UPDATE;
    if fits {
        // The common case: one chunk, the members as they came.
        if !members.is_empty() {
            out.push_back(members);
        }
        return out;
    }
    let mut chunk = Vec::new();
    let mut bytes = 0;
    for member in members {
        let size = text(&member).len();
        if !chunk.is_empty() && (chunk.len() >= most || bytes + size > MAX_MEMBER_BYTES_PER_UPDATE) {
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    fn apply(set: &mut BTreeSet<String>, kind: SetKind, member: &str) {
        match kind {
            SetKind::Add => set.insert(member.to_owned()),
            SetKind::Remove => set.remove(member),
        };
    }

    fn kind(add: bool) -> SetKind {
        if add {
            SetKind::Add
        } else {
            SetKind::Remove
        }
    }

    #[test]
    fn a_member_a_restore_finds_twice_is_added_once() {
        let mut queue = SetQueue::default();
        queue.push_restore(0, vec!["a".to_owned(), "b".to_owned(), "a".to_owned()]);
        let texts: Vec<&str> = queue.requests[0].members.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, ["a", "b"]);
    }

    proptest! {
        /// Whatever the changes, the queued requests alternate in kind, hold
        /// each member once, carry every change's record, and leave a set
        /// as the restore and the changes one by one leave it.
        #[test]
        fn the_requests_leave_the_set_the_changes_leave(
            // Up to 30 distinct members: queues of a few members (found by
            // comparing texts) and of many (found by hash).
            start in prop::collection::btree_set("m[01]?[0-9]", 0..6),
            restore in prop::option::of(prop::collection::vec("m[01]?[0-9]", 0..12)),
            changes in prop::collection::vec((any::<bool>(), "m[01]?[0-9]", 0usize..4), 0..40),
        ) {
            let mut queue = SetQueue::default();
            let mut expected = start.clone();
            if let Some(found) = &restore {
                queue.push_restore(99, found.clone());
                found.iter().for_each(|m| apply(&mut expected, SetKind::Add, m));
            }
            for (add, member, record) in &changes {
                queue.push(kind(*add), member.clone(), *record);
                apply(&mut expected, kind(*add), member);
            }

            let mut got = start;
            for pair in queue.requests.windows(2) {
                prop_assert!(pair[0].kind != pair[1].kind);
            }
            let mut carried = Vec::new();
            for request in &queue.requests {
                let distinct: BTreeSet<&str> = request.members.iter().map(|m| m.text.as_str()).collect();
                prop_assert_eq!(distinct.len(), request.members.len());
                for member in &request.members {
                    apply(&mut got, request.kind, &member.text);
                    carried.extend(member.records.iter().map(|&r| (r, member.text.clone())));
                }
            }
            prop_assert_eq!(got, expected);
            let mut asked: Vec<(usize, String)> = changes.iter().map(|(_, m, r)| (*r, m.clone())).collect();
            asked.sort();
            carried.sort();
            prop_assert_eq!(carried, asked);
        }
    }
}
