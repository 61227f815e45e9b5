//! The operator's contract (`contract::admin`) has teeth: it passes the
//! memory store behind an [`Overseen`] wrapper, and fails that wrapper,
//! naming the rule, as soon as one [`AdminFlaw`] spoils one answer.
//!
//! | Flaw | Caught by the rule |
//! |------|--------------------|
//! | none | (the suite passes) |
//! | `GetFindsOnlyUnowned` | admin_get finds any owner's task |
//! | `GetHidesOwner` | admin_get shows the owner |
//! | `GetDropsTool` | admin_get shows the tool |
//! | `GetCountsFromZero` | a first run is attempt 1 |
//! | `GetKeepsDeleted` | admin_get of a deleted task is None |
//! | `ListDropsTool` | admin rows carry the tool |
//!
//! The memory store keeps the whole operator's contract
//! (`tests/stores/memory.rs`), so whatever fails here is the flaw.

use std::collections::HashMap;
use std::sync::Mutex;

use mcp_tasks::store::{AdminPage, AdminTask, StoreFuture, TaskCounts};
use mcp_tasks::{
    CancelOutcome, CreatedTask, InputProgress, InputRound, MemoryTaskStore, NewTask, TaskId,
    TaskList, TaskSnapshot, TaskStore,
};
use serde_json::value::RawValue;

use super::{assert_rule, verdict};
use crate::contract;

/// The one operator's answer an [`Overseen`] store spoils, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AdminFlaw {
    /// Spoils nothing.
    None,
    /// `admin_get` reads with the owner check of an unowned caller: it
    /// finds only tasks without an owner.
    GetFindsOnlyUnowned,
    /// `admin_get` answers every task as unowned.
    GetHidesOwner,
    /// `admin_get` answers no tool.
    GetDropsTool,
    /// `admin_get` counts runs from 0.
    GetCountsFromZero,
    /// `admin_get` still answers a task the operator deleted.
    GetKeepsDeleted,
    /// `admin_list` rows carry no tool.
    ListDropsTool,
}

/// The memory store, its operator's answers spoiled by one [`AdminFlaw`].
struct Overseen {
    inner: MemoryTaskStore,
    flaw: AdminFlaw,
    /// The tasks `admin_delete` removed, as it returned them.
    deleted: Mutex<HashMap<TaskId, AdminTask>>,
}

impl Overseen {
    fn new(flaw: AdminFlaw) -> Self {
        Self {
            inner: MemoryTaskStore::new(),
            flaw,
            deleted: Mutex::default(),
        }
    }

    async fn spoiled_get(&self, id: TaskId) -> Result<Option<AdminTask>, mcp_tasks::StoreError> {
        let found = self.inner.admin_get(id).await?;
        let remembered = || self.deleted.lock().unwrap().get(&id).cloned();
        Ok(match self.flaw {
            AdminFlaw::GetFindsOnlyUnowned => found.filter(|task| task.owner.is_none()),
            AdminFlaw::GetHidesOwner => found.map(|task| AdminTask {
                owner: None,
                ..task
            }),
            AdminFlaw::GetDropsTool => found.map(|task| AdminTask { tool: None, ..task }),
            AdminFlaw::GetCountsFromZero => found.map(|task| AdminTask {
                attempt: task.attempt - 1,
                ..task
            }),
            AdminFlaw::GetKeepsDeleted => found.or_else(remembered),
            AdminFlaw::None | AdminFlaw::ListDropsTool => found,
        })
    }
}

impl TaskStore for Overseen {
    fn create(&self, task: NewTask) -> StoreFuture<'_, CreatedTask> {
        self.inner.create(task)
    }
    fn get<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<TaskSnapshot>> {
        self.inner.get(id, owner)
    }
    fn set_status_message(&self, id: TaskId, message: String) -> StoreFuture<'_, ()> {
        self.inner.set_status_message(id, message)
    }
    fn complete(&self, id: TaskId, result: Box<RawValue>) -> StoreFuture<'_, ()> {
        self.inner.complete(id, result)
    }
    fn fail(&self, id: TaskId, error: Box<RawValue>) -> StoreFuture<'_, ()> {
        self.inner.fail(id, error)
    }
    fn cancel<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
    ) -> StoreFuture<'a, Option<CancelOutcome>> {
        self.inner.cancel(id, owner)
    }
    fn require_input(&self, id: TaskId, round: InputRound) -> StoreFuture<'_, ()> {
        self.inner.require_input(id, round)
    }
    fn answer_input<'a>(
        &'a self,
        id: TaskId,
        owner: Option<&'a str>,
        answers: Vec<(String, Box<RawValue>)>,
    ) -> StoreFuture<'a, Option<InputProgress>> {
        self.inner.answer_input(id, owner, answers)
    }
    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, TaskList> {
        self.inner.list(owner, cursor, limit)
    }
    fn admin_list<'a>(
        &'a self,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, AdminPage> {
        Box::pin(async move {
            let mut page = self.inner.admin_list(cursor, limit).await?;
            if self.flaw == AdminFlaw::ListDropsTool {
                page.tasks.iter_mut().for_each(|task| task.tool = None);
            }
            Ok(page)
        })
    }
    fn admin_counts(&self) -> StoreFuture<'_, TaskCounts> {
        self.inner.admin_counts()
    }
    fn admin_cancel(&self, id: TaskId) -> StoreFuture<'_, Option<CancelOutcome>> {
        self.inner.admin_cancel(id)
    }
    fn admin_get(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        Box::pin(self.spoiled_get(id))
    }
    fn admin_delete(&self, id: TaskId) -> StoreFuture<'_, Option<AdminTask>> {
        Box::pin(async move {
            let removed = self.inner.admin_delete(id).await?;
            if let Some(task) = &removed {
                self.deleted.lock().unwrap().insert(id, task.clone());
            }
            Ok(removed)
        })
    }
}

/// Runs the operator's contract against a store with `flaw`: see [`verdict`].
async fn admin_verdict(flaw: AdminFlaw) -> Option<String> {
    verdict(contract::admin::run(
        move || async move { Overseen::new(flaw) },
    ))
    .await
}

/// Asserts that the operator's suite fails a store with `flaw`, for `rule`.
async fn assert_caught(flaw: AdminFlaw, rule: &str) {
    assert_rule(admin_verdict(flaw).await, flaw, rule);
}

#[tokio::test]
async fn the_operators_contract_passes_a_store_that_keeps_every_rule() {
    assert_eq!(admin_verdict(AdminFlaw::None).await, None);
}

#[tokio::test]
async fn the_operators_contract_fails_an_admin_get_that_checks_the_owner() {
    assert_caught(
        AdminFlaw::GetFindsOnlyUnowned,
        "admin_get finds any owner's task",
    )
    .await;
}

#[tokio::test]
async fn the_operators_contract_fails_an_admin_get_that_hides_the_owner() {
    assert_caught(AdminFlaw::GetHidesOwner, "admin_get shows the owner").await;
}

#[tokio::test]
async fn the_operators_contract_fails_an_admin_get_that_drops_the_tool() {
    assert_caught(AdminFlaw::GetDropsTool, "admin_get shows the tool").await;
}

#[tokio::test]
async fn the_operators_contract_fails_an_admin_get_that_counts_runs_from_zero() {
    assert_caught(AdminFlaw::GetCountsFromZero, "a first run is attempt 1").await;
}

#[tokio::test]
async fn the_operators_contract_fails_an_admin_get_that_finds_a_deleted_task() {
    assert_caught(
        AdminFlaw::GetKeepsDeleted,
        "admin_get of a deleted task is None",
    )
    .await;
}

#[tokio::test]
async fn the_operators_contract_fails_admin_rows_without_the_tool() {
    assert_caught(AdminFlaw::ListDropsTool, "admin rows carry the tool").await;
}
