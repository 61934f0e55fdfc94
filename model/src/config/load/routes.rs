//! The `[[route]]`s: tables, events, key prefixes, items, rule names, the reaper.

use super::*;

impl Checker<'_> {
    pub(super) fn routes(
        &mut self,
        raw: Vec<RawRoute>,
        tables: &[TableInfo],
        edge_sets: &[EdgeSetInfo],
        broken_edge_sets: &[String],
    ) -> Vec<RouteConfig> {
        let mut out = Vec::new();
        for r in raw {
            let context = format!("[[route]] \"{}\"", r.detail_type.get_ref());
            let k = |key: &str| join_key(&context, key);
            let table = self.table_ref(tables, &r.table, &k("table"));
            if r.detail_type.get_ref().trim().is_empty() {
                self.problem(r.detail_type.span().start, k("detail_type"), "empty detail_type");
            }
            if r.events.get_ref().is_empty() {
                self.problem(
                    r.events.span().start,
                    k("events"),
                    "no events: list one or more of INSERT, MODIFY, REMOVE, EXPIRE",
                );
            }
            let mut events = Vec::new();
            for ev in r.events.get_ref() {
                let event = match ev.get_ref().to_ascii_uppercase().as_str() {
                    "INSERT" => RouteEvent::Insert,
                    "MODIFY" => RouteEvent::Modify,
                    "REMOVE" => RouteEvent::Remove,
                    "EXPIRE" => RouteEvent::Expire,
                    _ => {
                        self.problem(
                            ev.span().start,
                            k("events"),
                            format!(
                                "unknown event \"{}\" (expected INSERT, MODIFY, REMOVE or EXPIRE)",
                                ev.get_ref()
                            ),
                        );
                        continue;
                    }
                };
                if events.contains(&event) {
                    self.problem(
                        ev.span().start,
                        k("events"),
                        format!("\"{}\" is listed twice", ev.get_ref()),
                    );
                    continue;
                }
                if event == RouteEvent::Expire {
                    if let Some(Some(t)) = table {
                        if t.ttl_attribute.is_none() {
                            self.problem(
                                ev.span().start,
                                k("events"),
                                format!("table \"{}\" has no ttl_attribute, so EXPIRE can never happen", t.name),
                            );
                        }
                    }
                }
                events.push(event);
            }
            if let Some(prefix) = &r.key_prefix {
                if prefix.get_ref().is_empty() {
                    self.problem(
                        prefix.span().start,
                        k("key_prefix"),
                        "empty key_prefix; leave it out to take every item",
                    );
                }
            }
            let items = match &r.items {
                None => RouteItems::All,
                Some(items) => {
                    let parsed = match items.get_ref().to_ascii_lowercase().as_str() {
                        "all" => Some(RouteItems::All),
                        "nodes" => Some(RouteItems::Nodes),
                        "edges" => Some(RouteItems::Edges),
                        _ => None,
                    };
                    let table_name = r.table.get_ref();
                    let has_edge_set =
                        edge_sets.iter().any(|e| &e.table == table_name) || broken_edge_sets.contains(table_name);
                    match parsed {
                        None => {
                            self.problem(
                                items.span().start,
                                k("items"),
                                format!("unknown items \"{}\" (expected all, nodes or edges)", items.get_ref()),
                            );
                            RouteItems::All
                        }
                        Some(p @ (RouteItems::Nodes | RouteItems::Edges)) if !has_edge_set && table.is_some() => {
                            self.problem(
                                items.span().start,
                                k("items"),
                                format!(
                                    "items = \"{}\" needs an edge set on table \"{table_name}\" (nodes and edges are the edge set's)",
                                    items.get_ref()
                                ),
                            );
                            p
                        }
                        Some(p) => p,
                    }
                }
            };
            let detail_type_at = r.detail_type.span().start;
            let reap = r.reap.as_ref().is_some_and(|reap| *reap.get_ref());
            if let (true, Some(flag)) = (reap, &r.reap) {
                let at = flag.span().start;
                if items != RouteItems::Nodes {
                    self.problem(
                        at,
                        k("reap"),
                        "the reaper deletes a removed node's edges: the route needs items = \"nodes\"",
                    );
                }
                if events
                    .iter()
                    .any(|e| matches!(e, RouteEvent::Insert | RouteEvent::Modify))
                {
                    self.problem(
                        at,
                        k("reap"),
                        "the reaper takes removed nodes only: events may be EXPIRE and REMOVE, not INSERT or MODIFY",
                    );
                }
            }
            let route = RouteConfig {
                table: r.table.into_inner(),
                detail_type: r.detail_type.into_inner(),
                events,
                key_prefix: r.key_prefix.map(Spanned::into_inner),
                items,
                reap,
            };
            let rule = crate::event::rule_name(&route);
            if let Some(earlier) = out.iter().find(|o: &&RouteConfig| crate::event::rule_name(o) == rule) {
                self.problem(
                    detail_type_at,
                    k("detail_type"),
                    format!(
                        "its rule name \"{rule}\" is that of the route \"{}\" of table \"{}\" already; rules could not tell them apart: choose another detail_type",
                        earlier.detail_type, earlier.table
                    ),
                );
            }
            out.push(route);
        }
        out
    }
}
