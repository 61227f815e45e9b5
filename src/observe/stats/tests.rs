use std::time::{Duration, Instant};

use super::*;

fn record(tool: &str, millis: u64, parked: bool, outcome: CallOutcome) -> CallRecord<'_> {
    CallRecord::new(tool, Duration::from_millis(millis), parked, outcome)
}

/// `stats` recording at `slot` slots after its start (and a bit).
fn at(stats: &ToolStats, slot: u32) -> Instant {
    stats.shared.epoch + stats.shared.slot * slot + Duration::from_micros(1)
}

#[test]
fn calls_count_per_tool_by_outcome_and_the_series_are_sorted_by_name() {
    let stats = ToolStats::with_window(Duration::from_secs(1), 5);
    let now = at(&stats, 0);
    stats.record_at(now, &record("zeta", 5, false, CallOutcome::Succeeded));
    stats.record_at(now, &record("alpha", 5, true, CallOutcome::Succeeded));
    stats.record_at(now, &record("alpha", 7, true, CallOutcome::Failed));
    stats.record_at(now, &record("alpha", 9, false, CallOutcome::Failed));
    stats.record_at(now, &record("alpha", 9, true, CallOutcome::Cancelled));
    let series = stats.snapshot_at(now);
    let names: Vec<&str> = series.iter().map(|s| s.tool.as_str()).collect();
    assert_eq!(names, ["alpha", "zeta"]);
    let alpha = &series[0].total;
    assert_eq!((alpha.calls, alpha.parked, alpha.failed), (4, 3, 2));
    assert_eq!(series[1].total.calls, 1);
    assert!(series.iter().all(|s| s.slots.len() == 5));
}

#[test]
fn slots_run_oldest_first_and_calls_leave_with_their_slot() {
    let stats = ToolStats::with_window(Duration::from_secs(10), 3);
    stats.record_at(
        at(&stats, 0),
        &record("t", 100, false, CallOutcome::Succeeded),
    );
    stats.record_at(
        at(&stats, 2),
        &record("t", 300, false, CallOutcome::Succeeded),
    );
    stats.record_at(
        at(&stats, 2),
        &record("t", 300, false, CallOutcome::Succeeded),
    );
    let calls = |slot: u32| -> Vec<u64> {
        stats.snapshot_at(at(&stats, slot))[0]
            .slots
            .iter()
            .map(|s| s.calls)
            .collect()
    };
    assert_eq!(calls(2), [1, 0, 2]);
    assert_eq!(calls(3), [0, 2, 0]);
    assert_eq!(calls(4), [2, 0, 0]);
    assert_eq!(calls(5), [0, 0, 0]);
    let series = stats.snapshot_at(at(&stats, 2));
    assert_eq!(series[0].slots[1], SlotStats::default());
    let total = series[0].total;
    assert_eq!(total.calls, 3);
    let p50 = total.p50.expect("calls").as_secs_f64();
    let p99 = total.p99.expect("calls").as_secs_f64();
    assert!(
        (p50 - 0.3).abs() <= 0.3 * ToolStats::MAX_RELATIVE_ERROR,
        "{p50}"
    );
    assert!(
        (p99 - 0.3).abs() <= 0.3 * ToolStats::MAX_RELATIVE_ERROR,
        "{p99}"
    );
    // A slot reused for a later period starts empty.
    stats.record_at(at(&stats, 3), &record("t", 1, false, CallOutcome::Failed));
    let slots = &stats.snapshot_at(at(&stats, 3))[0].slots;
    assert_eq!((slots[2].calls, slots[2].failed), (1, 1));
}

#[test]
fn the_257th_name_and_later_ones_count_under_other() {
    let stats = ToolStats::new();
    let now = at(&stats, 0);
    for n in 0..ToolStats::MAX_TOOLS {
        stats.record_at(
            now,
            &record(&format!("tool{n:03}"), 1, false, CallOutcome::Succeeded),
        );
    }
    assert!(
        stats
            .snapshot_at(now)
            .iter()
            .all(|s| s.tool != ToolStats::OTHER)
    );
    stats.record_at(now, &record("one_more", 1, false, CallOutcome::Failed));
    stats.record_at(now, &record("and_another", 1, true, CallOutcome::Succeeded));
    // A known name still has its own.
    stats.record_at(now, &record("tool000", 1, false, CallOutcome::Succeeded));
    let series = stats.snapshot_at(now);
    assert_eq!(series.len(), ToolStats::MAX_TOOLS + 1);
    assert_eq!(series[0].tool, ToolStats::OTHER);
    let other = series[0].total;
    assert_eq!((other.calls, other.parked, other.failed), (2, 1, 1));
    assert_eq!(series[1].tool, "tool000");
    assert_eq!(series[1].total.calls, 2);
    assert!(!series.iter().any(|s| s.tool == "one_more"));
}

#[test]
fn a_long_name_is_cut_at_a_char_boundary() {
    let stats = ToolStats::new();
    let now = at(&stats, 0);
    let megabyte = "€".repeat(350_000);
    stats.record_at(now, &record(&megabyte, 1, false, CallOutcome::Succeeded));
    stats.record_at(
        now,
        &record(&megabyte[3..], 1, false, CallOutcome::Succeeded),
    );
    let series = stats.snapshot_at(now);
    assert_eq!(series.len(), 1);
    // 85 whole euro signs: 255 bytes, the 86th would end at 258.
    assert_eq!(series[0].tool, "€".repeat(85));
    assert_eq!(series[0].total.calls, 2);
    assert_eq!(cut("short"), "short");
    assert_eq!(cut(&"a".repeat(300)).len(), ToolStats::MAX_NAME_BYTES);
}

#[test]
fn the_window_is_clamped_to_its_limits() {
    let stats = ToolStats::with_window(Duration::ZERO, 0);
    assert_eq!(stats.shared.slot, Duration::from_millis(1));
    assert_eq!(stats.shared.slots, 1);
    let stats = ToolStats::with_window(Duration::from_secs(1), usize::MAX);
    assert_eq!(stats.shared.slots, ToolStats::MAX_SLOTS);
    let defaults = ToolStats::default();
    assert_eq!(
        (defaults.shared.slot, defaults.shared.slots),
        (Duration::from_secs(10), 60)
    );
}

#[test]
fn a_snapshot_serializes_as_plain_data_with_milliseconds() {
    let stats = ToolStats::with_window(Duration::from_secs(1), 2);
    let now = at(&stats, 1);
    stats.record_at(now, &record("t", 250, true, CallOutcome::Succeeded));
    let json = serde_json::to_value(stats.snapshot_at(now)).unwrap();
    let empty = serde_json::json!({
        "calls": 0, "parked": 0, "failed": 0,
        "p50_ms": null, "p95_ms": null, "p99_ms": null,
    });
    assert_eq!(json[0]["tool"], "t");
    assert_eq!(json[0]["slots"][0], empty);
    assert_eq!(json[0]["slots"][1]["parked"], 1);
    let p95 = json[0]["total"]["p95_ms"].as_f64().unwrap();
    assert!(
        (p95 - 250.0).abs() <= 250.0 * ToolStats::MAX_RELATIVE_ERROR,
        "{p95}"
    );
}

#[test]
fn threads_recording_side_by_side_lose_no_call() {
    let stats = ToolStats::new();
    let now = at(&stats, 0);
    std::thread::scope(|scope| {
        for thread in 0..8_u64 {
            let stats = &stats;
            scope.spawn(move || {
                for n in 0..5_000_u64 {
                    let tool = ["a", "b", "c", "d"][(n % 4) as usize];
                    let failed = if (n + thread) % 5 == 0 {
                        CallOutcome::Failed
                    } else {
                        CallOutcome::Succeeded
                    };
                    stats.record_at(now, &record(tool, n % 97, n % 2 == 0, failed));
                }
            });
        }
    });
    let series = stats.snapshot_at(now);
    assert_eq!(series.len(), 4);
    for tool in &series {
        assert_eq!(tool.total.calls, 10_000, "{}", tool.tool);
    }
    let total: u64 = series.iter().map(|s| s.total.failed).sum();
    assert_eq!(total, 8_000);
}
