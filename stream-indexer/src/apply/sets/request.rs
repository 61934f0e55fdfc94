//! Sending one queued request of a lane: in chunks that fit DynamoDB's
//! bounds, each stamped (see `mark`); a refused chunk of several records is
//! sent again record by record, to find the culprit and refuse it alone.

use std::collections::VecDeque;

use super::queue::{chunks, culprits, Member, SetRequest};
use super::{Lane, SetKind, MAX_MEMBERS_PER_UPDATE};
use crate::store::{SetOutcome, Store, StoreError};

/// At most this many members in one request of an edge set whose members
/// are versioned one by one (each is named twice in its expressions).
const MAX_VERSIONED_MEMBERS_PER_UPDATE: usize = 64;

impl<S: Store> Lane<'_, S> {
    /// Sends one queued request, in chunks; a refused chunk is split into
    /// single members to find the culprit.
    pub(super) async fn send_request(
        &mut self,
        edge_set: usize,
        node: &str,
        request: SetRequest,
    ) -> Result<(), StoreError> {
        let SetRequest { kind, members, restore } = request;
        let mut records: Vec<usize> = members.iter().flat_map(|m| m.records.iter().copied()).collect();
        records.extend(restore);
        records.sort_unstable();
        // Each member's version is named in the request's expressions,
        // which DynamoDB bounds (4 KB): fewer members per request.
        let most = if self.unordered(edge_set) {
            MAX_VERSIONED_MEMBERS_PER_UPDATE
        } else {
            MAX_MEMBERS_PER_UPDATE
        };
        let mut queue = chunks(members, |m| m.text.as_str(), most);
        if queue.is_empty() && restore.is_some() {
            queue.push_back(Vec::new()); // the marker only
        }
        let mut restore_refused = None;
        let mut stale = false;
        // Whether the next chunk sent is the request's first.
        let mut first = true;
        while let Some(mut chunk) = queue.pop_front() {
            // The members' texts are lent to the request, and given back
            // after it (a refused chunk is sent again, split).
            let change = kind.change(chunk.iter_mut().map(|m| std::mem::take(&mut m.text)).collect());
            let stamp = if std::mem::take(&mut first) && queue.is_empty() {
                // The whole request in one chunk (the common case): it
                // completes every record it holds.
                self.stamp(edge_set, node, &records, &records)
            } else {
                let mut completing: Vec<usize> = chunk.iter().flat_map(|m| m.records.iter().copied()).collect();
                if queue.is_empty() {
                    completing.extend(restore);
                }
                completing.sort_unstable();
                self.stamp(edge_set, node, &completing, &records)
            };
            let stamp = self.with_members(edge_set, stamp, &change, restore.is_some());
            let sent = self.send_set(edge_set, node, &change, stamp).await;
            for (member, text) in chunk.iter_mut().zip(change.into_members()) {
                member.text = text;
            }
            match sent {
                Ok(outcome) => {
                    stale |= outcome == SetOutcome::Stale;
                    self.sent(kind, outcome, &chunk);
                }
                Err(error) if error.is_refused() && culprits(&chunk) > 1 => split(chunk, &mut queue),
                Err(error) if error.is_refused() => {
                    if chunk.is_empty() || chunk.iter().any(|m| m.restored) {
                        restore_refused.get_or_insert_with(|| error.clone());
                    }
                    self.refuse_chunk(edge_set, node, kind, &chunk, &error);
                }
                Err(error) => return Err(error),
            }
        }
        if let Some(record) = restore {
            self.restored(edge_set, node, record, restore_refused, stale);
        }
        Ok(())
    }

    /// A chunk's update went through with `outcome`: its records are done.
    fn sent(&mut self, kind: SetKind, outcome: SetOutcome, chunk: &[Member]) {
        self.count_outcome(outcome);
        for record in chunk.iter().flat_map(|m| m.records.iter().copied()) {
            self.done(record);
            match (kind, outcome) {
                (_, SetOutcome::Stale) => {}
                (SetKind::Add, _) => self.progress.stats.applied.add_member += 1,
                (SetKind::Remove, _) => self.progress.stats.applied.remove_member += 1,
            }
        }
    }

    /// A chunk of one culprit was refused: each of its records is.
    fn refuse_chunk(&mut self, edge_set: usize, node: &str, kind: SetKind, chunk: &[Member], error: &StoreError) {
        for record in chunk.iter().flat_map(|m| m.records.iter().copied()) {
            let context = format!(
                "edge set `{}` of node {node:?}: {} of a member refused",
                self.set_name(edge_set),
                kind.name()
            );
            self.refuse(record, error.clone().context(context));
        }
    }

    /// The restore `record` of a request is done, or refused with the error
    /// that refused its chunk; a stale request restored nothing.
    fn restored(&mut self, edge_set: usize, node: &str, record: usize, refused: Option<StoreError>, stale: bool) {
        match refused {
            None => {
                self.done(record);
                if !stale {
                    self.progress.stats.applied.restore_set += 1;
                }
            }
            Some(error) => {
                let context = format!(
                    "edge set `{}`: restore of node {node:?} refused",
                    self.set_name(edge_set)
                );
                self.refuse(record, error.context(context));
            }
        }
    }
}

/// A refused chunk of several culprits, sent again as each record's
/// member alone; the members only the restore asked for stay together (the
/// restore is one mutation: refused as a whole, as it was planned).
fn split(chunk: Vec<Member>, queue: &mut VecDeque<Vec<Member>>) {
    let (restored, singles): (Vec<Member>, Vec<Member>) = chunk.into_iter().partition(|m| m.records.is_empty());
    for single in singles.into_iter().rev() {
        queue.push_front(vec![single]);
    }
    if !restored.is_empty() {
        queue.push_front(restored);
    }
}
