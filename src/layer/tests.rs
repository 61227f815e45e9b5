use super::*;
use crate::store::MemoryTaskStore;

fn shares(a: &TasksService<()>, b: &TasksService<()>) -> bool {
    Arc::ptr_eq(&a.shared().sessions, &b.shared().sessions)
        && Arc::ptr_eq(
            &a.shared().runtime.background,
            &b.shared().runtime.background,
        )
}

#[test]
fn clones_share_one_build_and_a_setting_after_it_builds_anew() {
    let layer = TasksLayer::new(MemoryTaskStore::new()).max_running(2);
    let first = layer.layer(());
    assert!(shares(&first, &layer.clone().layer(())));
    assert!(shares(&first, &layer.clone().build().layer(())));
    // Any setting after the build: a layer that builds anew, with it.
    let changed = layer.clone().threshold(Duration::from_millis(5));
    let other = changed.layer(());
    assert!(!shares(&first, &other));
    assert_eq!(other.config().threshold(), Duration::from_millis(5));
    assert!(shares(&other, &changed.layer(())));
    // An explicit build: every service of it shares it.
    let tasks = TasksLayer::new(MemoryTaskStore::new()).build();
    assert!(shares(&tasks.layer(()), &tasks.clone().layer(())));
}

#[test]
fn a_clone_set_apart_before_either_builds_keeps_its_own_settings() {
    let layer = TasksLayer::new(MemoryTaskStore::new());
    let apart = layer.clone().threshold(Duration::from_millis(5));
    let first = layer.layer(());
    let other = apart.layer(());
    assert!(!shares(&first, &other));
    assert_eq!(other.config().threshold(), Duration::from_millis(5));
    assert_ne!(first.config().threshold(), Duration::from_millis(5));
}

#[test]
fn a_drain_taken_before_the_build_drains_what_it_builds() {
    let layer = TasksLayer::new(MemoryTaskStore::new());
    let drain = layer.drain();
    assert_eq!(drain.running(), 0);
    // Settings before the build keep the drain's tie.
    let tasks = layer
        .threshold(Duration::from_millis(5))
        .max_running(3)
        .build();
    assert!(!tasks.drain().is_closed());
    drain.close();
    assert!(tasks.drain().is_closed());
    assert_eq!(tasks.config().max_running(), 3);
}

#[test]
fn a_drain_closed_before_the_build_makes_it_start_closed() {
    let layer = TasksLayer::new(MemoryTaskStore::new());
    let drain = layer.drain();
    drain.close();
    assert!(drain.is_closed());
    assert!(layer.build().drain().is_closed());
}
