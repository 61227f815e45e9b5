//! A throwaway `redis-server` on a free loopback port, killed on drop.
//!
//! The binary is `redis-server` from `PATH` (or `$REDIS_SERVER`). When it is
//! missing the tests fail, naming the install step, unless
//! `MCP_TASKS_SKIP_REDIS=1` is set: a silent skip would hide a CI that forgot
//! to install Redis.

#[path = "redis_common.rs"]
mod common;

use std::io::ErrorKind;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `redis-server` that nothing else uses.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    /// The data directory of a persistent server (removed on drop).
    dir: Option<PathBuf>,
}

impl RedisServer {
    /// Starts a server, or `None` when Redis is missing and the tests were
    /// told to skip. Panics with the reason otherwise.
    pub fn start() -> Option<Self> {
        Self::start_in(None)
    }

    /// Like [`Self::start`], with every write persisted before it is
    /// acknowledged (`--appendonly yes --appendfsync always`) in a fresh
    /// temporary directory, so that the data survives [`Self::restart`].
    #[allow(dead_code)]
    pub fn start_persistent() -> Option<Self> {
        let dir = common::fresh_dir("mcp-tasks-redis");
        Self::start_in(Some(dir))
    }

    fn start_in(dir: Option<PathBuf>) -> Option<Self> {
        let binary = common::server_binary();
        let mut last_failure = String::new();
        // A port found free may be taken before redis binds it: try a few.
        for _ in 0..5 {
            let port = common::free_port();
            let child = match spawn(&binary, port, dir.as_ref()) {
                Ok(child) => child,
                Err(error) if error.kind() == ErrorKind::NotFound => {
                    return common::missing(&binary);
                }
                Err(error) => panic!("could not start `{binary}`: {error}"),
            };
            let mut server = Self {
                child: Some(child),
                port,
                dir: dir.clone(),
            };
            match server.wait_until_ready(Duration::from_secs(10)) {
                Ok(()) => return Some(server),
                Err(failure) => last_failure = failure,
            }
        }
        panic!("`{binary}` did not come up: {last_failure}");
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills the server (if it still runs) and starts a new one on the same
    /// port: an empty one, as a Redis restart without persistence would, or,
    /// for a server from [`Self::start_persistent`], one that loads the data
    /// acknowledged before.
    pub fn restart(&mut self) {
        self.kill();
        let binary = common::server_binary();
        let child = spawn(&binary, self.port, self.dir.as_ref()).expect("restart redis-server");
        self.child = Some(child);
        if let Err(failure) = self.wait_until_ready(Duration::from_secs(10)) {
            panic!("`{binary}` did not come back: {failure}");
        }
    }

    /// Kills the server now (it stays dead).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            common::kill(&mut child);
        }
    }

    fn wait_until_ready(&mut self, within: Duration) -> Result<(), String> {
        let Some(child) = self.child.as_mut() else {
            return Err("it is not running".to_owned());
        };
        let ready = common::wait_until_up(child, self.port, within);
        if ready.is_err() {
            self.kill();
        }
        ready
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        if let Some(dir) = self.dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn spawn(binary: &str, port: u16, dir: Option<&PathBuf>) -> std::io::Result<Child> {
    let mut command = Command::new(binary);
    command.args([
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
    ]);
    match dir {
        Some(dir) => command
            .args(["--appendonly", "yes", "--appendfsync", "always", "--dir"])
            .arg(dir),
        None => command.args(["--appendonly", "no"]),
    };
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}
