//! The child's life: launched and initialized, started again with backoff
//! when it exits, stopped on shutdown.
//!
//! | Event | What the bridge does |
//! |-------|----------------------|
//! | start | launches the child and waits for its `initialize` answer (`start_timeout`); a child that cannot start fails the start |
//! | the child exits, or closes its standard output | every waiting call ends with an error that names the exit (a child that closed its output but lives on is killed after 1 s); calls meanwhile wait for the new child up to `place_timeout`, then `502`; the child is started again after 0.2 s, doubling to 30 s while starts fail |
//! | shutdown | no more restarts; stdin closed, then `SIGTERM` after half the grace, then `SIGKILL` |

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use serde_json::value::RawValue;
use tokio::sync::Notify;

use super::Settings;
use super::child::{self, Spec};
use super::lines::{Line, Lines};
use crate::generation::declared::Declared;
use crate::generation::message::{Kind, Message};

/// The protocol version the bridge asks the child for.
const ASKED_VERSION: &str = "2025-11-25";

/// A child that answered `initialize`.
pub(super) struct Launched {
    pub to_child: mpsc::Sender<Bytes>,
    pub lines: Lines,
    pub process: tokio::process::Child,
    pub pid: Option<u32>,
    pub declared: Declared,
    pub close: CancellationToken,
}

/// Starts the child of `spec` and initializes it; or why it could not.
pub(super) async fn launch(spec: &Spec, settings: &Settings) -> Result<Launched, String> {
    let shown = spec.shown();
    let close = CancellationToken::new();
    let started = child::start(spec, settings.max_line_bytes, close.clone())
        .map_err(|error| format!("could not start `{shown}`: {error}"))?;
    let child::Started {
        mut process,
        pid,
        to_child,
        mut lines,
    } = started;
    let initialize = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{ASKED_VERSION}","capabilities":{{"elicitation":{{}},"sampling":{{}},"roots":{{}}}},"clientInfo":{{"name":"mcp-tasks-gateway","version":"{}"}}}}}}"#,
        env!("CARGO_PKG_VERSION")
    );
    let failed = |why: String| format!("`{shown}` did not initialize: {why}");
    if to_child.send(Bytes::from(initialize)).await.is_err() {
        return Err(failed("its stdin closed".into()));
    }
    let answer = match tokio::time::timeout(settings.start_timeout, initialized(&mut lines)).await {
        Ok(answer) => answer,
        Err(_) => Err(format!("no answer within {:?}", settings.start_timeout)),
    };
    let declared = match answer {
        Ok(declared) => declared,
        Err(why) => {
            let status = exit_status(&mut process).await;
            return Err(failed(format!("{why}{status}")));
        }
    };
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let _ = to_child
        .send(Bytes::from_static(initialized.as_bytes()))
        .await;
    tracing::info!(command = %shown, version = %declared.version, "the stdio server is initialized");
    Ok(Launched {
        to_child,
        lines,
        process,
        pid,
        declared,
        close,
    })
}

/// The child now: where its lines go, or why there is none.
struct Current {
    pub to_child: mpsc::Sender<Bytes>,
    pub pid: Option<u32>,
    pub close: CancellationToken,
    /// Why the child is down (`None` while it runs).
    pub down: Option<String>,
    /// Shutting down: no more restarts.
    pub stopping: bool,
}

impl Current {
    fn up(launched: &Launched) -> Mutex<Self> {
        Mutex::new(Self {
            to_child: launched.to_child.clone(),
            pid: launched.pid,
            close: launched.close.clone(),
            down: None,
            stopping: false,
        })
    }
}

/// The child now, and the signals that its output ended or that a new
/// child runs.
pub(super) struct Life {
    current: Mutex<Current>,
    exited: Notify,
    back: Notify,
}

impl Life {
    pub(super) fn new(launched: &Launched) -> Self {
        Self {
            current: Current::up(launched),
            exited: Notify::new(),
            back: Notify::new(),
        }
    }

    fn current(&self) -> MutexGuard<'_, Current> {
        self.current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Where lines for the child go now.
    pub(super) fn sender(&self) -> mpsc::Sender<Bytes> {
        self.current().to_child.clone()
    }

    /// Why the child is down, if it is.
    pub(super) fn gone(&self) -> Option<String> {
        self.current().down.clone()
    }

    /// Records that the child ended with `message`; whether to start it
    /// again (not while stopping).
    pub(super) fn went_down(&self, message: String) -> bool {
        let stopping = {
            let mut current = self.current();
            current.down = Some(message);
            current.stopping
        };
        self.exited.notify_waiters();
        !stopping
    }

    /// Whether the bridge is stopping.
    pub(super) fn stopping(&self) -> bool {
        self.current().stopping
    }

    /// Takes a child started again; `false` (and the child is told to
    /// stop) when the bridge is stopping.
    pub(super) fn came_back(&self, launched: &Launched) -> bool {
        let mut current = self.current();
        if current.stopping {
            launched.close.cancel();
            return false;
        }
        *current = Current {
            to_child: launched.to_child.clone(),
            pid: launched.pid,
            close: launched.close.clone(),
            down: None,
            stopping: false,
        };
        drop(current);
        self.back.notify_waiters();
        true
    }

    /// Waits until a child runs, up to `deadline`; or why none does (the
    /// reason the last one went down, the bridge stopping, or the wait).
    /// Wakes every waiter when the bridge starts stopping, too.
    pub(super) async fn wait_up(&self, deadline: tokio::time::Instant) -> Result<(), String> {
        loop {
            let back = self.back.notified();
            let down = {
                let current = self.current();
                match (&current.down, current.stopping) {
                    (None, _) => return Ok(()),
                    (Some(why), true) => return Err(why.clone()),
                    (Some(why), false) => why.clone(),
                }
            };
            if tokio::time::timeout_at(deadline, back).await.is_err() {
                return Err(format!("{down}; it was not running again in time"));
            }
        }
    }

    /// Stops the child: no more restarts, stdin closed, then `SIGTERM`
    /// after half of `grace`, then `SIGKILL` after the rest.
    pub(super) async fn shutdown(&self, grace: Duration) {
        let (pid, close) = {
            let mut current = self.current();
            current.stopping = true;
            (current.pid, current.close.clone())
        };
        // Calls waiting for a restart that will not come end now.
        self.back.notify_waiters();
        close.cancel();
        let half = grace / 2;
        for signal in [libc::SIGTERM, libc::SIGKILL] {
            if self.wait_down(half).await {
                return;
            }
            if let Some(pid) = pid.and_then(|pid| i32::try_from(pid).ok()) {
                tracing::info!(
                    pid,
                    signal,
                    "stopping the stdio server and its process group"
                );
                // SAFETY: kill(2) on the process group the child leads (it
                // was started with a group of its own, and its reader has not
                // reaped it), with a valid signal.
                unsafe {
                    libc::kill(-pid, signal);
                }
            }
        }
        self.wait_down(Duration::from_secs(1)).await;
    }

    /// Whether the child is down within `within`.
    async fn wait_down(&self, within: Duration) -> bool {
        let waited = tokio::time::timeout(within, async {
            loop {
                let exited = self.exited.notified();
                if self.current().down.is_some() {
                    return;
                }
                exited.await;
            }
        });
        waited.await.is_ok()
    }
}

/// Reads the child's answer to the bridge's `initialize` (id 0).
pub(super) async fn initialized(lines: &mut Lines) -> Result<Declared, String> {
    loop {
        let line = match lines.next().await {
            Line::Text(line) => line,
            Line::TooLong { .. } | Line::NotText => continue,
            Line::End(why) => return Err(why.unwrap_or_else(|| "it closed its stdout".into())),
        };
        let Some(message) = Message::read(line.as_bytes()) else {
            tracing::warn!(
                "the stdio server wrote a line that is not JSON before its initialize answer"
            );
            continue;
        };
        if message.kind() != Kind::Response || message.id.map(RawValue::get) != Some("0") {
            continue;
        }
        if let Some(error) = message.error {
            return Err(format!("it answered initialize with {}", error.get()));
        }
        let Some(result) = message.result else {
            continue;
        };
        return Declared::read(result);
    }
}

/// `, exit status: …` once the child has exited (waited up to a second,
/// then killed), for messages.
pub(super) async fn exit_status(process: &mut tokio::process::Child) -> String {
    let (status, killed) = match tokio::time::timeout(Duration::from_secs(1), process.wait()).await
    {
        Ok(status) => (status, ""),
        Err(_) => {
            let _ = process.kill().await;
            (
                process.wait().await,
                " (its output ended but it did not exit, so the gateway killed it)",
            )
        }
    };
    match status {
        Ok(status) => format!(", {status}{killed}"),
        Err(error) => format!(", its status unknown: {error}{killed}"),
    }
}
