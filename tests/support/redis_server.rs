//! A throwaway `redis-server` on a free loopback port, killed on drop.
//!
//! The binary is `redis-server` from `PATH` (or `$REDIS_SERVER`). When it is
//! missing the tests fail, naming the install step, unless
//! `MCP_TASKS_SKIP_REDIS=1` is set: a silent skip would hide a CI that forgot
//! to install Redis.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
        let unique = format!(
            "mcp-tasks-redis-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|elapsed| elapsed.as_nanos())
                .unwrap_or_default()
        );
        let dir = std::env::temp_dir().join(unique);
        std::fs::create_dir_all(&dir).expect("create the redis data directory");
        Self::start_in(Some(dir))
    }

    fn start_in(dir: Option<PathBuf>) -> Option<Self> {
        let binary = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned());
        let mut last_failure = String::new();
        // A port found free may be taken before redis binds it: try a few.
        for _ in 0..5 {
            let port = free_port();
            let child = match spawn(&binary, port, dir.as_ref()) {
                Ok(child) => child,
                Err(error) if error.kind() == ErrorKind::NotFound => {
                    if std::env::var("MCP_TASKS_SKIP_REDIS").as_deref() == Ok("1") {
                        eprintln!("skipped: `{binary}` not found and MCP_TASKS_SKIP_REDIS=1");
                        return None;
                    }
                    panic!(
                        "`{binary}` not found: the Redis store tests need a Redis server \
                         (e.g. `apt-get install redis-server`, or set REDIS_SERVER to its \
                         path); set MCP_TASKS_SKIP_REDIS=1 to skip them knowingly"
                    );
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
        let binary = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned());
        let child = spawn(&binary, self.port, self.dir.as_ref()).expect("restart redis-server");
        self.child = Some(child);
        if let Err(failure) = self.wait_until_ready(Duration::from_secs(10)) {
            panic!("`{binary}` did not come back: {failure}");
        }
    }

    /// Kills the server now (it stays dead).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn wait_until_ready(&mut self, within: Duration) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(format!("it exited with {status}"));
            }
            if ping(self.port) {
                return Ok(());
            }
            if started.elapsed() > within {
                self.kill();
                return Err(format!("no PONG on port {} within {within:?}", self.port));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local address").port()
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}
