//! The events contract (`contract::events`) has teeth: it passes the
//! reference [`EventfulStore`], and fails it, naming the rule, as soon as
//! one [`EventFlaw`] breaks one rule.
//!
//! | Flaw | Caught by the rule |
//! |------|--------------------|
//! | none | (the suite passes) |
//! | `LogsMessages` | a status message alone is not logged |
//! | `LogLeaksAcrossOwners` | an owner reads only its own changes |
//! | `KeepsPayload` | a logged change carries no payload |
//! | `CursorOneEarly` | a cursor resumes exactly after the last change read |
//! | `CursorOneLate` | a cursor resumes exactly after the last change read |
//! | `NoCursorReadsFromStart` | no cursor reads from now |
//! | `AcceptsAnyCursor` | a cursor the store did not give out is InvalidCursor |
//! | `RefreshResetsCursor` | a refreshed subscription keeps its id and cursor |
//! | `IgnoresHookCap` | the per-owner cap holds |
//! | `RefreshCounted` | a refresh is not counted again |
//! | `AdvanceNotCompareAndSet` | a cursor moved by another is not moved again from where it was |
//! | `AnyoneRemoves` | only its owner removes a subscription |
//! | `ListsLapsed` | a lapsed subscription is not listed |
//! | `CountsLapsed` | a lapsed subscription is not counted |
//! | `LapsedKeepsCursor` | a lapsed subscription is replaced as given |

use crate::contract;

use super::eventful::{EventFlaw, EventfulStore};
use super::{assert_rule, verdict};

/// Runs the events contract against a store with `flaw`: see [`verdict`].
async fn events_verdict(flaw: EventFlaw) -> Option<String> {
    verdict(contract::events::run(move || async move {
        EventfulStore::new(flaw)
    }))
    .await
}

/// Asserts that the events suite fails a store with `flaw`, for `rule`.
async fn assert_caught(flaw: EventFlaw, rule: &str) {
    assert_rule(events_verdict(flaw).await, flaw, rule);
}

#[tokio::test]
async fn the_events_contract_passes_a_store_that_keeps_every_rule() {
    assert_eq!(events_verdict(EventFlaw::None).await, None);
}

#[tokio::test]
async fn the_events_contract_fails_a_log_of_status_messages() {
    assert_caught(
        EventFlaw::LogsMessages,
        "a status message alone is not logged",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_a_log_that_leaks_across_owners() {
    assert_caught(
        EventFlaw::LogLeaksAcrossOwners,
        "an owner reads only its own changes",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_a_log_that_keeps_payloads() {
    assert_caught(
        EventFlaw::KeepsPayload,
        "a logged change carries no payload",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_a_cursor_that_repeats_a_change() {
    assert_caught(
        EventFlaw::CursorOneEarly,
        "a cursor resumes exactly after the last change read",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_a_cursor_that_skips_a_change() {
    assert_caught(
        EventFlaw::CursorOneLate,
        "a cursor resumes exactly after the last change read",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_a_reader_without_cursor_that_reads_the_past() {
    assert_caught(
        EventFlaw::NoCursorReadsFromStart,
        "no cursor reads from now",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_a_log_that_accepts_any_cursor() {
    assert_caught(
        EventFlaw::AcceptsAnyCursor,
        "a cursor the store did not give out is InvalidCursor",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_a_refresh_that_resets_the_cursor() {
    assert_caught(
        EventFlaw::RefreshResetsCursor,
        "a refreshed subscription keeps its id and cursor",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_subscriptions_without_a_per_owner_cap() {
    assert_caught(EventFlaw::IgnoresHookCap, "the per-owner cap holds").await;
}

#[tokio::test]
async fn the_events_contract_fails_a_refresh_counted_as_a_new_subscription() {
    assert_caught(EventFlaw::RefreshCounted, "a refresh is not counted again").await;
}

#[tokio::test]
async fn the_events_contract_fails_an_advance_that_is_not_compare_and_set() {
    assert_caught(
        EventFlaw::AdvanceNotCompareAndSet,
        "a cursor moved by another is not moved again from where it was",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_a_remove_by_another_owner() {
    assert_caught(
        EventFlaw::AnyoneRemoves,
        "only its owner removes a subscription",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_lapsed_subscriptions_still_listed() {
    assert_caught(
        EventFlaw::ListsLapsed,
        "a lapsed subscription is not listed",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_lapsed_subscriptions_still_counted() {
    assert_caught(
        EventFlaw::CountsLapsed,
        "a lapsed subscription is not counted",
    )
    .await;
}

#[tokio::test]
async fn the_events_contract_fails_a_lapsed_subscription_that_keeps_its_cursor() {
    assert_caught(
        EventFlaw::LapsedKeepsCursor,
        "a lapsed subscription is replaced as given",
    )
    .await;
}
