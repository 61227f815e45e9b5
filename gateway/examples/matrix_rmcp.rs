//! The interop matrix's driver for the rmcp 3.11 client (`scripts/matrix.sh`,
//! client `rmcp`): protocol 2026-07-28 (the discover lifecycle, no session),
//! the tasks extension declared in its client capabilities, MRTR rounds
//! answered by its `ClientHandler`, as an rmcp application calls them.
//!
//! ```sh
//! cargo run -p mcp-tasks-gateway --example matrix_rmcp -- URL SPEC
//! ```
//!
//! The steps, SPEC and the lines printed are those of
//! `tests/clients/matrix.py` (which says what SPEC holds). The slow and the
//! cancelled calls are `call_tool_once` answered with a task handle, followed
//! with `get_task` and cancelled with `cancel_task`; the question comes as an
//! `input_required` round of `call_tool`, which rmcp answers through
//! `ClientHandler::create_elicitation` and retries.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, GetTaskParams,
    Implementation, ProtocolVersion, TaskPayload, TaskStatus,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient};
use serde_json::{Map, Value};

/// The steps of a cell, in the order they run and print.
const STEPS: [&str; 5] = ["list", "fast", "slow", "cancel", "ask"];
/// How long one step may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

type Client = RunningService<RoleClient, Asker>;
type Outcome = Result<String, String>;

/// The client's handler: declares elicitation and the tasks extension, and
/// accepts every question with the ask step's answer, noting what it asked.
#[derive(Clone)]
struct Asker {
    answer: Value,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Asker {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = match request {
            ElicitRequestParams::FormElicitationParams { message, .. }
            | ElicitRequestParams::UrlElicitationParams { message, .. } => message,
            other => format!("{other:?}"),
        };
        self.asked.lock().expect("asked").push(message);
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(self.answer.clone()))
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder()
            .enable_elicitation()
            .enable_tasks()
            .build();
        ClientConfig::new(
            capabilities,
            Implementation::new("mcp-tasks-matrix-rmcp", "0.1.0"),
        )
    }
}

/// `text` on one line, cut to `limit` characters, quoted.
fn quoted(text: &str, limit: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = flat.chars().take(limit).collect();
    let more = if cut.len() < flat.len() { "…" } else { "" };
    format!("{cut:?}{more}")
}

/// A tool result's text; an error for a tool error.
fn text(result: &CallToolResult) -> Outcome {
    let content = serde_json::to_value(&result.content).unwrap_or_default();
    let words: Vec<&str> = content
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect();
    let words = words.join(" ");
    match result.is_error {
        Some(true) => Err(format!("tool error: {}", quoted(&words, 160))),
        _ => Ok(words),
    }
}

/// `said`, or an error when it lacks the step's `expect`.
fn expect(said: String, step: &Value) -> Outcome {
    match step["expect"].as_str() {
        Some(wanted) if !said.contains(wanted) => {
            Err(format!("result lacks {wanted:?}: {}", quoted(&said, 160)))
        }
        _ => Ok(said),
    }
}

fn params(step: &Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(step["tool"].as_str().unwrap_or_default().to_owned());
    match &step["arguments"] {
        Value::Object(arguments) => params.with_arguments(arguments.clone()),
        _ => params,
    }
}

fn failed(error: impl std::fmt::Display) -> String {
    error.to_string()
}

/// Starts the step's call, which must answer with a task handle; its id.
async fn start_task(client: &Client, step: &Value) -> Outcome {
    match client.call_tool_once(params(step)).await.map_err(failed)? {
        CallToolResponse::Task(created) => Ok(created.task.task_id),
        other => Err(format!("no task: the call answered {other:?}")),
    }
}

/// Polls the task every 100 ms until `done(status, message)`; the last
/// result and each new status message seen.
async fn follow(
    client: &Client,
    task: &str,
    done: impl Fn(TaskStatus, bool) -> bool,
) -> Result<(TaskPayload, Vec<String>), String> {
    let mut messages: Vec<String> = Vec::new();
    loop {
        let got = client
            .get_task(GetTaskParams::new(task))
            .await
            .map_err(failed)?;
        let message = got.task.task.status_message.clone();
        if let Some(message) = &message
            && messages.last() != Some(message)
        {
            messages.push(message.clone());
        }
        if done(got.task.status(), message.is_some()) {
            return Ok((got.task.payload, messages));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn list(client: &Client, _: &Value) -> Outcome {
    let tools = client.list_all_tools().await.map_err(failed)?;
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    let more = if names.len() > 4 { ", …" } else { "" };
    let shown = names.iter().take(4).copied().collect::<Vec<_>>().join(", ");
    Ok(format!("{} tools ({shown}{more})", names.len()))
}

async fn fast(client: &Client, step: &Value) -> Outcome {
    let result = client.call_tool(params(step)).await.map_err(failed)?;
    Ok(quoted(&expect(text(&result)?, step)?, 60))
}

async fn slow(client: &Client, step: &Value) -> Outcome {
    let task = start_task(client, step).await?;
    let short = &task[..8.min(task.len())];
    let (payload, messages) = follow(client, &task, |status, _| status.is_terminal()).await?;
    let TaskPayload::Completed { result } = payload else {
        return Err(format!("task {short}… ended {payload:?}"));
    };
    let result: CallToolResult = serde_json::from_value(Value::Object(result)).map_err(failed)?;
    let said = expect(text(&result)?, step)?;
    if step["progress"] == true && messages.is_empty() {
        return Err(format!(
            "task {short}… completed, but its status never showed progress"
        ));
    }
    let shown = match (messages.first(), messages.last()) {
        (Some(first), Some(last)) => format!(" ({first:?} … {last:?})"),
        _ => String::new(),
    };
    Ok(format!(
        "task {short}…, {} status messages{shown}, {}",
        messages.len(),
        quoted(&said, 60)
    ))
}

async fn cancel(client: &Client, step: &Value) -> Outcome {
    let task = start_task(client, step).await?;
    // Once the tool reports progress it runs: a cancel sooner may find no call.
    if step["progress"] == true {
        follow(client, &task, |status, message| {
            message || status != TaskStatus::Working
        })
        .await?;
    } else {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    client
        .cancel_task(CancelTaskParams::new(&task))
        .await
        .map_err(failed)?;
    let (payload, _) = follow(client, &task, |status, _| status.is_terminal()).await?;
    match payload {
        TaskPayload::Cancelled => Ok(format!("task {}… cancelled", &task[..8.min(task.len())])),
        other => Err(format!("after tasks/cancel the task ended {other:?}")),
    }
}

async fn ask(client: &Client, step: &Value) -> Outcome {
    let result = client.call_tool(params(step)).await.map_err(failed)?;
    let said = text(&result)?;
    let asked = client.service().asked.lock().expect("asked").clone();
    let Some(first) = asked.first() else {
        return Err(format!(
            "the client was asked nothing; result {}",
            quoted(&said, 160)
        ));
    };
    let said = expect(said, step)?;
    Ok(format!(
        "asked {}, {}",
        quoted(first, 40),
        quoted(&said, 60)
    ))
}

async fn run(client: &Client, name: &str, step: &Value) -> Outcome {
    let running = async {
        match name {
            "list" => list(client, step).await,
            "fast" => fast(client, step).await,
            "slow" => slow(client, step).await,
            "cancel" => cancel(client, step).await,
            _ => ask(client, step).await,
        }
    };
    tokio::time::timeout(STEP_TIMEOUT, running)
        .await
        .unwrap_or_else(|_| Err("timed out".to_owned()))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, spec] = args.as_slice() else {
        eprintln!("usage: matrix_rmcp URL SPEC");
        std::process::exit(2);
    };
    let spec: Map<String, Value> = serde_json::from_str(spec).expect("SPEC is a JSON object");
    let asker = Asker {
        answer: spec
            .get("ask")
            .map_or(Value::Null, |ask| ask["answer"].clone()),
        asked: Arc::default(),
    };
    let transport = StreamableHttpClientTransport::from_uri(url.as_str());
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = match asker.serve_with_lifecycle(transport, lifecycle).await {
        Ok(client) => client,
        Err(error) => {
            for name in STEPS {
                println!("{name}: FAIL session: {}", quoted(&error.to_string(), 160));
            }
            return;
        }
    };
    for name in STEPS {
        let Some(step) = spec.get(name).or((name == "list").then_some(&Value::Null)) else {
            println!("{name}: n/a");
            continue;
        };
        match run(&client, name, step).await {
            Ok(detail) => println!("{name}: ok {detail}"),
            Err(reason) => println!("{name}: FAIL {reason}"),
        }
    }
    let _ = client.cancel().await;
}
