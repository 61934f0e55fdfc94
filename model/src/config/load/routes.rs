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
            let events = self.route_events(&r.events, table.flatten(), &context);
            if let Some(prefix) = &r.key_prefix {
                if prefix.get_ref().is_empty() {
                    self.problem(
                        prefix.span().start,
                        k("key_prefix"),
                        "empty key_prefix; leave it out to take every item",
                    );
                }
            }
            // An undeclared table was reported already: nodes and edges are
            // not refused for it too.
            let has_edge_set = table.is_none()
                || edge_sets.iter().any(|e| e.table == *r.table.get_ref())
                || broken_edge_sets.contains(r.table.get_ref());
            let items = self.route_items(r.items.as_ref(), r.table.get_ref(), has_edge_set, &context);
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

    /// The events a route takes: at least one, each known and listed once,
    /// EXPIRE only of a table with a TTL attribute (`table`: its config,
    /// when it could be read).
    fn route_events(
        &mut self,
        events: &Spanned<Vec<Text>>,
        table: Option<&TableConfig>,
        context: &str,
    ) -> Vec<RouteEvent> {
        let key = join_key(context, "events");
        if events.get_ref().is_empty() {
            self.problem(
                events.span().start,
                key.as_str(),
                "no events: list one or more of INSERT, MODIFY, REMOVE, EXPIRE",
            );
        }
        let mut out = Vec::new();
        for ev in events.get_ref() {
            let event = match ev.get_ref().to_ascii_uppercase().as_str() {
                "INSERT" => RouteEvent::Insert,
                "MODIFY" => RouteEvent::Modify,
                "REMOVE" => RouteEvent::Remove,
                "EXPIRE" => RouteEvent::Expire,
                _ => {
                    self.problem(
                        ev.span().start,
                        key.as_str(),
                        format!(
                            "unknown event \"{}\" (expected INSERT, MODIFY, REMOVE or EXPIRE)",
                            ev.get_ref()
                        ),
                    );
                    continue;
                }
            };
            if out.contains(&event) {
                self.problem(
                    ev.span().start,
                    key.as_str(),
                    format!("\"{}\" is listed twice", ev.get_ref()),
                );
                continue;
            }
            if event == RouteEvent::Expire {
                if let Some(t) = table {
                    if t.ttl_attribute.is_none() {
                        self.problem(
                            ev.span().start,
                            key.as_str(),
                            format!("table \"{}\" has no ttl_attribute, so EXPIRE can never happen", t.name),
                        );
                    }
                }
            }
            out.push(event);
        }
        out
    }

    /// The items a route takes (all by default); nodes or edges only of
    /// `table`'s edge set (`has_edge_set`: it has one, or cannot be told).
    fn route_items(&mut self, items: Option<&Text>, table_name: &str, has_edge_set: bool, context: &str) -> RouteItems {
        let key = join_key(context, "items");
        let Some(items) = items else {
            return RouteItems::All;
        };
        let parsed = match items.get_ref().to_ascii_lowercase().as_str() {
            "all" => Some(RouteItems::All),
            "nodes" => Some(RouteItems::Nodes),
            "edges" => Some(RouteItems::Edges),
            _ => None,
        };
        match parsed {
            None => {
                self.problem(
                    items.span().start,
                    key.as_str(),
                    format!("unknown items \"{}\" (expected all, nodes or edges)", items.get_ref()),
                );
                RouteItems::All
            }
            Some(p @ (RouteItems::Nodes | RouteItems::Edges)) if !has_edge_set => {
                self.problem(
                    items.span().start,
                    key.as_str(),
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
}
