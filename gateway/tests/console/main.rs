//! The operator's console (issue #51), served by `mcp-tasks-gateway` on its
//! metrics listener: who gets in, what a cross-site request gets, the
//! change feed and the actions over HTTP, and the page itself in a real
//! headless browser (Debian's chromium driven by Playwright's library,
//! `scripts/console-browser.sh`).
//!
//! | Module | What it pins |
//! |---|---|
//! | `access` | no credential, no console; the sign-in; bearer callers; cross-site requests refused; the security headers |
//! | `live` | filters and paging, the feed of changed rows, cancel and delete with their audit lines, values cut and kept as they are, owners with the gateway's OAuth on |
//! | `reruns` | the store card's re-runs pending: a SQLite file's orphans before the first request, then a re-run waiting for its running slot |
//! | `redis` | two gateways over one Redis: the other's new task on this one's feed, cancelled from here, its tool stopped |
//! | `browser` | a parked task appears, its bar moves, it completes; another is cancelled from the page and its tool stops; hostile values shown as text; a cross-site form refused |

#[path = "../support/gateway.rs"]
mod gateway;
#[path = "../../../tests/support/redis_server.rs"]
#[allow(dead_code)]
mod redis_server;
#[path = "../../../tests/support/mod.rs"]
mod support;
#[path = "../support/oauth/tokens.rs"]
mod tokens;

mod access;
mod browser;
mod harness;
mod hostile_upstream;
mod live;
mod redis;
mod reruns;
