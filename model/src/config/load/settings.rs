//! The `[events]`, `[alarms]` and `[pipeline]` sections.

use super::*;

impl Checker<'_> {
    pub(super) fn events(&mut self, raw: Option<RawEvents>) -> EventsConfig {
        let mut events = EventsConfig {
            source: defaults::EVENT_SOURCE.to_string(),
            bus: defaults::EVENT_BUS.to_string(),
            max_request_bytes: defaults::MAX_REQUEST_BYTES,
            ledger_table: defaults::LEDGER_TABLE.to_string(),
        };
        let Some(raw) = raw else { return events };
        if let Some(source) = raw.source {
            let s = source.get_ref();
            let reason = if s.trim().is_empty() {
                Some("the event source is empty".to_string())
            } else if s.chars().count() > limits::EVENT_NAME_CHARS {
                Some(format!("longer than {} characters", limits::EVENT_NAME_CHARS))
            } else if s.to_ascii_lowercase().starts_with("aws.") {
                Some(format!("\"{s}\": sources starting with `aws.` are reserved for AWS"))
            } else {
                None
            };
            match reason {
                Some(reason) => self.problem(source.span().start, "[events] source", reason),
                None => events.source = source.into_inner(),
            }
        }
        if let Some(bus) = raw.bus {
            let b = bus.get_ref();
            let ok_chars = b.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c));
            if b.is_empty() || b.chars().count() > limits::EVENT_NAME_CHARS || !ok_chars {
                self.problem(
                    bus.span().start,
                    "[events] bus",
                    format!(
                        "\"{b}\" is not an event bus name (1-{} characters of a-z A-Z 0-9 . _ - /)",
                        limits::EVENT_NAME_CHARS
                    ),
                );
            } else {
                events.bus = bus.into_inner();
            }
        }
        if let Some(ledger) = raw.ledger_table {
            if self.table_name(&ledger, "[events]", "ledger_table") {
                events.ledger_table = ledger.into_inner();
            }
        }
        if let Some(max) = raw.max_request_bytes {
            if let Some(v) = self.int_in(&max, limits::MAX_REQUEST_BYTES, "[events] max_request_bytes") {
                events.max_request_bytes = v as usize;
            }
        }
        events
    }

    pub(super) fn alarms(&mut self, raw: Option<RawAlarms>) -> AlarmConfig {
        let mut alarms = AlarmConfig {
            iterator_age_warn_seconds: defaults::ITERATOR_AGE_WARN_SECONDS,
            iterator_age_page_seconds: defaults::ITERATOR_AGE_PAGE_SECONDS,
        };
        let Some(raw) = raw else { return alarms };
        let max = limits::STREAM_RETENTION_SECONDS - 1;
        let mut ok = true;
        if let Some(warn) = &raw.iterator_age_warn_seconds {
            match self.int_in(warn, 1..=max, "[alarms] iterator_age_warn_seconds") {
                Some(v) => alarms.iterator_age_warn_seconds = v as u64,
                None => ok = false,
            }
        }
        if let Some(page) = &raw.iterator_age_page_seconds {
            let key = "[alarms] iterator_age_page_seconds";
            let v = *page.get_ref();
            if v >= limits::STREAM_RETENTION_SECONDS {
                self.problem(
                    page.span().start,
                    key,
                    format!(
                        "{v} must be below {} (the stream's 24 h retention): records would be lost before the page",
                        limits::STREAM_RETENTION_SECONDS
                    ),
                );
                ok = false;
            } else if v < 1 {
                self.problem(page.span().start, key, format!("{v} must be at least 1"));
                ok = false;
            } else {
                alarms.iterator_age_page_seconds = v as u64;
            }
        }
        if ok && alarms.iterator_age_page_seconds <= alarms.iterator_age_warn_seconds {
            let (offset, key) = match (&raw.iterator_age_page_seconds, &raw.iterator_age_warn_seconds) {
                (Some(page), _) => (page.span().start, "[alarms] iterator_age_page_seconds"),
                (None, Some(warn)) => (warn.span().start, "[alarms] iterator_age_warn_seconds"),
                (None, None) => (0, "[alarms]"),
            };
            self.problem(
                offset,
                key,
                format!(
                    "the page threshold ({} s) must be greater than the warn threshold ({} s)",
                    alarms.iterator_age_page_seconds, alarms.iterator_age_warn_seconds
                ),
            );
        }
        alarms
    }

    pub(super) fn pipeline(&mut self, raw: Option<RawPipeline>) -> PipelineConfig {
        let mut pipeline = PipelineConfig {
            tombstone_ttl_hours: defaults::TOMBSTONE_TTL_HOURS,
        };
        if let Some(hours) = raw.and_then(|r| r.tombstone_ttl_hours) {
            let v = *hours.get_ref();
            if v < *limits::TOMBSTONE_TTL_HOURS.start() {
                self.problem(
                    hours.span().start,
                    "[pipeline] tombstone_ttl_hours",
                    format!(
                        "{v} is shorter than the stream's 24 h retention: a record still in the stream could \
                         outlive the tombstone and bring a deleted row back"
                    ),
                );
            } else if let Some(v) = self.int_in(&hours, limits::TOMBSTONE_TTL_HOURS, "[pipeline] tombstone_ttl_hours") {
                pipeline.tombstone_ttl_hours = v as u32;
            }
        }
        pipeline
    }
}
