//! harel 0.9.0's Python transports as peers: bench/peers.py, run with the venv's python,
//! measures the same cases on copies of the same states (harel 0.9's schema) and prints
//! one JSON line, read here.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::measure::Figure;
use crate::states::{ClaimCase, Expect, State, Style, Templates};

pub const PEERS: [&str; 2] = ["libsql", "sqlite"];

pub struct Plan<'a> {
    pub python: &'a str,
    pub script: &'a str,
    pub work: &'a Path,
    pub publish: Vec<(&'static str, (usize, usize))>,
    pub drain: State,
    pub rate_cap: Duration,
    pub claim_budget: Duration,
    pub max_iters: usize,
}

/// Figures by peer, then by case id; and each peer's connection settings.
pub struct PeerResults {
    pub figures: Vec<(String, Vec<(String, Figure)>)>,
    pub settings: Value,
    pub raw: Value,
}

pub fn run(plan: &Plan, cases: &[ClaimCase], templates: &mut Templates) -> Result<PeerResults, String> {
    let work = |name: &str| plan.work.join(name).to_str().unwrap_or_default().to_owned();
    let mut list: Vec<Value> = plan
        .publish
        .iter()
        .map(|(id, (n, groups))| {
            json!({"id": id, "op": "publish", "path": work("peer-publish.db"),
                   "n": n, "groups": groups, "cap_s": plan.rate_cap.as_secs_f64()})
        })
        .collect();
    list.push(json!({"id": "drain", "op": "drain", "path": work("peer-drain.db"),
                     "template": templates.get(Style::Harel09, plan.drain)?.to_str(),
                     "cap_s": plan.rate_cap.as_secs_f64()}));
    for c in cases {
        if !c.routing_keys.is_empty() {
            list.push(json!({"id": c.id, "op": "n/a", "why": "harel 0.9 has no routing keys"}));
            continue;
        }
        let expect = match &c.expect {
            Expect::Any => json!("*"),
            Expect::Group(g) => json!(g),
            Expect::Nothing => Value::Null,
        };
        list.push(json!({"id": c.id, "op": "claim", "path": work("peer-claim.db"),
                         "template": templates.get(Style::Harel09, c.state)?.to_str(),
                         "min_priority": c.min_priority, "expect": expect,
                         "budget_s": plan.claim_budget.as_secs_f64(), "max_iters": plan.max_iters}));
    }
    let plan_path = plan.work.join("peers-plan.json");
    let doc = json!({"peers": PEERS, "cases": list});
    std::fs::write(&plan_path, doc.to_string()).map_err(|e| e.to_string())?;
    let out = Command::new(plan.python)
        .arg(plan.script)
        .arg(&plan_path)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("running {} {}: {e}", plan.python, plan.script))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let v: Value = serde_json::from_str(last)
        .map_err(|e| format!("{} exited {}; its last line {last:?}: {e}", plan.script, out.status))?;
    let mut figures = Vec::new();
    for peer in PEERS {
        let cases = v["peers"][peer]["results"].as_object().cloned().unwrap_or_default();
        figures.push((peer.to_owned(), cases.iter().map(|(id, f)| (id.clone(), Figure::from_json(f))).collect()));
    }
    let settings = json!({
        "libsql": v["peers"]["libsql"]["settings"].clone(),
        "sqlite": v["peers"]["sqlite"]["settings"].clone(),
    });
    Ok(PeerResults { figures, settings, raw: v })
}
