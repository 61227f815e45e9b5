//! The child's life: launched and initialized, started again with backoff
//! when it exits, stopped on shutdown.
//!
//! | Event | What the bridge does |
//! |-------|----------------------|
//! | start | launches the child and waits for its `initialize` answer (`start_timeout`); a child that cannot start fails the start |
//! | the child exits | every waiting call ends with an error that names the exit; calls meanwhile are refused (`502`); the child is started again after 0.2 s, doubling to 30 s while starts fail |
//! | shutdown | no more restarts; stdin closed, then `SIGTERM` after half the grace, then `SIGKILL` |

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Settings;
use super::bridge::{Bridge, Declared, exit_status, initialized};
use super::child::{self, Lines, Spec};

/// The protocol version the bridge asks the child for.
const ASKED_VERSION: &str = "2025-11-25";

/// The first wait before starting an exited child again, and the longest.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(200), Duration::from_secs(30));

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
pub(super) struct Current {
    pub to_child: mpsc::Sender<Bytes>,
    pub pid: Option<u32>,
    pub close: CancellationToken,
    /// Why the child is down (`None` while it runs).
    pub down: Option<String>,
    /// Shutting down: no more restarts.
    pub stopping: bool,
}

impl Current {
    pub(super) fn up(launched: &Launched) -> Mutex<Self> {
        Mutex::new(Self {
            to_child: launched.to_child.clone(),
            pid: launched.pid,
            close: launched.close.clone(),
            down: None,
            stopping: false,
        })
    }
}

impl Bridge {
    pub(super) fn current(&self) -> MutexGuard<'_, Current> {
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

    /// Reads `launched` until it ends.
    pub(super) fn run(self: &Arc<Self>, launched: Launched) {
        tokio::spawn(self.clone().read(launched.lines, launched.process));
    }

    /// After the child ended with `message`: records it, and starts the
    /// child again unless the bridge is stopping.
    pub(super) fn went_down(self: &Arc<Self>, message: String) {
        let stopping = {
            let mut current = self.current();
            current.down = Some(message);
            current.stopping
        };
        self.exited.notify_waiters();
        if !stopping {
            tokio::spawn(restart(Arc::downgrade(self)));
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
        close.cancel();
        let half = grace / 2;
        for signal in [libc::SIGTERM, libc::SIGKILL] {
            if self.wait_down(half).await {
                return;
            }
            if let Some(pid) = pid.and_then(|pid| i32::try_from(pid).ok()) {
                tracing::info!(pid, signal, "stopping the stdio server");
                // SAFETY: kill(2) with a pid this process started and has
                // not reaped (its reader waits on it), and a valid signal.
                unsafe {
                    libc::kill(pid, signal);
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

/// Starts the child of `bridge` again, with backoff, until it runs or the
/// bridge is dropped or stopping.
async fn restart(bridge: Weak<Bridge>) {
    let mut wait = BACKOFF.0;
    loop {
        tokio::time::sleep(wait).await;
        let Some(live) = bridge.upgrade() else { return };
        if live.current().stopping {
            return;
        }
        match launch(&live.spec, &live.settings).await {
            Ok(launched) => {
                {
                    let mut current = live.current();
                    if current.stopping {
                        launched.close.cancel();
                        return;
                    }
                    *current = Current {
                        to_child: launched.to_child.clone(),
                        pid: launched.pid,
                        close: launched.close.clone(),
                        down: None,
                        stopping: false,
                    };
                }
                tracing::warn!(command = %live.spec.shown(), "the stdio server was started again");
                live.run(launched);
                return;
            }
            Err(why) => {
                tracing::error!(%why, retry_in = ?wait, "the stdio server could not be started again");
                wait = (wait * 2).min(BACKOFF.1);
            }
        }
    }
}
