//! What `reviewbot stats` prints: per lens, the findings it posted and what became of them, with
//! what it cost; a table a person reads, or one JSON document.

use serde::Serialize;

use crate::store::LensStats;

/// The totals over every lens: a finding two lenses raised counts for each.
fn all(stats: &[LensStats]) -> LensStats {
    let mut sum = LensStats {
        lens: "all".to_owned(),
        ..LensStats::default()
    };
    for s in stats {
        sum.posted += s.posted;
        sum.open += s.open;
        sum.addressed += s.addressed;
        sum.withdrawn += s.withdrawn;
        sum.disputed += s.disputed;
        sum.dismissed += s.dismissed;
        sum.open_at_merge += s.open_at_merge;
        sum.open_at_close += s.open_at_close;
        sum.thumbs_up += s.thumbs_up;
        sum.thumbs_down += s.thumbs_down;
        sum.tokens += s.tokens;
        sum.cost_usd += s.cost_usd;
    }
    sum
}

/// A `--since` in words: `30 days`, `12 hours`, else as given (`90m`).
pub fn span(d: std::time::Duration) -> String {
    let secs = d.as_secs();
    match secs {
        s if s > 0 && s % 86_400 == 0 => plural(s / 86_400, "day"),
        s if s > 0 && s % 3_600 == 0 => plural(s / 3_600, "hour"),
        _ => humantime::format_duration(d).to_string(),
    }
}

fn plural(n: u64, unit: &str) -> String {
    match n {
        1 => format!("1 {unit}"),
        n => format!("{n} {unit}s"),
    }
}

/// The table; `scope` says which repositories and since when (`octo/app, last 30 days`).
pub fn text(scope: &str, stats: &[LensStats]) -> String {
    if stats.is_empty() {
        return format!("No findings recorded for {scope}.\n");
    }
    let mut out = format!("Findings posted for {scope}, per lens:\n\n");
    let width = stats
        .iter()
        .map(|s| s.lens.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    out.push_str(&format!(
        "{:<width$} {:>6} {:>5} {:>9} {:>9} {:>8} {:>9} {:>7} {:>7} {:>4} {:>4} {:>9} {:>10} {:>9} {:>12}\n",
        "lens", "posted", "open", "addressed", "withdrawn", "disputed", "dismissed", "merged",
        "closed", "+1", "-1", "addr.rate", "tokens", "cost", "$/addressed"
    ));
    for s in stats.iter().chain(std::iter::once(&all(stats))) {
        let rate = s
            .addressed_rate()
            .map_or_else(|| "-".to_owned(), |r| format!("{:.0}%", r * 100.0));
        let per = s
            .cost_per_addressed()
            .map_or_else(|| "-".to_owned(), |c| format!("${c:.2}"));
        out.push_str(&format!(
            "{:<width$} {:>6} {:>5} {:>9} {:>9} {:>8} {:>9} {:>7} {:>7} {:>4} {:>4} {:>9} {:>10} {:>9} {:>12}\n",
            s.lens,
            s.posted,
            s.open,
            s.addressed,
            s.withdrawn,
            s.disputed,
            s.dismissed,
            s.open_at_merge,
            s.open_at_close,
            s.thumbs_up,
            s.thumbs_down,
            rate,
            s.tokens,
            format!("${:.2}", s.cost_usd),
            per
        ));
    }
    out.push_str(
        "\naddressed rate: addressed / settled (every outcome but open); merged and closed: still \
         holding when the PR was merged or closed.\n",
    );
    out
}

#[derive(Serialize)]
struct Row<'a> {
    #[serde(flatten)]
    stats: &'a LensStats,
    settled: u64,
    addressed_rate: Option<f64>,
    cost_per_addressed: Option<f64>,
}

fn row(stats: &LensStats) -> Row<'_> {
    Row {
        stats,
        settled: stats.settled(),
        addressed_rate: stats.addressed_rate(),
        cost_per_addressed: stats.cost_per_addressed(),
    }
}

/// `{"repo", "since_ms", "lenses": [...], "all": {...}}`.
pub fn json(repo: Option<&str>, since_ms: i64, stats: &[LensStats]) -> String {
    let total = all(stats);
    let doc = serde_json::json!({
        "repo": repo,
        "since_ms": since_ms,
        "lenses": stats.iter().map(row).collect::<Vec<_>>(),
        "all": row(&total),
    });
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".to_owned());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lens(name: &str, posted: u64, addressed: u64, open: u64, cost: f64) -> LensStats {
        LensStats {
            lens: name.to_owned(),
            posted,
            addressed,
            open,
            withdrawn: posted - addressed - open,
            thumbs_up: 2,
            tokens: 120_000,
            cost_usd: cost,
            ..LensStats::default()
        }
    }

    #[test]
    fn the_table_and_the_document() {
        let stats = [lens("claude", 10, 6, 2, 3.0), lens("codex", 4, 0, 4, 0.0)];
        insta::assert_snapshot!("stats_table", text("octo/app, last 30 days", &stats));
        insta::assert_snapshot!("stats_empty", text("octo/app, last 30 days", &[]));
        insta::assert_snapshot!("stats_json", json(Some("octo/app"), 0, &stats));
        let days = std::time::Duration::from_secs(30 * 86_400);
        assert_eq!(span(days), "30 days");
        assert_eq!(span(std::time::Duration::from_secs(3_600)), "1 hour");
        assert_eq!(span(std::time::Duration::from_secs(90 * 60)), "1h 30m");
    }
}
