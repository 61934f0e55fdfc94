//! The `[[index]]`es: source, partition and sort templates, columns, projections.

use super::*;

impl Checker<'_> {
    pub(super) fn indexes(
        &mut self,
        raw: Vec<RawIndex>,
        tables: &[TableInfo],
        edge_sets: &[EdgeSetInfo],
    ) -> Vec<IndexConfig> {
        let mut out = Vec::new();
        let mut names: HashMap<String, usize> = HashMap::new();
        let mut index_tables: HashMap<String, (usize, String)> = HashMap::new();
        for ix in raw {
            let context = format!("[[index]] \"{}\"", ix.name.get_ref());
            let k = |key: &str| join_key(&context, key);
            let name = ix.name.get_ref().clone();

            self.index_name(&ix.name, &context, &mut names);

            // source
            let source = ix.source.into_inner();
            let src = self.table_ref(tables, &source.table, &k("source.table")).flatten();
            if let Some(prefix) = &source.key_prefix {
                if prefix.get_ref().is_empty() {
                    self.problem(
                        prefix.span().start,
                        k("source.key_prefix"),
                        "empty key_prefix; leave it out to take every item",
                    );
                }
            }
            let src_keys: Vec<&str> = src.map(|t| t.primary_key()).unwrap_or_default();

            let table = ix.table.get_ref().clone();
            self.index_table(&ix.table, &context, &name, tables, &mut index_tables);

            let (partition_key, sort_key) = self.index_keys(&ix.name, &ix.partition_key, &ix.sort_key, &context, src);

            let (partition, sort) = self.row_templates(&ix.for_each, &ix.partition, &ix.sort, &src_keys, &context);

            let owned = edge_sets.iter().find(|e| e.table == source.table.get_ref().as_str());
            self.projection(&ix.project, &context, owned, [&partition_key, &sort_key], &src_keys);

            // shards
            let shards = match &ix.shards {
                Some(n) => self
                    .int_in(n, limits::INDEX_SHARDS, &k("shards"))
                    .and_then(|v| u32::try_from(v).ok())
                    .unwrap_or(defaults::INDEX_SHARDS),
                None => defaults::INDEX_SHARDS,
            };

            if let Some(partition) = partition {
                out.push(IndexConfig {
                    name,
                    source: SourceConfig {
                        table: source.table.into_inner(),
                        key_prefix: source.key_prefix.map(Spanned::into_inner),
                    },
                    table,
                    partition_key,
                    sort_key,
                    for_each: ix.for_each.map(Spanned::into_inner),
                    partition,
                    sort,
                    project: ix.project.into_iter().map(Spanned::into_inner).collect(),
                    shards,
                });
            }
        }
        out
    }

    /// The row templates: the partition template and the sort columns, each
    /// reference known (entries only with `for_each`, which must iterate a
    /// non-key attribute and be referred to); the partition is `None` when
    /// it could not be parsed.
    fn row_templates(
        &mut self,
        for_each: &Option<Text>,
        raw_partition: &Text,
        sort_columns: &[Spanned<RawSortColumn>],
        src_keys: &[&str],
        context: &str,
    ) -> (Option<Template>, Vec<SortColumn>) {
        // for_each
        if let Some(fe) = for_each {
            if self.attribute(fe, &join_key(context, "for_each")) && src_keys.contains(&fe.get_ref().as_str()) {
                self.problem(
                    fe.span().start,
                    join_key(context, "for_each"),
                    format!(
                        "\"{}\" is a key attribute of the source table, a single scalar: there are no entries to iterate",
                        fe.get_ref()
                    ),
                );
            }
        }
        let has_for_each = for_each.is_some();
        let mut uses_entry = false;
        // Whether every reference could be read (else `uses_entry` is unsure).
        let mut refs_complete = true;

        // partition
        let partition = match Template::parse(raw_partition.get_ref()) {
            Ok(t) => {
                uses_entry |= t.uses_entry();
                self.check_refs(
                    t.refs(),
                    has_for_each,
                    raw_partition.span(),
                    &join_key(context, "partition"),
                );
                Some(t)
            }
            Err(reason) => {
                self.problem(
                    raw_partition.span().start,
                    join_key(context, "partition"),
                    reason.to_string(),
                );
                refs_complete = false;
                None
            }
        };

        // sort
        let mut sort = Vec::new();
        for (i, col) in sort_columns.iter().enumerate() {
            let key = join_key(context, &format!("sort[{}]", i + 1));
            match self.sort_column(col.get_ref(), has_for_each, &key) {
                Ok(c) => {
                    uses_entry |= c.value.is_entry();
                    sort.push(c);
                }
                Err(value) => match value {
                    Some(v) => uses_entry |= v.is_entry(),
                    None => refs_complete = false,
                },
            }
        }
        if let Some(fe) = for_each {
            if !uses_entry && refs_complete {
                self.problem(
                    fe.span().start,
                    join_key(context, "for_each"),
                    "neither partition nor sort refers to {entry.key} or {entry.value}, so every entry of an item would get the same row",
                );
            }
        }
        (partition, sort)
    }

    /// The index's name: well formed, and not another index's.
    fn index_name(&mut self, raw: &Text, context: &str, names: &mut HashMap<String, usize>) {
        let name = raw.get_ref().clone();
        let line = self.line(raw.span().start);
        let chars = name.chars().count();
        if !limits::INDEX_NAME_CHARS.contains(&chars) || !name.chars().all(is_name_char) {
            self.problem(
                raw.span().start,
                join_key(context, "name"),
                format!(
                    "\"{name}\" is not an index name ({}-{} characters of a-z A-Z 0-9 _ . -)",
                    limits::INDEX_NAME_CHARS.start(),
                    limits::INDEX_NAME_CHARS.end()
                ),
            );
        } else if let Some(first) = names.get(&name) {
            self.problem(
                raw.span().start,
                join_key(context, "name"),
                format!("index name \"{name}\" is already used by the index at line {first}"),
            );
        } else {
            names.insert(name.clone(), line);
        }
    }

    /// The index's table: well named, neither a source table nor another
    /// index's (`index_tables`: each index table's line and index so far).
    fn index_table(
        &mut self,
        raw: &Text,
        context: &str,
        name: &str,
        tables: &[TableInfo],
        index_tables: &mut HashMap<String, (usize, String)>,
    ) {
        let table = raw.get_ref();
        if self.table_name(raw, context, "table") {
            if tables.iter().any(|t| t.name == *table) {
                self.problem(
                    raw.span().start,
                    join_key(context, "table"),
                    format!("\"{table}\" is a declared source table; an index owns its table, give it another"),
                );
            } else if let Some((first_line, first_name)) = index_tables.get(table) {
                self.problem(
                        raw.span().start,
                        join_key(context, "table"),
                        format!(
                            "table \"{table}\" is already the table of index \"{first_name}\" (line {first_line}); each index owns its table"
                        ),
                    );
            } else {
                index_tables.insert(table.clone(), (self.line(raw.span().start), name.to_owned()));
            }
        }
    }

    /// The index table's key attributes (the defaults unless given): two,
    /// and neither a key of the source table (copied onto every row).
    fn index_keys(
        &mut self,
        name: &Text,
        raw_partition_key: &Option<Text>,
        raw_sort_key: &Option<Text>,
        context: &str,
        src: Option<&TableConfig>,
    ) -> (String, String) {
        let partition_key = self.key_with_default(
            raw_partition_key,
            defaults::INDEX_PARTITION_KEY,
            &join_key(context, "partition_key"),
        );
        let sort_key = self.key_with_default(raw_sort_key, defaults::INDEX_SORT_KEY, &join_key(context, "sort_key"));
        if partition_key == sort_key {
            let (offset, key) = match (raw_sort_key, raw_partition_key) {
                (Some(s), _) => (s.span().start, join_key(context, "sort_key")),
                (None, Some(p)) => (p.span().start, join_key(context, "partition_key")),
                (None, None) => (name.span().start, context.to_owned()),
            };
            self.problem(
                offset,
                key,
                format!("partition_key and sort_key are both \"{sort_key}\""),
            );
        }
        let src_keys: Vec<&str> = src.map(|t| t.primary_key()).unwrap_or_default();
        if let Some(t) = src {
            for (attr, raw_key, key) in [
                (&partition_key, raw_partition_key, "partition_key"),
                (&sort_key, raw_sort_key, "sort_key"),
            ] {
                if src_keys.contains(&attr.as_str()) {
                    let offset = raw_key.as_ref().map_or(name.span().start, |s| s.span().start);
                    self.problem(
                            offset,
                            join_key(context, key),
                            format!(
                                "\"{attr}\" is a key attribute of source table \"{}\", which is copied onto every row; give the index {key} another name",
                                t.name
                            ),
                        );
                }
            }
        }
        (partition_key, sort_key)
    }

    /// The projected attributes: none a key of the index table or of the
    /// source table, owned by the pipeline (`owned`: the source table's
    /// edge set), or listed twice.
    fn projection(
        &mut self,
        project: &[Text],
        context: &str,
        owned: Option<&EdgeSetInfo>,
        index_keys: [&String; 2],
        src_keys: &[&str],
    ) {
        let mut seen: Vec<&str> = Vec::new();
        for p in project {
            let attr = p.get_ref().as_str();
            let key = join_key(context, "project");
            if !self.attribute(p, &key) {
                continue;
            }
            let reason = if index_keys.iter().any(|k| attr == k.as_str()) {
                Some(format!(
                    "\"{attr}\" is a key attribute of the index table; projecting it would overwrite the row key"
                ))
            } else if src_keys.contains(&attr) {
                Some(format!(
                    "\"{attr}\" is a key attribute of the source table, always copied onto the row; remove it"
                ))
            } else if let Some(es) = owned.filter(|es| es.attribute == attr || es.complete_attribute == attr) {
                Some(format!(
                    "\"{attr}\" is owned by the pipeline (the edge set \"{}\" of table \"{}\"); it cannot be projected",
                    es.attribute, es.table
                ))
            } else if seen.contains(&attr) {
                Some(format!("\"{attr}\" is listed twice"))
            } else {
                None
            };
            if let Some(reason) = reason {
                self.problem(p.span().start, key, reason);
            }
            seen.push(attr);
        }
    }

    /// A sort column, or (when refused) its value reference if that could be read.
    pub(super) fn sort_column(
        &mut self,
        col: &RawSortColumn,
        has_for_each: bool,
        key: &str,
    ) -> Result<SortColumn, Option<ValueRef>> {
        let value = match ValueRef::parse_sort_value(col.value.get_ref()) {
            Ok(v) => {
                self.check_refs(
                    std::iter::once(&v),
                    has_for_each,
                    col.value.span(),
                    &format!("{key}.value"),
                );
                Some(v)
            }
            Err(reason) => {
                self.problem(col.value.span().start, format!("{key}.value"), reason.to_string());
                None
            }
        };
        let ty = match parse_column_type(col.ty.get_ref()) {
            Some(ty) => Some(ty),
            None => {
                self.problem(
                    col.ty.span().start,
                    format!("{key}.type"),
                    format!(
                        "unknown column type \"{}\" (expected one of s, n, b, bool, date, timestamp, any)",
                        col.ty.get_ref()
                    ),
                );
                None
            }
        };
        let direction = match &col.order {
            None => Some(Direction::Asc),
            Some(o) => match o.get_ref().to_ascii_lowercase().as_str() {
                "asc" => Some(Direction::Asc),
                "desc" => Some(Direction::Desc),
                _ => {
                    self.problem(
                        o.span().start,
                        format!("{key}.order"),
                        format!("unknown order \"{}\" (expected asc or desc)", o.get_ref()),
                    );
                    None
                }
            },
        };
        // Some(None): the default placement; None: refused.
        let nulls = match &col.nulls {
            None => Some(None),
            Some(n) => match n.get_ref().to_ascii_lowercase().as_str() {
                "first" => Some(Some(Nulls::First)),
                "last" => Some(Some(Nulls::Last)),
                _ => {
                    self.problem(
                        n.span().start,
                        format!("{key}.nulls"),
                        format!("unknown nulls placement \"{}\" (expected first or last)", n.get_ref()),
                    );
                    None
                }
            },
        };
        let (Some(value), Some(ty), Some(direction), Some(nulls)) = (value.clone(), ty, direction, nulls) else {
            return Err(value);
        };
        let mut column = Column::new(ty, direction);
        if let Some(n) = nulls {
            column.nulls = n;
        }
        Ok(SortColumn { value, column })
    }

    /// Refuses entry references when the index has no `for_each`.
    pub(super) fn check_refs<'r>(
        &mut self,
        refs: impl Iterator<Item = &'r ValueRef>,
        has_for_each: bool,
        span: Range<usize>,
        key: &str,
    ) {
        if has_for_each {
            return;
        }
        let entry_refs: Vec<String> = refs.filter(|r| r.is_entry()).map(ToString::to_string).collect();
        if !entry_refs.is_empty() {
            self.problem(
                span.start,
                key,
                format!(
                    "{} refers to the entry, but the index has no for_each",
                    entry_refs.join(" and ")
                ),
            );
        }
    }
}

fn parse_column_type(text: &str) -> Option<ColumnType> {
    Some(match text.to_ascii_lowercase().as_str() {
        "s" => ColumnType::S,
        "n" => ColumnType::N,
        "b" => ColumnType::B,
        "bool" => ColumnType::Bool,
        "date" => ColumnType::Date,
        "timestamp" => ColumnType::Timestamp,
        "any" => ColumnType::Any,
        _ => return None,
    })
}
