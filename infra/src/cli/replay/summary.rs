//! What `streamdex replay` prints: the summary of what the consumers did
//! (on stderr), and the events published as JSON (in `--dump json`).

use std::io::Write;

use event_router::Entry;
use model::config::Config;
use serde_json::{json, Value as Json};

use super::tally::Tally;
use crate::runner::replay::Summary;

/// Writes what the replay did: records and batches, the indexer's writes
/// and requests, the events, repeats, the reaper, and every quarantined
/// record and failed batch with its reason.
pub(super) fn print_summary(summary: &Summary, config: &Config, err: &mut dyn Write) -> std::io::Result<()> {
    let s = &summary.stats;
    let a = &s.apply.applied;
    writeln!(
        err,
        "replayed {} records in {} batches ({} tables, {} indexes, {} edge sets, {} routes)",
        summary.records,
        summary.batches,
        config.tables.len(),
        config.indexes.len(),
        config.edge_sets.len(),
        config.routes.len()
    )?;
    writeln!(err, "  index rows: {} put, {} deleted", a.put_row, a.delete_row)?;
    writeln!(
        err,
        "  edge sets:  {} members added, {} removed, {} sets restored ({} updates found no node, {} nodes flagged)",
        a.add_member, a.remove_member, a.restore_set, s.apply.node_missing, s.apply.flagged
    )?;
    if s.apply.requests.put_row_if > 0 || s.apply.stale > 0 {
        writeln!(
            err,
            "  skipped:    {} writes older than what the tables hold (guarded writes)",
            s.apply.stale
        )?;
    }
    let guarded_puts = match s.apply.requests.put_row_if {
        0 => String::new(),
        n => format!(", PutItem {n}"),
    };
    writeln!(
        err,
        "  requests:   {} (BatchWriteItem {}{guarded_puts}, UpdateItem {}, Query {})",
        s.apply.requests.total(),
        s.apply.requests.write_rows,
        s.apply.requests.update_set,
        s.apply.requests.query_partition
    )?;
    let r = &summary.routed;
    let by_type: Vec<String> = r.published_by_type.iter().map(|(t, n)| format!("{t}: {n}")).collect();
    writeln!(
        err,
        "  events:     {} published in {} PutEvents calls{}{}",
        r.published,
        r.calls,
        if by_type.is_empty() {
            String::new()
        } else {
            format!(" ({})", by_type.join(", "))
        },
        if r.images_omitted > 0 {
            format!(", {} without their images", r.images_omitted)
        } else {
            String::new()
        }
    )?;
    if r.repeats > 0 {
        writeln!(
            err,
            "  repeats:    {} changes with events delivered again: not published again",
            r.repeats
        )?;
    }
    if config.reads_kinesis() {
        writeln!(
            err,
            "  ledger:     {} changes noted (on AWS, an item written to the ledger table `{}` each)",
            r.noted, config.events.ledger_table
        )?;
    }
    if summary.reaped > 0 || summary.reaper_deletes > 0 {
        writeln!(
            err,
            "  reaper:     {} expired nodes reaped, {} edges deleted",
            summary.reaped, summary.reaper_deletes
        )?;
    }
    writeln!(err, "  quarantined: {}", summary.quarantined.len())?;
    for (consumer, q) in &summary.quarantined {
        writeln!(
            err,
            "    {consumer} {}: {}",
            q.sequence_number.as_deref().unwrap_or("(no sequence number)"),
            q.reason
        )?;
    }
    for (consumer, failed) in &summary.failed {
        writeln!(err, "  FAILED ({consumer}): {failed}")?;
    }
    Ok(())
}

/// The events as JSON: `[{"source", "detailType", "detail"}]`, in order.
pub(super) fn events_json(events: &[Entry]) -> Json {
    Json::Array(
        events
            .iter()
            .map(|e| {
                let detail: Json = serde_json::from_str(&e.detail).unwrap_or(Json::String(e.detail.clone()));
                json!({"source": e.source, "detailType": e.detail_type, "detail": detail})
            })
            .collect(),
    )
}

/// Writes how many records matched no declared table, and of which tables.
pub(super) fn print_unmatched(tally: &Tally, err: &mut dyn Write) -> std::io::Result<()> {
    if tally.unmatched_records() + tally.not_stream > 0 {
        writeln!(
            err,
            "  matched no declared table: {} records{}{}",
            tally.unmatched_records() + tally.not_stream,
            if tally.unmatched.is_empty() {
                String::new()
            } else {
                format!(" (of {})", tally.unmatched_text())
            },
            if tally.not_stream > 0 {
                format!(", {} not stream records", tally.not_stream)
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}
