//! A server in a child process that announces its URL on stdout:
//! `mcp-tasks-gateway` and the upstreams in other languages.
//!
//! The URL is the first `http://…` or `https://…` on a stdout line (the
//! servers print `listening on http://ADDR/PATH`). stdout and stderr are then read to the
//! end in the background, so the child never blocks on a full pipe; stderr
//! is kept for [`Process::wait_log`]. Dropping the handle kills the child.

#![allow(dead_code)]

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

/// A running child server.
pub struct Process {
    /// What it is, for messages.
    pub name: String,
    /// The URL it announced.
    pub url: String,
    child: Child,
    log: Arc<Mutex<String>>,
}

/// Appends every line of `pipe` to `log`.
fn keep<R: AsyncRead + Unpin + Send + 'static>(pipe: R, log: Arc<Mutex<String>>) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(pipe).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut log = log.lock().expect("log lock");
            log.push_str(&line);
            log.push('\n');
        }
    });
}

impl Process {
    /// Starts `command` and waits up to `timeout` for its URL (installing an
    /// SDK on first use can take a while); panics with its output if it
    /// exits or stays silent.
    pub async fn start(name: &str, mut command: Command, timeout: Duration) -> Self {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .unwrap_or_else(|error| panic!("start {name}: {error}"));
        let log = Arc::new(Mutex::new(String::new()));
        keep(child.stderr.take().expect("stderr"), log.clone());
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let announced = tokio::time::timeout(timeout, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = line.find("http://").or_else(|| line.find("https://")) {
                    return Some(line[at..].trim().to_owned());
                }
            }
            None
        })
        .await;
        let url = match announced {
            Ok(Some(url)) => url,
            other => {
                let log = log.lock().expect("log lock").clone();
                panic!("{name} announced no URL ({other:?}); its stderr:\n{log}");
            }
        };
        // The rest of stdout goes to the same log.
        keep(lines.into_inner(), log.clone());
        Self {
            name: name.to_owned(),
            url,
            child,
            log,
        }
    }

    /// What the child wrote so far (stderr, then stdout after the URL).
    pub fn log(&self) -> String {
        self.log.lock().expect("log lock").clone()
    }

    /// Waits up to `timeout` for `needle` to appear in the log.
    pub async fn wait_log(&self, needle: &str, timeout: Duration) -> bool {
        self.wait_log_count(needle, 1, timeout).await
    }

    /// Waits up to `timeout` for `needle` to appear `count` times in the log.
    pub async fn wait_log_count(&self, needle: &str, count: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.log().matches(needle).count() >= count {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            // The poll interval of a bounded wait for a log line.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) with a pid this handle owns and a valid signal.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
            }
        }
    }

    /// Waits up to `timeout` for the child to exit.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(timeout, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// Kills the child at once and reaps it.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }
}
