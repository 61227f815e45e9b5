//! The 2025-11-25 path of `TasksLayer`: `tasks/get` next to the 2026-07-28
//! `tasks/get` over the same store, `tasks/list` for one owner with 10k tasks
//! among 1M, and a plain call in a 2025-11-25 session with and without the
//! layer. The inner service is the in-process responder of `support/inner.rs`.
//!
//! Run: `cargo bench --bench legacy`. Results: `BENCHMARKS.md`.

#[path = "support/inner.rs"]
mod inner;
#[path = "support/tasks.rs"]
mod tasks;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::Full;
use mcp_tasks::{MemoryTaskStore, Principal, TasksLayer};
use tower::{Layer, Service};

use inner::{Answers, Inner, legacy_request, request};
use tasks::fill;

/// The principal of the listing owner.
const OWNER: &str = "owner-0";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Sends `request` as `principal` and reads the whole body.
async fn roundtrip<S, B>(
    service: S,
    mut request: http::Request<Full<Bytes>>,
    principal: Option<&str>,
) -> Bytes
where
    S: Service<http::Request<Full<Bytes>>, Response = http::Response<B>>,
    S::Error: std::fmt::Debug,
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    if let Some(principal) = principal {
        request.extensions_mut().insert(Principal::new(principal));
    }
    inner::roundtrip(service, request).await
}

/// Runs `initialize` through `layered` so that the layer knows the session.
fn open_session<S>(rt: &tokio::runtime::Runtime, layered: S, principal: Option<&str>)
where
    S: Service<
            http::Request<Full<Bytes>>,
            Response = http::Response<mcp_tasks::ResponseBody<Full<Bytes>>>,
        >,
    S::Error: std::fmt::Debug,
{
    let params = r#""protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}"#;
    let body = rt.block_on(roundtrip(
        layered,
        legacy_request(0, "initialize", params),
        principal,
    ));
    assert!(
        std::str::from_utf8(&body).unwrap().contains(r#""tasks""#),
        "tasks advertised"
    );
}

fn tasks_get_both_generations(c: &mut Criterion) {
    let rt = runtime();
    let store = MemoryTaskStore::new();
    rt.block_on(fill(&store, None, 99_999));
    let target = rt.block_on(fill(&store, None, 1)).to_string();
    let layered = TasksLayer::new(store).layer(Inner {
        answers: Answers::AtOnce,
    });
    open_session(&rt, layered.clone(), None);

    let params = format!(r#""taskId":"{target}""#);
    let legacy = || legacy_request(3, "tasks/get", &params);
    let modern = || request(3, "tasks/get", &params, Some(&target), true);
    let probe = rt.block_on(roundtrip(layered.clone(), legacy(), None));
    let probe = std::str::from_utf8(&probe).unwrap();
    assert!(probe.contains(r#""ttl":3600000"#), "{probe}");

    let mut group = c.benchmark_group("tasks_get_100k_tasks");
    group.bench_function("legacy_2025_11_25", |b| {
        b.to_async(&rt)
            .iter(|| roundtrip(layered.clone(), legacy(), None))
    });
    group.bench_function("modern_2026_07_28", |b| {
        b.to_async(&rt)
            .iter(|| roundtrip(layered.clone(), modern(), None))
    });
    group.finish();
}

fn tasks_list_one_owner(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("tasks_list_first_page_of_100");
    group.sample_size(30);
    for (label, others) in [("10k_of_10k", 0usize), ("10k_of_1m", 990_000)] {
        let store = MemoryTaskStore::new();
        rt.block_on(async {
            // Other owners' tasks first, then the owner's, then more others,
            // so the owner's tasks sit in the middle of the store.
            for n in 0..others / 2 / 1000 {
                fill(&store, Some(&format!("other-{n}")), 1000).await;
            }
            fill(&store, Some(OWNER), 10_000).await;
            for n in others / 2 / 1000..others / 1000 {
                fill(&store, Some(&format!("other-{n}")), 1000).await;
            }
        });
        assert_eq!(store.len(), 10_000 + others);
        let layered = TasksLayer::new(store).layer(Inner {
            answers: Answers::AtOnce,
        });
        open_session(&rt, layered.clone(), Some(OWNER));
        let list = || legacy_request(4, "tasks/list", "");
        let probe = rt.block_on(roundtrip(layered.clone(), list(), Some(OWNER)));
        let value: serde_json::Value = serde_json::from_slice(&probe).expect("json");
        assert_eq!(
            value["result"]["tasks"].as_array().map(Vec::len),
            Some(100),
            "{value}"
        );
        group.bench_function(label, |b| {
            b.to_async(&rt)
                .iter(|| roundtrip(layered.clone(), list(), Some(OWNER)))
        });
    }
    group.finish();
}

fn plain_call_in_a_legacy_session(c: &mut Criterion) {
    let rt = runtime();
    let bare = Inner {
        answers: Answers::AtOnce,
    };
    let layered = TasksLayer::new(MemoryTaskStore::new()).layer(bare);
    open_session(&rt, layered.clone(), None);
    let call = || legacy_request(5, "tools/call", r#""name":"job","arguments":{}"#);
    let mut group = c.benchmark_group("legacy_session_tools_call");
    group.bench_function("without_layer", |b| {
        b.to_async(&rt).iter(|| roundtrip(bare, call(), None))
    });
    group.bench_function("with_layer", |b| {
        b.to_async(&rt)
            .iter(|| roundtrip(layered.clone(), call(), None))
    });
    group.finish();
}

criterion_group!(
    benches,
    tasks_get_both_generations,
    plain_call_in_a_legacy_session,
    tasks_list_one_owner
);
criterion_main!(benches);
