//! The child process: started with piped stdio, its stdin written by one
//! task from a bounded queue of lines, its stdout read line by line
//! (bounded, `lines.rs`), its stderr copied to the log.
//!
//! | Choice | Why |
//! |--------|-----|
//! | one writer task, fed by a bounded queue | lines never interleave; a child that stops reading stalls senders, which wait, each bounded by its own request |
//! | lines read with a length limit | a child cannot make the bridge hold more than `max_line_bytes` of one message |
//! | stderr logged line by line, as the child's | operators see what the server says, in the gateway's log |
//! | `kill_on_drop` | the child never outlives the bridge |

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, Command};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::lines::{Line, Lines};

/// How the child is started.
#[derive(Clone, Debug)]
pub(super) struct Spec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub cwd: Option<PathBuf>,
}

impl Spec {
    /// The command line, for messages.
    pub(super) fn shown(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|part| part.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A started child: its process, the queue to its stdin, its stdout.
pub(super) struct Started {
    pub process: tokio::process::Child,
    /// Its process id (`None` once it was reaped).
    pub pid: Option<u32>,
    pub to_child: mpsc::Sender<Bytes>,
    pub lines: Lines,
}

/// How many lines may wait for the child's stdin.
const QUEUE: usize = 256;

/// Starts the child described by `spec`; its stdin closes when `close` is
/// cancelled (or every sender of its queue is gone).
pub(super) fn start(
    spec: &Spec,
    max_line_bytes: usize,
    close: CancellationToken,
) -> std::io::Result<Started> {
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // A group of its own: stopping it reaches what it started (`npx`
    // runs the server as its own child).
    #[cfg(unix)]
    command.process_group(0);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let mut process = command.spawn()?;
    let (stdin, stdout, stderr) = match (
        process.stdin.take(),
        process.stdout.take(),
        process.stderr.take(),
    ) {
        (Some(stdin), Some(stdout), Some(stderr)) => (stdin, stdout, stderr),
        _ => return Err(std::io::Error::other("the child's stdio was not piped")),
    };
    let pid = process.id();
    tokio::spawn(log_stderr(stderr, pid.unwrap_or_default(), max_line_bytes));
    let (to_child, queue) = mpsc::channel(QUEUE);
    tokio::spawn(write(stdin, queue, close));
    Ok(Started {
        process,
        pid,
        to_child,
        lines: Lines::new(stdout, max_line_bytes),
    })
}

/// Writes each queued message to the child's stdin as one line, until the
/// queue closes or `close` is cancelled (then stdin closes, which tells the
/// child to stop) or the child stops reading.
async fn write(mut stdin: ChildStdin, mut queue: mpsc::Receiver<Bytes>, close: CancellationToken) {
    loop {
        let line = tokio::select! {
            _ = close.cancelled() => return,
            line = queue.recv() => match line {
                Some(line) => line,
                None => return,
            },
        };
        let written = async {
            stdin.write_all(&line).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        };
        if let Err(error) = written.await {
            tracing::debug!(%error, "the stdio server's stdin is closed");
            return;
        }
    }
}

/// Copies the child's stderr to the log, one event a line, each line
/// bounded like the child's messages; reads to the end whatever it holds,
/// so that the child never blocks on a full pipe.
async fn log_stderr(stderr: tokio::process::ChildStderr, pid: u32, max_line_bytes: usize) {
    let mut lines = Lines::new(stderr, max_line_bytes);
    loop {
        match lines.next().await {
            Line::Text(line) => tracing::info!(target: "mcp_tasks::stdio::child", pid, "{line}"),
            Line::TooLong { .. } => {
                tracing::info!(target: "mcp_tasks::stdio::child", pid, "(a line over the limit)");
            }
            Line::NotText => {
                tracing::info!(target: "mcp_tasks::stdio::child", pid, "(a line that is not UTF-8)");
            }
            Line::End(_) => return,
        }
    }
}
