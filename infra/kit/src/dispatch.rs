//! Sending a batch's packed calls (`model::pack`) in the order their
//! dependencies allow (`model::schedule`): a call goes once every call it
//! depends on has succeeded, lowest first, at most `concurrency` at a time.
//! A call whose dependency failed is never sent. Used for the indexer's
//! BatchWriteItem calls and the router's PutEvents calls.

use std::future::Future;

use futures::stream::{FuturesUnordered, StreamExt};
use model::schedule::Schedule;

/// Sends calls `0..after.len()` (`after[i]`: the earlier calls call `i`
/// waits for) with `send(i)`, which answers the call's result and whether it
/// succeeded. Returns each call's result, `None` for a call never sent.
pub async fn dispatch<'a, R, F, Fut>(
    after: impl ExactSizeIterator<Item = &'a [usize]>,
    concurrency: usize,
    mut send: F,
) -> Vec<Option<R>>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = (R, bool)>,
{
    let mut results: Vec<Option<R>> = std::iter::repeat_with(|| None).take(after.len()).collect();
    let mut schedule = Schedule::new(after);
    let mut in_flight = FuturesUnordered::new();
    loop {
        while in_flight.len() < concurrency.max(1) {
            let Some(i) = schedule.pop_ready() else { break };
            let call = send(i);
            in_flight.push(async move { (i, call.await) });
        }
        let Some((i, (result, succeeded))) = in_flight.next().await else {
            break;
        };
        if succeeded {
            schedule.succeeded(i);
        }
        if let Some(slot) = results.get_mut(i) {
            *slot = Some(result);
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_call_holds_back_what_depends_on_it() {
        let after: Vec<Vec<usize>> = vec![vec![], vec![0], vec![], vec![1, 2]];
        let sent = std::cell::RefCell::new(Vec::new());
        let results = futures::executor::block_on(dispatch(after.iter().map(Vec::as_slice), 2, |i| {
            sent.borrow_mut().push(i);
            async move { (i * 10, i != 1) }
        }));
        assert_eq!(*sent.borrow(), [0, 2, 1], "3 waits for 1, which failed");
        assert_eq!(results, [Some(0), Some(10), Some(20), None]);
    }
}
