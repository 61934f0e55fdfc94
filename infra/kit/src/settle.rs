//! Settling a batch: the pure decision (`model::settlement::decide`) and
//! the one quarantine call it asks for.

use model::settlement::{decide, Handled, Settled};

use crate::quarantine::{Quarantine, QuarantineEntry};

/// Settles a batch (`records` in any order): which records failed, which
/// are quarantined now (in one call to `quarantine`, their entries naming
/// `consumer`), and where Lambda resumes. See `model::settlement`.
pub async fn settle<Q: Quarantine>(quarantine: &Q, consumer: &str, records: Vec<Handled<'_>>) -> Settled {
    let decision = decide(records);
    if decision.quarantine.is_empty() {
        return decision.quarantined();
    }
    let entries = decision
        .quarantine
        .iter()
        .filter_map(|&i| decision.records.get(i))
        .map(|r| QuarantineEntry {
            consumer: consumer.to_owned(),
            sequence_number: r.sequence_number.clone(),
            table: r.table.as_deref().map(str::to_owned),
            reason: r.poison.as_ref().map(ToString::to_string).unwrap_or_default(),
            cause: r.poison.as_ref().map(|p| p.kind().to_owned()),
            raw: r.raw.text().into_owned(),
        })
        .collect();
    match quarantine.put(entries).await {
        Ok(()) => decision.quarantined(),
        Err(fault) => decision.quarantine_failed(fault.context("quarantine failed: the records count as failed")),
    }
}

#[cfg(test)]
mod tests {
    use model::poison::{Cause, Poison};
    use model::record::RawJson;
    use model::settlement::Failed;
    use model::Fault;

    use super::*;
    use crate::quarantine::memory::MemoryQuarantine;

    fn poison(position: usize, seq: &str) -> Handled<'static> {
        Handled {
            position,
            sequence_number: Some(seq.to_owned()),
            table: Some("t".into()),
            group: None,
            raw: RawJson::Text(Box::leak(format!("{{\"n\":{position}}}").into_boxed_str())),
            poison: Some(Poison::new(
                None,
                Cause::Refused(Fault::refused(format!("bad {position}"))),
            )),
            unfinished: None,
        }
    }

    #[tokio::test]
    async fn poison_is_quarantined_whole_in_one_call() {
        let quarantine = MemoryQuarantine::new();
        let settled = settle(&quarantine, "c", vec![poison(1, "20"), poison(0, "10")]).await;
        assert_eq!(settled.failed, None);
        assert_eq!(quarantine.calls(), 1);
        let entries = quarantine.entries();
        let raws: Vec<&str> = entries.iter().map(|e| e.raw.as_str()).collect();
        assert_eq!(
            raws,
            [r#"{"n":0}"#, r#"{"n":1}"#],
            "in batch order, exactly as delivered"
        );
        assert!(entries.iter().all(|e| e.consumer == "c"));
        // The entry says why, in words and by the cause's kind.
        assert_eq!(entries[0].reason, "bad 0");
        assert!(entries.iter().all(|e| e.cause.as_deref() == Some("refused")));
        assert_eq!(settled.quarantined.len(), 2);
    }

    #[tokio::test]
    async fn a_failed_quarantine_fails_the_records() {
        let quarantine = MemoryQuarantine::new();
        quarantine.set_failing(true);
        let settled = settle(&quarantine, "c", vec![poison(0, "10")]).await;
        assert_eq!(settled.failed, Some(Failed::From("10".into())));
        assert!(settled.quarantined.is_empty());
        assert!(settled.failures[0].fault.message().starts_with("quarantine failed"));
    }
}
