//! The store contract suite has teeth: it passes a small, obviously correct
//! reference store, and fails that same store, naming the rule, as soon as one
//! switch breaks exactly one rule.

use crate::contract;

mod admin;
mod eventful;
mod events;
mod naive;

use mcp_tasks::{
    InputProgress, InputRound, NewTask, Quota, StoreError, TaskId, TaskStore, Timestamp,
};
use naive::{Flaw, NaiveStore};
use serde_json::value::RawValue;
use std::fmt::Debug;
use std::future::Future;

/// Runs `suite` on its own tokio task; the panic message of the rule that
/// failed, or `None` if all passed.
async fn verdict(suite: impl Future<Output = ()> + Send + 'static) -> Option<String> {
    let error = tokio::spawn(suite).await.err()?;
    assert!(
        error.is_panic(),
        "the suite must fail by panicking: {error}"
    );
    let payload = error.into_panic();
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()));
    Some(message.expect("the suite panics with a text message"))
}

/// Asserts that a suite's `verdict` on a store with `flaw` names `rule`.
fn assert_rule(verdict: Option<String>, flaw: impl Debug, rule: &str) {
    let message = verdict.unwrap_or_else(|| panic!("the suite passed a store with {flaw:?}"));
    assert!(
        message.contains(&format!("rule: {rule}")),
        "a store with {flaw:?} must fail for \"rule: {rule}\", it failed with: {message}"
    );
}

/// Runs the whole contract against a store with `flaw`: see [`verdict`].
async fn contract_verdict(flaw: Flaw) -> Option<String> {
    verdict(contract::run(move || async move { NaiveStore::new(flaw) })).await
}

/// Asserts that the suite fails a store with `flaw`, for the rule `rule`.
async fn assert_caught(flaw: Flaw, rule: &str) {
    assert_rule(contract_verdict(flaw).await, flaw, rule);
}

#[tokio::test]
async fn the_contract_passes_a_store_that_keeps_every_rule() {
    assert_eq!(contract_verdict(Flaw::None).await, None);
}

/// The operator's rules fail a store that does not offer those methods
/// (the reference store keeps the trait's defaults).
#[tokio::test]
async fn the_operators_contract_fails_a_store_without_the_operators_methods() {
    let suite = tokio::spawn(contract::admin::run(|| async {
        NaiveStore::new(Flaw::None)
    }));
    let error = suite
        .await
        .expect_err("the operator's suite must fail the store");
    assert!(
        error.is_panic(),
        "the suite must fail by panicking: {error}"
    );
}

/// The change-feed rules fail a store without a feed.
#[tokio::test]
async fn the_change_feed_contract_fails_a_store_without_a_feed() {
    let suite = tokio::spawn(contract::changes::run(|| async {
        NaiveStore::new(Flaw::None)
    }));
    let error = suite
        .await
        .expect_err("the change-feed suite must fail the store");
    assert!(
        error.is_panic(),
        "the suite must fail by panicking: {error}"
    );
}

#[tokio::test]
async fn the_contract_fails_a_store_whose_terminal_states_change() {
    assert_caught(Flaw::TerminalOverwritten, "terminal states never change").await;
}

#[tokio::test]
async fn the_contract_fails_a_store_where_a_late_outcome_overwrites_cancelled() {
    assert_caught(
        Flaw::LateOutcomeOverwritesCancelled,
        "a late outcome never overwrites cancelled",
    )
    .await;
}

#[tokio::test]
async fn the_contract_fails_a_store_that_ignores_the_ttl() {
    assert_caught(Flaw::NeverExpires, "expired is unknown").await;
}

#[tokio::test]
async fn the_contract_fails_a_store_that_leaks_tasks_across_owners() {
    assert_caught(Flaw::LeaksAcrossOwners, "no cross-owner reads").await;
}

#[tokio::test]
async fn the_contract_fails_a_store_that_lists_other_owners_tasks() {
    assert_caught(
        Flaw::ListLeaksAcrossOwners,
        "list shows only the owner's tasks",
    )
    .await;
}

#[tokio::test]
async fn the_contract_fails_a_store_that_lists_expired_tasks() {
    assert_caught(Flaw::ListShowsExpired, "expired tasks are not listed").await;
}

#[tokio::test]
async fn the_contract_fails_a_store_that_accepts_any_cursor() {
    assert_caught(
        Flaw::ListAcceptsAnyCursor,
        "a cursor the store did not give out is InvalidCursor",
    )
    .await;
}

#[tokio::test]
async fn the_contract_fails_a_store_whose_listing_never_ends() {
    assert_caught(Flaw::ListCursorNeverEnds, "the last page has no cursor").await;
}

#[tokio::test]
async fn the_contract_fails_a_store_that_ignores_quotas() {
    assert_caught(
        Flaw::IgnoresQuota,
        "the per-owner cap refuses one task too many",
    )
    .await;
}

#[tokio::test]
async fn the_contract_fails_a_store_that_ignores_the_total_quota() {
    assert_caught(
        Flaw::IgnoresTotalQuota,
        "the total cap refuses one task too many",
    )
    .await;
}

#[tokio::test]
async fn the_contract_fails_a_store_whose_per_owner_quota_counts_every_owner() {
    assert_caught(Flaw::QuotaPoolsOwners, "another owner's tasks do not count").await;
}

#[tokio::test]
async fn the_contract_fails_a_store_that_counts_unowned_tasks_apart() {
    assert_caught(
        Flaw::QuotaCountsUnownedApart,
        "unowned tasks count together as one owner",
    )
    .await;
}

#[tokio::test]
async fn the_contract_fails_a_store_whose_quota_counts_expired_tasks() {
    assert_caught(Flaw::QuotaCountsExpired, "an expired task no longer counts").await;
}

#[tokio::test]
async fn the_contract_fails_a_store_whose_quota_counts_only_running_tasks() {
    assert_caught(
        Flaw::QuotaCountsOnlyRunning,
        "a terminal task still counts until it expires",
    )
    .await;
}

#[tokio::test]
async fn the_contract_fails_a_store_that_checks_a_quota_apart_from_the_insert() {
    assert_caught(
        Flaw::QuotaCheckedApart,
        "concurrent creates never overshoot a quota",
    )
    .await;
}

/// The reference store itself, checked by hand where the suite is silent.
#[tokio::test]
async fn the_reference_store_keeps_what_the_suite_does_not_check() {
    let store = NaiveStore::new(Flaw::None);
    let raw = |text: &str| RawValue::from_string(text.to_owned()).unwrap();
    let id = TaskId::generate().unwrap();
    let new = NewTask {
        id,
        owner: None,
        created_at: Timestamp::now(),
        ttl: None,
        poll_interval: None,
        status_message: None,
        quota: Quota::default(),
        tool: None,
        rerun: None,
    };
    store.create(new.clone()).await.unwrap();
    assert!(matches!(
        store.create(new).await,
        Err(StoreError::Backend(_))
    ));
    store
        .set_status_message(id, "half way".into())
        .await
        .unwrap();
    let read = store.get(id, None).await.unwrap().unwrap();
    assert_eq!(read.status_message.as_deref(), Some("half way"));
    let progress = store.answer_input(id, None, vec![]).await.unwrap();
    assert!(matches!(progress, Some(InputProgress::NotWaiting)));
    store
        .fail(id, raw(r#"{"code":1,"message":"x"}"#))
        .await
        .unwrap();
    assert!(store.set_status_message(id, "late".into()).await.is_err());
    assert!(
        store
            .require_input(
                id,
                InputRound {
                    requests: vec![],
                    resume: raw("{}"),
                }
            )
            .await
            .is_err()
    );
    let unknown = TaskId::generate().unwrap();
    assert!(matches!(
        store.complete(unknown, raw("{}")).await,
        Err(StoreError::NotFound)
    ));
}
