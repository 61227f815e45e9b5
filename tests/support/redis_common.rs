//! What the throwaway Redis servers of the tests share: finding the binaries,
//! the skip-or-fail rule when they are missing, a temporary directory, a free
//! loopback port, waiting for a server to come up, and one command over RESP
//! on a plain `TcpStream`.
//!
//! Included by `redis_server.rs` and `redis_cluster.rs` with
//! `#[path = "redis_common.rs"] mod common;`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

/// How long one exchange with a local server may take, each way.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(2);

/// `$REDIS_SERVER`, else `redis-server` from `PATH`.
pub fn server_binary() -> String {
    std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

/// What a start returns when `binary` is missing: `None` (after saying so)
/// when `MCP_TASKS_SKIP_REDIS=1`; otherwise it panics, naming the install
/// step, since a silent skip would hide a CI that forgot to install Redis.
pub fn missing<T>(binary: &str) -> Option<T> {
    if std::env::var("MCP_TASKS_SKIP_REDIS").as_deref() == Ok("1") {
        eprintln!("skipped: `{binary}` not found and MCP_TASKS_SKIP_REDIS=1");
        return None;
    }
    panic!(
        "`{binary}` not found: the Redis store tests need a Redis server, \
         and the cluster tests its redis-cli too (e.g. `apt-get install \
         redis-server redis-tools`, or set REDIS_SERVER and REDIS_CLI to their \
         paths); set MCP_TASKS_SKIP_REDIS=1 to skip them knowingly"
    );
}

/// A new directory `<temp>/<name>-<pid>-<nanos>` that no other run uses.
pub fn fresh_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a temporary directory");
    dir
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local address").port()
}

/// Whether the server on `port` answers `PING` with `PONG`.
pub fn ping(port: u16) -> bool {
    command(port, &["PING"]).is_ok_and(|reply| reply == "PONG")
}

/// Waits until the server `child` started on `port` answers `PING`: an
/// `Err` when it exits first or stays silent for `within` (the caller kills
/// it).
pub fn wait_until_up(child: &mut Child, port: u16, within: Duration) -> Result<(), String> {
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("it exited with {status}"));
        }
        if ping(port) {
            return Ok(());
        }
        if started.elapsed() > within {
            return Err(format!("no PONG on port {port} within {within:?}"));
        }
        // The poll interval of a bounded wait for PONG.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stops `child` with SIGKILL (what `Child::kill` sends on Unix: no
/// goodbye to anyone) and reaps it.
pub fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Sends one command to the server on `port` and returns its reply as text:
/// a simple or bulk string as it is, an integer in decimal, a nil as an
/// empty string. An error reply, an array or a failed exchange is an `Err`
/// with what went wrong. Every step is bounded by a timeout.
pub fn command(port: u16, args: &[&str]) -> Result<String, String> {
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let fail = |error: std::io::Error| format!("{args:?} on port {port}: {error}");
    let mut stream = TcpStream::connect_timeout(&address, EXCHANGE_TIMEOUT).map_err(fail)?;
    stream
        .set_read_timeout(Some(EXCHANGE_TIMEOUT))
        .map_err(fail)?;
    stream
        .set_write_timeout(Some(EXCHANGE_TIMEOUT))
        .map_err(fail)?;
    let mut request = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        request.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
    }
    stream.write_all(&request).map_err(fail)?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).map_err(fail)?;
    let line = line.trim_end_matches("\r\n");
    let (kind, rest) = line.split_at(line.len().min(1));
    match kind {
        "+" | ":" => Ok(rest.to_owned()),
        "-" => Err(format!("{args:?} on port {port}: {rest}")),
        "$" if rest == "-1" => Ok(String::new()),
        "$" => {
            let length: usize = rest
                .parse()
                .map_err(|_| format!("{args:?} on port {port}: bad bulk length {rest:?}"))?;
            let mut body = vec![0; length + 2];
            reader.read_exact(&mut body).map_err(fail)?;
            body.truncate(length);
            String::from_utf8(body).map_err(|_| format!("{args:?} on port {port}: not UTF-8"))
        }
        _ => Err(format!(
            "{args:?} on port {port}: unexpected reply {line:?}"
        )),
    }
}
