//! Publishing: a batch's events packed into PutEvents calls
//! (`model::pack`), sent in the order their partition keys allow
//! (`aws_kit::dispatch`), each call's entries retried by the one retry
//! driver (`aws_kit::retry`) until published, refused or failed for good.

use aws_kit::dispatch::dispatch;
use aws_kit::quarantine::Quarantine;
use aws_kit::retry::{Partial, Resend};
use model::pack::{self, Limits, SameKey};
use model::{Class, Fault};

use super::{Fate, Pending, Router, RouterStats};
use crate::publish::{entry_class, Entry, EntryResult, Publisher, MAX_ENTRIES};

impl<P: Publisher, Q: Quarantine> Router<P, Q> {
    /// Sends the events: packed into calls, each call once the calls it
    /// depends on succeeded. One fate per event, in order.
    pub(super) async fn publish(&self, pending: &[Pending], stats: &mut RouterStats) -> Vec<Fate> {
        let limits = Limits {
            max_items: MAX_ENTRIES,
            max_bytes: self.config.events.max_request_bytes,
            same_key: SameKey::SameOrLater,
        };
        let calls = pack::pack(pending.iter().map(|p| (p.group as u64, p.size)), limits);
        let results = dispatch(
            calls.iter().map(|c| c.after.as_slice()),
            self.options.concurrency,
            |i| {
                let call = calls.get(i);
                async move {
                    let (call_stats, call_fates) = match call {
                        Some(call) => self.send_call(pending, &call.items).await,
                        None => (CallStats::default(), Vec::new()),
                    };
                    let succeeded = call_fates.iter().all(|(_, f)| !matches!(f, Fate::Unfinished(..)));
                    ((call_stats, call_fates), succeeded)
                }
            },
        )
        .await;
        let mut fates: Vec<Option<Fate>> = vec![None; pending.len()];
        for (call_stats, call_fates) in results.into_iter().flatten() {
            stats.calls += call_stats.calls;
            stats.retried += call_stats.retried;
            for (event, fate) in call_fates {
                if let Some(slot) = fates.get_mut(event) {
                    *slot = Some(fate);
                }
            }
        }
        // The events of calls never sent: an earlier event of their
        // partition key failed (its call, or one it waited for).
        fates
            .into_iter()
            .map(|fate| {
                fate.unwrap_or_else(|| {
                    Fate::Unfinished(Fault::transient(
                        "not sent: an earlier event of its partition key was not published",
                    ))
                })
            })
            .collect()
    }

    /// One call: its entries sent until each is published, refused, or
    /// failed for good.
    async fn send_call(&self, pending: &[Pending], events: &[usize]) -> (CallStats, Vec<(usize, Fate)>) {
        let mut stats = CallStats::default();
        let mut fates = Vec::with_capacity(events.len());
        // The entries of a call refused for its content, to send alone.
        let mut singles = Vec::new();
        let mut resend = Resend::new(&self.options.backoff, events.to_vec(), Vec::len);
        while let Some((attempt, left)) = resend.next_attempt() {
            if attempt > 0 {
                stats.retried += left.len();
            }
            let entries: Vec<&Entry> = left.iter().filter_map(|&e| pending.get(e).map(|p| &p.entry)).collect();
            stats.calls += 1;
            let sent = match self.publisher.put_events(&entries).await {
                Ok(results) => {
                    let mut again = Vec::new();
                    let mut last_code = String::new();
                    for (&e, result) in left.iter().zip(results) {
                        let EntryResult::Failed { code, message } = result else {
                            fates.push((e, Fate::Published));
                            continue;
                        };
                        let what = pending.get(e).map_or("?", |p| p.entry.detail_type.as_str());
                        let reason = format!("EventBridge failed the `{what}` event with {code}: {message}");
                        match entry_class(&code) {
                            Class::Transient => again.push(e),
                            Class::Refused => fates.push((e, Fate::Refused(Fault::refused(reason)))),
                            Class::Deployment => fates.push((e, Fate::Unfinished(Fault::deployment(reason)))),
                        }
                        last_code = code;
                    }
                    if again.is_empty() {
                        Partial::Done
                    } else {
                        let still = Fault::transient(format!("PutEvents entries still failing with {last_code}"));
                        Partial::Left(again, still)
                    }
                }
                Err(fault) if fault.is_refused() && left.len() > 1 => {
                    // The call was refused for its content: send each entry
                    // alone to find the culprit.
                    singles = left;
                    Partial::Done
                }
                Err(fault) if fault.is_refused() => {
                    let refused = fault.context("PutEvents refused");
                    fates.extend(left.into_iter().map(|e| (e, Fate::Refused(refused.clone()))));
                    Partial::Done
                }
                Err(fault) => Partial::Failed(left, fault),
            };
            resend.sent(sent).await;
        }
        if let Err((fault, left)) = resend.finish() {
            fates.extend(left.into_iter().map(|e| (e, Fate::Unfinished(fault.clone()))));
        }
        for e in singles {
            let (single_stats, single) = Box::pin(self.send_call(pending, &[e])).await;
            stats.calls += single_stats.calls;
            stats.retried += single_stats.retried;
            fates.extend(single);
        }
        (stats, fates)
    }
}

#[derive(Debug, Default)]
struct CallStats {
    calls: usize,
    retried: usize,
}
