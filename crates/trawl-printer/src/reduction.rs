//! The data-reduction summary as a readable table, written from the report's JSON form.

use serde_json::Value;

use crate::human;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn ratio(v: &Value) -> String {
    v.as_f64()
        .map(|r| format!("{r:.2}:1"))
        .unwrap_or_else(|| "-".into())
}

/// `reduction` (as in the JSON report) as a table.
pub fn table(r: &Value) -> String {
    let mut s = String::new();
    s.push_str("data reduction:\n");
    s.push_str(&format!(
        "  {:<18} {:>12} {:>12} {:>12} {:>12} {:>10}\n",
        "dedup", "logical", "blocks", "unique", "zero blocks", "ratio"
    ));
    let mut row = |name: String, d: &Value| {
        s.push_str(&format!(
            "  {:<18} {:>12} {:>12} {:>12} {:>12} {:>10}\n",
            name,
            human::bytes(u(&d["logical_bytes"])),
            u(&d["blocks"]),
            human::bytes(u(&d["unique_bytes"])),
            u(&d["zero_blocks"]),
            ratio(&d["ratio"])
        ));
    };
    for d in r["dedup"].as_array().into_iter().flatten() {
        row(format!("{} blocks", human::bytes(u(&d["block_size"]))), d);
    }
    if r["cdc"].is_object() {
        row(
            format!("cdc ~{}", human::bytes(u(&r["cdc"]["avg_size"]))),
            &r["cdc"],
        );
    }
    let comp = r["compression"].as_array().cloned().unwrap_or_default();
    if !comp.is_empty() {
        s.push_str(&format!(
            "  {:<18} {:>12} {:>12} {:>12} {:>10} {:>16}\n",
            "compression", "unit", "compressed", "allocated", "ratio", "dedup+compress"
        ));
        for c in &comp {
            s.push_str(&format!(
                "  {:<18} {:>12} {:>12} {:>12} {:>10} {:>16}\n",
                format!("{}:{}", c["codec"].as_str().unwrap_or("?"), c["level"]),
                human::bytes(u(&c["unit"])),
                human::bytes(u(&c["compressed_bytes"])),
                human::bytes(u(&c["allocated_bytes"])),
                ratio(&c["ratio"]),
                ratio(&c["combined_ratio"])
            ));
        }
    }
    let top = r["top_files"].as_array().cloned().unwrap_or_default();
    if let Some(first) = top.first() {
        s.push_str(&format!(
            "  files contributing most duplicate bytes ({} blocks):
  {:>12} {:>12}  path
",
            human::bytes(u(&first["block_size"])),
            "duplicate",
            "saved share"
        ));
        for t in &top {
            s.push_str(&format!(
                "  {:>12} {:>12}  {}\n",
                human::bytes(u(&t["duplicate_bytes"])),
                human::bytes(u(&t["saved_bytes"])),
                t["path"].as_str().unwrap_or("?")
            ));
        }
    }
    if let Some(note) = r["top_files_note"].as_str() {
        s.push_str(&format!(
            "  files contributing most duplicate bytes: {note}\n"
        ));
    }
    s
}
