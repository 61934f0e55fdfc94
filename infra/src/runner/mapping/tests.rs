//! The ESM rules, checked on simulated shards: records some of which are
//! poison (they fail every time) or fail transiently a few times, a
//! function that reports them as Lambda's `ReportBatchItemFailures` or by
//! failing as a whole, and every combination of batch size, bisect and
//! retries.

use super::*;
use proptest::prelude::*;

fn settings(batch_size: usize, bisect: bool, retries: Option<u32>) -> Settings {
    Settings {
        batch_size,
        window_ms: 0,
        max_retry_attempts: retries,
        max_record_age_ms: None,
        bisect_on_error: bisect,
    }
}

fn fresh(n: usize) -> Vec<Candidate> {
    vec![
        Candidate {
            created_ms: Some(0),
            read_ms: 0
        };
        n
    ]
}

/// How the simulated function answers.
#[derive(Debug, Clone, Copy)]
enum Report {
    /// `batchItemFailures` with the first failing record.
    Items,
    /// A function error for any failure.
    Whole,
}

/// What became of each record, and every invocation (start, size).
#[derive(Debug, Default)]
struct Run {
    acknowledged: Vec<usize>,
    discarded: Vec<(Vec<usize>, Condition)>,
    invocations: Vec<(usize, usize)>,
    /// Per record, the invocations it failed in while it was the batch's only record.
    failed_alone: Vec<u32>,
}

/// Drives a mapping over `n` records to the end. `poison[r]`: record r
/// always fails; `transient[r]`: it fails its first that many invocations.
fn simulate(s: &Settings, report: Report, poison: &[bool], transient: &[u32]) -> Run {
    let n = poison.len();
    let mut left_transient = transient.to_vec();
    let mut state = MappingState::default();
    let mut front = 0;
    let mut run = Run {
        failed_alone: vec![0; n],
        ..Run::default()
    };
    let buffer = fresh(n);
    for _ in 0..100_000 {
        match state.next(&buffer[front..], s, 0, false) {
            Step::Wait => {
                assert_eq!(front, n, "waits only when nothing is left");
                return run;
            }
            Step::Discard(d) => {
                assert!(d.count >= 1 && front + d.count <= n);
                run.discarded.push(((front..front + d.count).collect(), d.condition));
                state.discarded(d.count);
                front += d.count;
            }
            Step::Invoke(k) => {
                assert!(k >= 1 && k <= s.batch_size && front + k <= n, "batch of {k}");
                run.invocations.push((front, k));
                let mut failing = None;
                for r in front..front + k {
                    let fails = poison[r] || left_transient[r] > 0;
                    if left_transient[r] > 0 {
                        left_transient[r] -= 1;
                    }
                    if fails && failing.is_none() {
                        failing = Some(r - front);
                    }
                }
                let outcome = match (failing, report) {
                    (None, _) => Outcome::Success,
                    (Some(i), Report::Items) => Outcome::FailedAt(i),
                    (Some(_), Report::Whole) => Outcome::FailedAt(0),
                };
                if k == 1 && failing.is_some() {
                    run.failed_alone[front] += 1;
                }
                let done = state.settle(k, outcome, s);
                let expected = match outcome {
                    Outcome::Success => k,
                    Outcome::FailedAt(i) => i,
                };
                assert_eq!(done, expected, "done records follow the response");
                run.acknowledged.extend(front..front + done);
                front += done;
            }
        }
    }
    panic!("the mapping did not finish: {state:?} at {front} of {n}");
}

fn records() -> impl Strategy<Value = (Vec<bool>, Vec<u32>)> {
    (1usize..60).prop_flat_map(|n| {
        (
            proptest::collection::vec(proptest::bool::weighted(0.1), n),
            proptest::collection::vec(prop_oneof![6 => Just(0u32), 1 => 1u32..4], n),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Whatever the settings: every record ends acknowledged or discarded,
    /// never both, in stream order; poison is never acknowledged; each
    /// invocation starts at the first record not yet dealt with.
    #[test]
    fn every_record_is_dealt_with_once_in_order(
        (poison, transient) in records(),
        batch_size in 1usize..12,
        bisect in any::<bool>(),
        items in any::<bool>(),
        retries in 0u32..4,
    ) {
        let s = settings(batch_size, bisect, Some(retries));
        let report = if items { Report::Items } else { Report::Whole };
        let run = simulate(&s, report, &poison, &transient);
        let mut fate: Vec<Option<bool>> = vec![None; poison.len()];
        for r in &run.acknowledged {
            prop_assert!(fate[*r].is_none(), "record {} twice", r);
            fate[*r] = Some(true);
        }
        for (range, _) in &run.discarded {
            for r in range {
                prop_assert!(fate[*r].is_none(), "record {} twice", r);
                fate[*r] = Some(false);
            }
        }
        prop_assert!(fate.iter().all(Option::is_some), "a record was left behind: {:?}", fate);
        for (r, p) in poison.iter().enumerate() {
            if *p {
                prop_assert_eq!(fate[r], Some(false), "poison {} was acknowledged", r);
            }
        }
        // In order: acknowledged and discarded records, merged, are 0..n.
        let mut order: Vec<usize> = run.acknowledged.clone();
        order.extend(run.discarded.iter().flat_map(|(r, _)| r.iter().copied()));
        order.sort_unstable();
        prop_assert_eq!(order, (0..poison.len()).collect::<Vec<_>>());
        prop_assert!(run.discarded.iter().all(|(_, c)| *c == Condition::RetryAttemptsExhausted));
    }

    /// With bisect on, only records that fail alone are discarded, one at a
    /// time, after exactly `retries + 1` failed invocations of their own.
    #[test]
    fn bisection_discards_only_what_fails_alone(
        (poison, transient) in records(),
        batch_size in 1usize..12,
        items in any::<bool>(),
        retries in 0u32..4,
    ) {
        let s = settings(batch_size, true, Some(retries));
        let report = if items { Report::Items } else { Report::Whole };
        let run = simulate(&s, report, &poison, &transient);
        for (range, _) in &run.discarded {
            prop_assert_eq!(range.len(), 1, "a discard of several records: {:?}", range);
            let r = range[0];
            prop_assert!(poison[r] || transient[r] > retries, "record {} was discarded", r);
        }
        for (r, p) in poison.iter().enumerate() {
            if *p {
                prop_assert_eq!(run.failed_alone[r], retries + 1, "poison {}", r);
            }
        }
    }

    /// Without bisect, a function reporting items loses, with a poison
    /// record, exactly the records of its failed part; a record before the
    /// first poison is never lost; retries are spent per failure.
    #[test]
    fn without_bisect_the_failed_part_goes_together(
        (poison, _) in records(),
        batch_size in 1usize..12,
        retries in 0u32..4,
    ) {
        let s = settings(batch_size, false, Some(retries));
        let run = simulate(&s, Report::Items, &poison, &vec![0; poison.len()]);
        let first_poison = poison.iter().position(|p| *p);
        for (range, _) in &run.discarded {
            prop_assert!(poison[range[0]], "a discard starts at poison: {:?}", range);
            prop_assert!(range.len() <= batch_size);
        }
        if let Some(p) = first_poison {
            prop_assert!((0..p).all(|r| run.acknowledged.contains(&r)));
            // The invocations holding the first poison: the first try and `retries` retries.
            let tries = run.invocations.iter().filter(|(start, k)| *start <= p && p < start + k).count();
            prop_assert_eq!(tries, usize::try_from(retries).unwrap_or(0) + 1);
        } else {
            prop_assert!(run.discarded.is_empty());
            let sizes: Vec<usize> = run.invocations.iter().map(|(_, k)| *k).collect();
            prop_assert!(sizes.iter().rev().skip(1).all(|k| *k == batch_size), "full batches: {:?}", sizes);
        }
    }
}

#[test]
fn a_whole_batch_failure_is_bisected_without_spending_retries() {
    let s = settings(8, true, Some(0));
    let mut state = MappingState::default();
    let buffer = fresh(8);
    assert_eq!(state.next(&buffer, &s, 0, true), Step::Invoke(8));
    assert_eq!(state.settle(8, Outcome::FailedAt(0), &s), 0);
    assert_eq!(state.attempts(), 0);
    assert_eq!(state.next(&buffer, &s, 0, true), Step::Invoke(4));
    assert_eq!(state.settle(4, Outcome::Success, &s), 4);
    assert_eq!(
        state.next(&buffer[4..], &s, 0, true),
        Step::Invoke(4),
        "the second half"
    );
    // A failure reported at a record splits there.
    assert_eq!(state.settle(4, Outcome::FailedAt(3), &s), 3);
    assert_eq!(state.next(&buffer[7..], &s, 0, true), Step::Invoke(1));
    assert_eq!(state.settle(1, Outcome::FailedAt(0), &s), 0);
    assert_eq!(
        state.next(&buffer[7..], &s, 0, true),
        Step::Discard(Discard {
            count: 1,
            condition: Condition::RetryAttemptsExhausted,
            attempts: 1
        }),
        "no retries: the first failure alone gives up"
    );
    state.discarded(1);
    assert_eq!(state, MappingState::default());
}

#[test]
fn the_batching_window_holds_a_first_attempt_only() {
    let s = Settings {
        window_ms: 1000,
        ..settings(10, false, None)
    };
    let state = MappingState::default();
    let read_at = |ms| Candidate {
        created_ms: None,
        read_ms: ms,
    };
    let buffer = vec![read_at(5_000), read_at(5_500)];
    assert_eq!(state.next(&buffer, &s, 5_999, true), Step::Wait);
    assert_eq!(state.next(&buffer, &s, 6_000, true), Step::Invoke(2));
    assert_eq!(
        state.next(&buffer, &s, 5_000, false),
        Step::Invoke(2),
        "nothing more can come"
    );
    let full = vec![read_at(5_000); 10];
    assert_eq!(
        state.next(&full, &s, 5_000, true),
        Step::Invoke(10),
        "a full batch goes at once"
    );
    let mut retrying = MappingState::default();
    retrying.settle(2, Outcome::FailedAt(1), &s);
    assert_eq!(
        retrying.next(&buffer[1..], &s, 5_000, true),
        Step::Invoke(1),
        "a retry does not wait"
    );
}

#[test]
fn records_past_the_maximum_age_are_discarded_a_batch_at_a_time() {
    let s = Settings {
        max_record_age_ms: Some(60_000),
        ..settings(2, false, None)
    };
    let created = |ms| Candidate {
        created_ms: Some(ms),
        read_ms: 0,
    };
    let buffer = vec![created(0), created(1), created(2), created(50_000)];
    let state = MappingState::default();
    let discard = |count| {
        Step::Discard(Discard {
            count,
            condition: Condition::RecordAgeExceeded,
            attempts: 0,
        })
    };
    assert_eq!(state.next(&buffer, &s, 60_002, true), discard(2));
    assert_eq!(
        state.next(&buffer[2..], &s, 60_002, true),
        Step::Invoke(2),
        "60 s old is not older"
    );
    assert_eq!(state.next(&buffer[2..], &s, 60_003, true), discard(1));
    assert_eq!(state.next(&[created(0)], &s, 60_001, true), discard(1));
    assert_eq!(
        state.next(
            &[Candidate {
                created_ms: None,
                read_ms: 0
            }],
            &s,
            u64::MAX,
            true
        ),
        Step::Invoke(1),
        "no creation time: never too old"
    );
}

#[test]
fn settings_come_from_the_stack() {
    let s = Settings::of(&crate::stack::MappingSettings::of(model::filter::Consumer::Indexer));
    assert_eq!(s.batch_size, 1000);
    assert_eq!(s.window_ms, 0, "no batching window: a write reaches the index at once");
    assert_eq!(s.max_retry_attempts, Some(1000));
    assert_eq!(s.max_record_age_ms, Some(23 * 3600 * 1000));
    assert!(s.bisect_on_error);
    let windowed = crate::stack::MappingSettings {
        batching_window_seconds: 2,
        ..crate::stack::MappingSettings::of(model::filter::Consumer::Router)
    };
    assert_eq!(Settings::of(&windowed).window_ms, 2000);
}
