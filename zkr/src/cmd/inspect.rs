//! `zkr inspect`: which recipe lives at a path, who holds, who waits.

use std::time::Duration;

use serde_json::{json, Value};
use zk_recipes::inspect::{Inspection, NodeInfo, RecipeKind};
use zk_recipes::Framework;

use crate::args::InspectArgs;
use crate::exit::{self, CliResult};
use crate::output::humanize;
use crate::{output, Ctx};

pub async fn inspect(fw: &Framework, args: InspectArgs, ctx: &mut Ctx) -> CliResult {
    let found = ctx.signals.interruptible(zk_recipes::inspect::inspect(fw, &args.path)).await??;
    let text = if ctx.global.json { to_json(&found) } else { table(&found) };
    output::line(text.trim_end_matches('\n'));
    Ok(exit::OK)
}

/// A session id as ZooKeeper prints it: `0x` and lower-case hex (`0x0` for persistent nodes).
fn session_hex(id: i64) -> String {
    format!("0x{:x}", id as u64)
}

/// `{"kind":..,"holders":[..],"waiters":[..]}` plus `"foreign":[..]` when the recipe ignores
/// foreign children there, and `"value"` (a string) when there is one.
pub fn to_json(found: &Inspection) -> String {
    let nodes = |nodes: &[NodeInfo]| nodes.iter().map(node_json).collect::<Vec<_>>();
    let mut object = json!({
        "kind": found.kind.name(),
        "holders": nodes(&found.holders),
        "waiters": nodes(&found.waiters),
    });
    if !found.foreign.is_empty() {
        object["foreign"] = json!(nodes(&found.foreign));
    }
    if let Some(value) = &found.value {
        object["value"] = json!(value);
    }
    object.to_string()
}

fn node_json(node: &NodeInfo) -> Value {
    json!({
        "name": node.name,
        "session_id": session_hex(node.session_id),
        "fencing_token": node.fencing_token,
        "age_ms": node.age_ms,
        "data": node.data,
    })
}

/// `kind: <kind>`, `value: <value>` when there is one, then a table of holders and waiters
/// in order (ROLE NAME SESSION TOKEN AGE DATA), data escaped onto one line. The role is
/// `holder` / `waiter`, but `counted` for a count-down latch's participants and `item` for a
/// queue's items; then `foreign` for children the recipe ignores (no compliant client made them).
pub fn table(found: &Inspection) -> String {
    let mut out = format!("kind: {}\n", found.kind.name());
    if let Some(value) = &found.value {
        out.push_str(&format!("value: {}\n", value.escape_debug()));
    }
    // a count-down latch's holders counted down; a queue's waiters are its items
    let (holder, waiter) = match found.kind {
        RecipeKind::CountDownLatch => ("counted", "waiter"),
        RecipeKind::Queue => ("holder", "item"),
        _ => ("holder", "waiter"),
    };
    let rows: Vec<[String; 6]> = found
        .holders
        .iter()
        .map(|n| (holder, n))
        .chain(found.waiters.iter().map(|n| (waiter, n)))
        .chain(found.foreign.iter().map(|n| ("foreign", n)))
        .map(|(role, n)| {
            [
                role.to_string(),
                n.name.clone(),
                session_hex(n.session_id),
                n.fencing_token.to_string(),
                humanize(Duration::from_millis(n.age_ms.max(0) as u64)),
                n.data.escape_debug().to_string(),
            ]
        })
        .collect();
    if rows.is_empty() {
        out.push_str("no holders, no waiters\n");
        return out;
    }
    let header = ["ROLE", "NAME", "SESSION", "TOKEN", "AGE", "DATA"].map(String::from);
    let mut widths = [0usize; 6];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        // padded by hand: a format width above 65,535 panics, and a node's data (up to 1 MB) is
        // a cell of that many characters
        let cells: Vec<String> =
            row.iter().zip(widths).map(|(cell, w)| format!("{cell}{}", " ".repeat(w - cell.chars().count()))).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, session_id: i64, token: i64, data: &str) -> NodeInfo {
        NodeInfo { name: name.into(), session_id, fencing_token: token, age_ms: 1500, data: data.into() }
    }

    fn mutex() -> Inspection {
        Inspection {
            kind: RecipeKind::Mutex,
            holders: vec![node("_c_a-lock-0000000000", 0x1000a2b3c4d0001, 17, "host \"a\"")],
            waiters: vec![node("_c_b-lock-0000000001", 0x1000a2b3c4d0002, 18, "line\nbreak")],
            foreign: vec![],
            value: None,
        }
    }

    #[test]
    fn json_has_the_documented_fields() {
        assert_eq!(
            to_json(&mutex()),
            concat!(
                r#"{"kind":"mutex","holders":[{"name":"_c_a-lock-0000000000","session_id":"0x1000a2b3c4d0001","#,
                r#""fencing_token":17,"age_ms":1500,"data":"host \"a\""}],"waiters":[{"name":"_c_b-lock-0000000001","#,
                r#""session_id":"0x1000a2b3c4d0002","fencing_token":18,"age_ms":1500,"data":"line\nbreak"}]}"#
            )
        );
        let counter = Inspection {
            kind: RecipeKind::Counter,
            holders: vec![],
            waiters: vec![],
            foreign: vec![],
            value: Some("5".into()),
        };
        assert_eq!(to_json(&counter), r#"{"kind":"counter","holders":[],"waiters":[],"value":"5"}"#);
    }

    #[test]
    fn a_megabyte_of_data_is_a_cell_not_a_panic() {
        let mut found = mutex();
        found.holders[0].data = "\u{FFFD}".repeat(1_000_000);
        found.foreign = vec![node("lock-", 0, 3, "")];
        let text = table(&found);
        assert!(text.lines().nth(2).is_some_and(|l| l.chars().count() > 1_000_000), "the data in full");
        assert!(
            text.lines().nth(4).is_some_and(|l| l.starts_with("foreign  lock- ") && l.contains(" 0x0 ")),
            "{:.300}",
            text.lines().nth(4).unwrap_or("")
        );
        assert!(to_json(&found).contains(r#""foreign":[{"name":"lock-""#));
    }

    #[test]
    fn table_lists_holders_then_waiters() {
        let text = table(&mutex());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "kind: mutex");
        assert!(lines[1].starts_with("ROLE    NAME"), "{text}");
        assert!(
            lines[2].starts_with("holder  _c_a-lock-0000000000  0x1000a2b3c4d0001  17     1.5s  host \\\"a\\\""),
            "{text}"
        );
        assert!(lines[3].starts_with("waiter  _c_b-lock-0000000001") && lines[3].ends_with("line\\nbreak"), "{text}");
        let queue = Inspection {
            kind: RecipeKind::Queue,
            holders: vec![],
            waiters: vec![node("qn-0000000000", 0, 5, "job")],
            foreign: vec![],
            value: Some("1 item".into()),
        };
        let text = table(&queue);
        assert!(text.starts_with("kind: queue\nvalue: 1 item\n"), "{text}");
        assert!(text.lines().nth(3).is_some_and(|l| l.starts_with("item  qn-0000000000  0x0")), "{text}");
        let empty =
            Inspection { kind: RecipeKind::Missing, holders: vec![], waiters: vec![], foreign: vec![], value: None };
        assert_eq!(table(&empty), "kind: missing\nno holders, no waiters\n");
    }
}
