//! What the records of one replayed file are, counted as they are read:
//! enough to refuse a file that cannot be a stream of the config's tables
//! (empty, no stream record in it, or none of a declared table) and to say
//! of a mix how many records matched nothing.

use std::collections::BTreeMap;

use model::config::Config;
use model::record::{Received, RecordError};
use model::value::Attrs;
use model::Planner;

/// Counts of one file's records (or of several files', added up).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    /// JSON values read as records.
    pub records: usize,
    /// Values that are no stream record at all (not an object, or no
    /// `dynamodb` part), such as `{"foo": 1}`.
    pub not_stream: usize,
    /// Stream records the consumers cannot read (quarantined with the
    /// reason), and the first one's reason.
    pub malformed: usize,
    pub first_malformed: Option<String>,
    /// Stream records of a table the config declares.
    pub matched: usize,
    /// Stream records of tables the config does not declare, by table (or
    /// by the keys they hold, when their table cannot be told).
    pub unmatched: BTreeMap<String, usize>,
}

impl Tally {
    /// Counts a batch of records.
    pub fn count<I: Attrs>(&mut self, batch: &[Received<'_, I>], config: &Config) {
        let planner = Planner::new(config);
        for received in batch {
            self.records += 1;
            match &received.record {
                Err(RecordError::NotAnObject { .. } | RecordError::NoDynamodb { .. }) => self.not_stream += 1,
                // A malformed stream record: the consumers quarantine it
                // with the reason, as they would in Lambda.
                Err(error) => {
                    self.malformed += 1;
                    self.first_malformed.get_or_insert_with(|| error.to_string());
                }
                Ok(record) => match planner.table_of(record) {
                    Ok(_) => self.matched += 1,
                    Err(_) => {
                        let table = record.table.as_deref().map(str::to_owned).unwrap_or_else(|| {
                            let mut keys: Vec<&str> = record.keys.iter().map(|(name, _)| name).collect();
                            keys.sort_unstable();
                            format!("(no table; keys {})", keys.join(", "))
                        });
                        *self.unmatched.entry(table).or_insert(0) += 1;
                    }
                },
            }
        }
    }

    /// Adds another file's counts.
    pub fn add(&mut self, other: &Tally) {
        self.records += other.records;
        self.not_stream += other.not_stream;
        self.matched += other.matched;
        self.malformed += other.malformed;
        if self.first_malformed.is_none() {
            self.first_malformed.clone_from(&other.first_malformed);
        }
        for (table, n) in &other.unmatched {
            *self.unmatched.entry(table.clone()).or_insert(0) += n;
        }
    }

    /// Records of tables the config does not declare.
    pub fn unmatched_records(&self) -> usize {
        self.unmatched.values().sum()
    }

    /// Why a file with these counts cannot be a stream of the config's
    /// tables, if it cannot.
    pub fn refusal(&self, config: &Config) -> Option<String> {
        if self.records == 0 {
            return Some("it holds no records (an empty file)".to_owned());
        }
        if self.not_stream == self.records {
            return Some(format!(
                "none of its {} JSON values is a DynamoDB stream record (an object with a `dynamodb` part)",
                self.records
            ));
        }
        if self.matched > 0 {
            return None;
        }
        let declared: Vec<&str> = config.tables.iter().map(|t| t.name.as_str()).collect();
        let mut what = Vec::new();
        if !self.unmatched.is_empty() {
            what.push(format!("of {}", self.unmatched_text()));
        }
        if let Some(first) = &self.first_malformed {
            what.push(format!("{} malformed (the first: {first})", self.malformed));
        }
        if self.not_stream > 0 {
            what.push(format!("{} not stream records", self.not_stream));
        }
        Some(format!(
            "none of its {} records is a stream record of a table the config declares ({}): {}",
            self.records,
            declared.join(", "),
            what.join("; ")
        ))
    }

    /// `table (N records), ...`
    pub fn unmatched_text(&self) -> String {
        let parts: Vec<String> = self
            .unmatched
            .iter()
            .map(|(table, n)| format!("{table} ({n} record{})", if *n == 1 { "" } else { "s" }))
            .collect();
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use model::config::{self, EXAMPLE_CONFIG};
    use model::record::parse_any;

    use super::*;

    fn config() -> Config {
        config::parse(EXAMPLE_CONFIG, "example").expect("the example config")
    }

    fn tally(text: &str) -> Tally {
        let records = parse_any(text.as_bytes()).expect("JSON");
        let mut tally = Tally::default();
        tally.count(&records, &config());
        tally
    }

    fn record(table: &str, seq: u32) -> String {
        format!(
            r#"{{"eventName":"INSERT","eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/{table}/stream/2024-01-01T00:00:00.000","dynamodb":{{"Keys":{{"id":{{"S":"a"}},"rel":{{"S":"a"}}}},"NewImage":{{"id":{{"S":"a"}},"rel":{{"S":"a"}}}},"SequenceNumber":"{seq}","StreamViewType":"NEW_AND_OLD_IMAGES"}}}}"#
        )
    }

    #[test]
    fn an_empty_file_is_refused() {
        let reason = Tally::default().refusal(&config()).expect("refused");
        assert!(reason.contains("no records"), "{reason}");
    }

    #[test]
    fn json_that_is_no_stream_record_is_refused() {
        let t = tally("{\"foo\": 1}\n[1, 2]\n");
        assert_eq!((t.records, t.not_stream), (2, 2));
        let reason = t.refusal(&config()).expect("refused");
        assert!(reason.contains("none of its 2 JSON values"), "{reason}");
    }

    #[test]
    fn records_of_undeclared_tables_only_are_refused_and_named() {
        let t = tally(&format!("{}\n{}\n", record("nope", 1), record("nope", 2)));
        assert_eq!(t.unmatched, BTreeMap::from([("nope".to_owned(), 2)]));
        let reason = t.refusal(&config()).expect("refused");
        assert!(reason.contains("records, issues, layers"), "{reason}");
        assert!(reason.contains("nope (2 records)"), "{reason}");
    }

    #[test]
    fn a_mix_replays_and_counts_what_matched_nothing() {
        let t = tally(&format!(
            "{}\n{}\n{{\"foo\": 1}}\n",
            record("issues", 1),
            record("nope", 2)
        ));
        assert_eq!(
            (t.records, t.matched, t.not_stream, t.unmatched_records()),
            (3, 1, 1, 1)
        );
        assert_eq!(t.refusal(&config()), None);
    }

    #[test]
    fn a_file_of_malformed_records_only_is_refused_with_the_first_reason() {
        let bad = r#"{"dynamodb":{"Keys":{"id":{"S":"a"}},"SequenceNumber":"9"}}"#;
        let reason = tally(&format!("{bad}\n{bad}\n")).refusal(&config()).expect("refused");
        assert!(reason.contains("2 malformed"), "{reason}");
        assert!(reason.contains("eventName"), "{reason}");
    }

    #[test]
    fn malformed_stream_records_are_left_to_the_quarantine() {
        // A stream record without `eventName`: the consumers quarantine it;
        // beside a good record the file replays.
        let bad = r#"{"dynamodb":{"Keys":{"id":{"S":"a"}},"SequenceNumber":"9"}}"#;
        let t = tally(&format!("{}\n{bad}\n", record("issues", 1)));
        assert_eq!((t.records, t.matched, t.not_stream), (2, 1, 0));
        assert_eq!(t.refusal(&config()), None);
    }
}
