//! The `[table.NAME]` sections and the `[[edge_set]]`s that refer to them.

use super::*;

impl Checker<'_> {
    pub(super) fn tables(
        &mut self,
        table_key: Option<usize>,
        table_malformed: bool,
        raw: &[(Text, Option<RawTable>)],
        pipeline: &PipelineConfig,
    ) -> Vec<TableInfo> {
        if raw.is_empty() && !table_malformed {
            let offset = table_key.unwrap_or(0);
            self.problem(
                offset,
                "table",
                "no table is declared: a config needs at least one [table.NAME] with its partition_key",
            );
        }
        let mut out = Vec::new();
        for (name, body) in raw {
            let context = table_context(name.get_ref());
            self.table_name(name, &context, "table name");
            let config = body.as_ref().map(|body| {
                self.attribute(&body.partition_key, &join_key(&context, "partition_key"));
                if let Some(sk) = &body.sort_key {
                    let key = join_key(&context, "sort_key");
                    if self.attribute(sk, &key) && sk.get_ref() == body.partition_key.get_ref() {
                        self.problem(
                            sk.span().start,
                            key,
                            format!("\"{}\" is also the partition_key", sk.get_ref()),
                        );
                    }
                }
                if let Some(ttl) = &body.ttl_attribute {
                    self.attribute(ttl, &join_key(&context, "ttl_attribute"));
                }
                let stream = self.change_source(body, &context, pipeline);
                TableConfig {
                    name: name.get_ref().clone(),
                    partition_key: body.partition_key.get_ref().clone(),
                    sort_key: body.sort_key.as_ref().map(|s| s.get_ref().clone()),
                    ttl_attribute: body.ttl_attribute.as_ref().map(|s| s.get_ref().clone()),
                    stream,
                }
            });
            out.push(TableInfo {
                name: name.get_ref().clone(),
                config,
            });
        }
        out
    }

    /// A table's `stream`, `precision` and `retention_hours`.
    fn change_source(&mut self, body: &RawTable, context: &str, pipeline: &PipelineConfig) -> ChangeSource {
        let kinesis = match &body.stream {
            None => false,
            Some(stream) => match stream.get_ref().to_ascii_lowercase().as_str() {
                "dynamodb" => false,
                "kinesis" => true,
                other => {
                    self.problem(
                        stream.span().start,
                        join_key(context, "stream"),
                        format!("unknown change source {other:?}: expected \"dynamodb\" (the table's DynamoDB stream) or \"kinesis\" (a Kinesis data stream)"),
                    );
                    false
                }
            },
        };
        if !kinesis {
            let only_kinesis = |key: &str| {
                format!(
                    "`{key}` is a setting of a Kinesis data stream, but this table reads its DynamoDB stream \
                     (a DynamoDB stream's records are versioned by sequence number and kept 24 hours): \
                     set stream = \"kinesis\" or remove `{key}`"
                )
            };
            if let Some(p) = &body.precision {
                self.problem(
                    p.span().start,
                    join_key(context, "precision"),
                    only_kinesis("precision"),
                );
            }
            if let Some(r) = &body.retention_hours {
                self.problem(
                    r.span().start,
                    join_key(context, "retention_hours"),
                    only_kinesis("retention_hours"),
                );
            }
            return ChangeSource::DynamoDb;
        }
        let precision = match &body.precision {
            None => Precision::default(),
            Some(p) => match p.get_ref().to_ascii_lowercase().as_str() {
                "microsecond" => Precision::Microsecond,
                "millisecond" => Precision::Millisecond,
                other => {
                    self.problem(
                        p.span().start,
                        join_key(context, "precision"),
                        format!("unknown precision {other:?}: expected \"microsecond\" or \"millisecond\", the ApproximateCreationDateTimePrecision the table sends"),
                    );
                    Precision::default()
                }
            },
        };
        let key = join_key(context, "retention_hours");
        let retention_hours = match &body.retention_hours {
            None => defaults::KINESIS_RETENTION_HOURS,
            Some(r) => match self.int_in(r, limits::KINESIS_RETENTION_HOURS, &key) {
                Some(hours) => hours as u32,
                None => {
                    return ChangeSource::Kinesis(KinesisSource {
                        precision,
                        retention_hours: defaults::KINESIS_RETENTION_HOURS,
                    })
                }
            },
        };
        if pipeline.tombstone_ttl_hours < retention_hours {
            let offset = body
                .retention_hours
                .as_ref()
                .map_or(body.partition_key.span().start, |r| r.span().start);
            self.problem(
                offset,
                key,
                format!(
                    "the stream keeps a record {retention_hours} hours, but a tombstone lives \
                     [pipeline] tombstone_ttl_hours = {} hours: a record older than a tombstone could bring \
                     a deleted row back; raise tombstone_ttl_hours to at least {retention_hours}",
                    pipeline.tombstone_ttl_hours
                ),
            );
        }
        ChangeSource::Kinesis(KinesisSource {
            precision,
            retention_hours,
        })
    }

    /// Looks up a referenced table. `None`: not declared (reported);
    /// `Some(None)`: declared but unreadable; `Some(Some(t))`: declared.
    pub(super) fn table_ref<'t>(
        &mut self,
        tables: &'t [TableInfo],
        name: &Text,
        key: &str,
    ) -> Option<Option<&'t TableConfig>> {
        match tables.iter().find(|t| &t.name == name.get_ref()) {
            Some(t) => Some(t.config.as_ref()),
            None => {
                let declared: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
                let declared = if declared.is_empty() {
                    "none".to_string()
                } else {
                    declared.join(", ")
                };
                self.problem(
                    name.span().start,
                    key,
                    format!("table \"{}\" is not declared (declared: {declared})", name.get_ref()),
                );
                None
            }
        }
    }

    pub(super) fn edge_sets(
        &mut self,
        raw: Vec<RawEdgeSet>,
        tables: &[TableInfo],
    ) -> (Vec<EdgeSetConfig>, Vec<EdgeSetInfo>) {
        let mut out = Vec::new();
        let mut infos: Vec<EdgeSetInfo> = Vec::new();
        for e in raw {
            let context = format!("[[edge_set]] \"{}.{}\"", e.table.get_ref(), e.attribute.get_ref());
            let k = |key: &str| join_key(&context, key);
            let table_name = e.table.get_ref().clone();
            let table = self.table_ref(tables, &e.table, &k("table"));
            if let Some(Some(t)) = table {
                if t.sort_key.is_none() {
                    self.problem(
                        e.table.span().start,
                        k("table"),
                        format!(
                            "table \"{}\" has no sort_key; an edge set needs nodes (sort key = partition key) and edges",
                            t.name
                        ),
                    );
                }
            }
            if let Some(other) = infos.iter().find(|i| i.table == table_name) {
                self.problem(
                    e.table.span().start,
                    k("table"),
                    format!(
                        "table \"{table_name}\" already has an edge set (line {}); a table has at most one",
                        other.line
                    ),
                );
            }

            // The set attribute and the completeness flag are owned by the pipeline.
            let key_attrs: Vec<&str> = match table {
                Some(Some(t)) => t.key_attributes(),
                _ => Vec::new(),
            };
            let owned_ok = |checker: &mut Self, attr: &Text, key: String| {
                if checker.attribute(attr, &key) && key_attrs.contains(&attr.get_ref().as_str()) {
                    checker.problem(
                        attr.span().start,
                        key,
                        format!(
                            "\"{}\" is a key or TTL attribute of table \"{table_name}\"; the edge set needs an attribute of its own",
                            attr.get_ref()
                        ),
                    );
                }
            };
            owned_ok(self, &e.attribute, k("attribute"));
            let complete_attribute = match &e.complete_attribute {
                Some(c) => {
                    owned_ok(self, c, k("complete_attribute"));
                    if c.get_ref() == e.attribute.get_ref() {
                        self.problem(
                            c.span().start,
                            k("complete_attribute"),
                            "the same attribute as `attribute`",
                        );
                    }
                    c.get_ref().clone()
                }
                None => defaults::COMPLETE_ATTRIBUTE.to_string(),
            };
            if e.complete_attribute.is_none() && complete_attribute == *e.attribute.get_ref() {
                self.problem(
                    e.attribute.span().start,
                    k("attribute"),
                    format!("\"{complete_attribute}\" is the default complete_attribute; choose another name or set complete_attribute"),
                );
            }

            self.edge_types(&e.include, &context);
            self.member_attributes(&e.member, [e.attribute.get_ref(), &complete_attribute], &context);

            let max_members = match &e.max_members {
                Some(m) => self
                    .int_in(m, limits::MAX_MEMBERS, &k("max_members"))
                    .map_or(defaults::MAX_MEMBERS, |v| v as usize),
                None => defaults::MAX_MEMBERS,
            };
            let target_index = match &e.target_index {
                Some(name) => {
                    self.table_name(name, &context, "target_index");
                    name.get_ref().clone()
                }
                None => defaults::TARGET_INDEX.to_owned(),
            };
            infos.push(EdgeSetInfo {
                table: table_name.clone(),
                attribute: e.attribute.get_ref().clone(),
                complete_attribute: complete_attribute.clone(),
                line: self.line(e.table.span().start),
            });
            out.push(EdgeSetConfig {
                table: table_name,
                attribute: e.attribute.into_inner(),
                include: e.include.into_inner().into_iter().map(Spanned::into_inner).collect(),
                member: e.member.into_inner().into_iter().map(Spanned::into_inner).collect(),
                max_members,
                complete_attribute,
                target_index,
            });
        }
        (out, infos)
    }

    /// The edge types an edge set includes: at least one, none empty, none
    /// with a `-` (the type is the sort key up to its first `-`), none twice.
    fn edge_types(&mut self, include: &Spanned<Vec<Text>>, context: &str) {
        let key = join_key(context, "include");
        if include.get_ref().is_empty() {
            self.problem(
                include.span().start,
                key.as_str(),
                "no edge type is included; list the edge types to replicate (the sort key up to its first `-`)",
            );
        }
        let mut seen: Vec<&str> = Vec::new();
        for ty in include.get_ref() {
            let t = ty.get_ref().as_str();
            if t.is_empty() {
                self.problem(ty.span().start, key.as_str(), "empty edge type");
            } else if t.contains('-') {
                self.problem(
                    ty.span().start,
                    key.as_str(),
                    format!("\"{t}\" contains `-`, but an edge type is the sort key up to its first `-`, so it could never match"),
                );
            } else if seen.contains(&t) {
                self.problem(ty.span().start, key.as_str(), format!("\"{t}\" is listed twice"));
            }
            seen.push(t);
        }
    }

    /// The attributes of an edge that make up a member: at least one, none
    /// the pipeline writes on nodes (`owned`: the set and completeness
    /// attributes), none twice.
    fn member_attributes(&mut self, member: &Spanned<Vec<Text>>, owned: [&str; 2], context: &str) {
        let key = join_key(context, "member");
        if member.get_ref().is_empty() {
            self.problem(
                member.span().start,
                key.as_str(),
                "no member attribute; list the edge attributes that make up a member (e.g. [\"target\"])",
            );
        }
        let mut seen: Vec<&str> = Vec::new();
        for m in member.get_ref() {
            let name = m.get_ref().as_str();
            if !self.attribute(m, &key) {
                continue;
            }
            if owned.contains(&name) {
                self.problem(
                    m.span().start,
                    key.as_str(),
                    format!("\"{name}\" is an attribute the pipeline writes on nodes, not an edge attribute"),
                );
            } else if seen.contains(&name) {
                self.problem(m.span().start, key.as_str(), format!("\"{name}\" is listed twice"));
            }
            seen.push(name);
        }
    }
}
