//! [`HttpsDeliver`], the gateway's webhook transport, against receivers on
//! real loopback sockets (issue #50):
//!
//! | Case | Expected |
//! |------|----------|
//! | an HTTPS receiver with a certificate from a private CA, the CA added | the exact headers and body (signature intact), `Host` added, its status and body back |
//! | the same receiver trusted through an unrelated CA, or reached by its IP while its certificate names `localhost` | `Tls`, no request |
//! | a CA file that does not exist, PEM without a certificate | a build error |
//! | the strict policy: `127.0.0.1`, `localhost`, `10.0.0.1`, `169.254.169.254`; `http:`, `file:`, `ftp:` URLs | `Refused`, and the listener accepted no connection |
//! | a receiver answering 302 to a private address | 302 returned, the target of the redirect never asked |
//! | a receiver that accepts and never answers | `Timeout` once the delivery's bound has passed |
//! | a receiver streaming a 50 MB answer (chunked, or with its length declared) | `AnswerTooLarge`; the connection is closed long before the receiver has written it all |
//! | `allow_private(true)` and `allow_http(true)` | a loopback receiver over `http` is reached, by IP and by `localhost` |

use crate::tls;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_tasks::webhook::{
    CallbackPolicy, Deliver, Delivered, Delivery, DeliveryError, Refused, Secret, sign,
};
use mcp_tasks_gateway::webhook::{HttpsDeliver, TrustError};
use rustls::ServerConfig;
use rustls::pki_types::PrivateKeyDer;
use tls::{Pki, ca_and_leaf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_rustls::TlsAcceptor;

/// How long a test waits for something that must happen.
const BOUND: Duration = Duration::from_secs(20);

/// The most of an answer the deliveries read.
const MAX_ANSWER: usize = 64 * 1024;

/// The size of the endless receiver's answer.
const HUGE: u64 = 50 * 1024 * 1024;

/// A TLS server configuration presenting `pki`'s leaf.
fn server_tls(pki: &Pki) -> Arc<ServerConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(pki.chain.clone(), PrivateKeyDer::Pkcs8(pki.key.clone_key()))
        .expect("the receiver's certificate");
    Arc::new(config)
}

/// What a receiver saw of one request.
#[derive(Debug)]
struct Seen {
    method: Method,
    target: String,
    headers: HeaderMap,
    body: Bytes,
}

/// How a receiver answers every request.
#[derive(Clone)]
struct Answer {
    status: StatusCode,
    location: Option<String>,
    body: &'static str,
}

const OK: Answer = Answer {
    status: StatusCode::OK,
    location: None,
    body: "received",
};

/// A loopback HTTP(S) receiver: every accepted connection and every
/// request it saw, in order.
struct Receiver {
    address: SocketAddr,
    accepted: mpsc::UnboundedReceiver<()>,
    seen: mpsc::UnboundedReceiver<Seen>,
}

impl Receiver {
    async fn start(tls: Option<Arc<ServerConfig>>, answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a listener");
        let address = listener.local_addr().expect("its address");
        let (accepted_tx, accepted) = mpsc::unbounded_channel();
        let (seen_tx, seen) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let _ = accepted_tx.send(());
                let (tls, answer, seen_tx) = (tls.clone(), answer.clone(), seen_tx.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let (answer, seen_tx) = (answer.clone(), seen_tx.clone());
                        async move {
                            let (parts, body) = request.into_parts();
                            let body = body.collect().await?.to_bytes();
                            let _ = seen_tx.send(Seen {
                                method: parts.method,
                                target: parts.uri.to_string(),
                                headers: parts.headers,
                                body,
                            });
                            let mut response = Response::new(Full::new(Bytes::from(answer.body)));
                            *response.status_mut() = answer.status;
                            if let Some(location) = answer.location {
                                let location =
                                    HeaderValue::from_str(&location).expect("a location");
                                response
                                    .headers_mut()
                                    .insert(http::header::LOCATION, location);
                            }
                            Ok::<_, hyper::Error>(response)
                        }
                    });
                    let http = http1::Builder::new();
                    match tls {
                        None => {
                            let _ = http.serve_connection(TokioIo::new(tcp), service).await;
                        }
                        Some(config) => {
                            if let Ok(tls) = TlsAcceptor::from(config).accept(tcp).await {
                                let _ = http.serve_connection(TokioIo::new(tls), service).await;
                            }
                        }
                    }
                });
            }
        });
        Self {
            address,
            accepted,
            seen,
        }
    }

    /// The next request, waited for.
    async fn next(&mut self) -> Seen {
        tokio::time::timeout(BOUND, self.seen.recv())
            .await
            .expect("a request within the bound")
            .expect("the receiver is running")
    }

    /// The next request must be the one whose path is `path`, and the only
    /// connection accepted so far must be its own: called after the
    /// deliveries that must not have connected, and one that must have.
    async fn only_request_is(&mut self, path: &str) {
        let seen = self.next().await;
        assert_eq!(seen.target, path, "an earlier request reached the receiver");
        let mut accepted = 0;
        while self.accepted.try_recv().is_ok() {
            accepted += 1;
        }
        assert_eq!(
            accepted, 1,
            "a connection was opened that must not have been"
        );
    }
}

/// The signing secret of the test's subscription.
fn secret() -> Secret {
    Secret::parse(&format!("whsec_{}", STANDARD.encode([7u8; 32]))).expect("a secret")
}

/// A delivery of `body` to `url` under `policy`, with the headers the
/// layer sends.
fn delivery(url: &str, policy: CallbackPolicy, body: &'static str) -> Delivery {
    let mut headers = HeaderMap::new();
    let signature = sign(&secret(), "msg_2Kx", 1_767_225_600, body.as_bytes());
    for (name, value) in [
        ("content-type", "application/json"),
        ("webhook-id", "msg_2Kx"),
        ("webhook-timestamp", "1767225600"),
        ("webhook-signature", signature.as_str()),
        ("x-mcp-subscription-id", "sub_7f3a"),
    ] {
        headers.insert(name, HeaderValue::from_str(value).expect("a header value"));
    }
    Delivery {
        url: url.parse().expect("a URL"),
        headers,
        body: Bytes::from_static(body.as_bytes()),
        policy: Arc::new(policy),
        timeout: Duration::from_secs(10),
        max_answer: MAX_ANSWER,
    }
}

/// A transport trusting only `pem`'s CA.
fn trusting(pem: &str) -> HttpsDeliver {
    HttpsDeliver::builder()
        .platform_roots(false)
        .extra_roots(pem.as_bytes())
        .build()
        .expect("a transport")
}

/// Private addresses allowed (loopback receivers), `https` still required.
fn loopback() -> CallbackPolicy {
    CallbackPolicy::new().allow_private(true)
}

const EVENT: &str = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tasks/status\",\"params\":{\"taskId\":\"t-1\",\"status\":\"completed\",\"note\":\"  spaces kept, \\u00e9 \u{e9}\"}}";

#[tokio::test]
async fn an_https_receiver_gets_the_exact_headers_and_body_when_its_ca_is_added() {
    let pki = ca_and_leaf(&["localhost"]);
    let mut receiver = Receiver::start(Some(server_tls(&pki)), OK).await;
    let ca_file = std::env::temp_dir().join(format!("webhook-ca-{}.pem", std::process::id()));
    std::fs::write(&ca_file, &pki.ca_pem).expect("the CA file");
    let transport = HttpsDeliver::builder()
        .ca_file(&ca_file)
        .build()
        .expect("a transport");
    let _ = std::fs::remove_file(&ca_file);
    assert!(format!("{transport:?}").starts_with("HttpsDeliver"));

    let port = receiver.address.port();
    let sent = delivery(
        &format!("https://localhost:{port}/hooks/tasks?tenant=a&x=%20"),
        loopback(),
        EVENT,
    );
    let Delivered { status, body } = transport.deliver(sent.clone()).await.expect("delivered");
    assert_eq!((status, body.as_ref()), (StatusCode::OK, &b"received"[..]));

    let seen = receiver.next().await;
    assert_eq!(seen.method, Method::POST);
    assert_eq!(seen.target, "/hooks/tasks?tenant=a&x=%20");
    assert_eq!(seen.body, sent.body);
    for (name, value) in &sent.headers {
        assert_eq!(
            seen.headers.get_all(name).iter().collect::<Vec<_>>(),
            [value]
        );
    }
    assert_eq!(seen.headers["host"], format!("localhost:{port}").as_str());
    assert_eq!(
        seen.headers["content-length"],
        EVENT.len().to_string().as_str()
    );
    assert_eq!(
        seen.headers.len(),
        sent.headers.len() + 2,
        "{:?}",
        seen.headers
    );
    let timestamp = 1_767_225_600;
    assert_eq!(
        seen.headers["webhook-signature"],
        sign(&secret(), "msg_2Kx", timestamp, &seen.body).as_str(),
    );
}

#[tokio::test]
async fn a_receiver_is_not_trusted_without_its_ca_nor_under_another_name() {
    let pki = ca_and_leaf(&["localhost"]);
    let mut receiver = Receiver::start(Some(server_tls(&pki)), OK).await;
    let port = receiver.address.port();
    let url = format!("https://localhost:{port}/untrusted");

    let other = trusting(&ca_and_leaf(&["localhost"]).ca_pem);
    let answer = other.deliver(delivery(&url, loopback(), EVENT)).await;
    assert_eq!(answer.unwrap_err(), DeliveryError::Tls);

    // The platform's roots alone do not know a private CA either.
    if let Ok(platform) = HttpsDeliver::new() {
        assert!(platform.roots() > 0);
        let answer = platform.deliver(delivery(&url, loopback(), EVENT)).await;
        assert_eq!(answer.unwrap_err(), DeliveryError::Tls);
    }

    // The right CA, but the certificate names localhost, not the address.
    let trusted = trusting(&pki.ca_pem);
    let by_ip = format!("https://127.0.0.1:{port}/by-ip");
    let answer = trusted.deliver(delivery(&by_ip, loopback(), EVENT)).await;
    assert_eq!(answer.unwrap_err(), DeliveryError::Tls);

    let by_name = format!("https://localhost:{port}/trusted");
    let answer = trusted.deliver(delivery(&by_name, loopback(), EVENT)).await;
    assert_eq!(answer.expect("delivered").status, StatusCode::OK);
    assert_eq!(
        receiver.next().await.target,
        "/trusted",
        "an untrusted delivery was sent"
    );
}

#[test]
fn trust_that_cannot_be_built_is_an_error() {
    let missing = HttpsDeliver::builder()
        .ca_file("/nonexistent/webhook-ca.pem")
        .build();
    assert!(
        matches!(missing, Err(TrustError::Read { .. })),
        "{missing:?}"
    );
    let empty = HttpsDeliver::builder()
        .extra_roots("not a certificate".as_bytes())
        .build();
    assert!(matches!(empty, Err(TrustError::Pem { .. })), "{empty:?}");
    let nothing = HttpsDeliver::builder().platform_roots(false).build();
    assert!(matches!(nothing, Err(TrustError::NoRoots)), "{nothing:?}");
}

#[tokio::test]
async fn the_strict_policy_refuses_non_public_callbacks_before_connecting() {
    let mut receiver = Receiver::start(None, OK).await;
    let port = receiver.address.port();
    let transport = trusting(&ca_and_leaf(&["localhost"]).ca_pem);
    let strict = CallbackPolicy::new;

    for url in [
        format!("https://127.0.0.1:{port}/loopback"),
        format!("https://localhost:{port}/resolves-to-loopback"),
        format!("https://[::ffff:127.0.0.1]:{port}/mapped"),
        "https://10.0.0.1/private".to_owned(),
        "https://169.254.169.254/latest/meta-data/".to_owned(),
    ] {
        let started = Instant::now();
        let answer = transport.deliver(delivery(&url, strict(), EVENT)).await;
        assert_eq!(
            answer.unwrap_err(),
            DeliveryError::Refused(Refused::Address),
            "{url}"
        );
        // Refused before a connection: no connect timeout was waited for.
        assert!(started.elapsed() < Duration::from_secs(5), "{url}");
    }
    for url in [
        format!("http://127.0.0.1:{port}/plain"),
        format!("ftp://127.0.0.1:{port}/ftp"),
        "file://localhost/etc/passwd".to_owned(),
    ] {
        let answer = transport.deliver(delivery(&url, strict(), EVENT)).await;
        assert_eq!(
            answer.unwrap_err(),
            DeliveryError::Refused(Refused::Scheme),
            "{url}"
        );
    }
    assert!(strict().check_url("file:///etc/passwd").is_err());
    assert!(
        strict()
            .allow_http(true)
            .allow_private(true)
            .check_url("file:///etc/passwd")
            .is_err()
    );

    let open = CallbackPolicy::new().allow_http(true).allow_private(true);
    let allowed = format!("http://127.0.0.1:{port}/allowed");
    let answer = transport.deliver(delivery(&allowed, open, EVENT)).await;
    assert_eq!(answer.expect("delivered").status, StatusCode::OK);
    receiver.only_request_is("/allowed").await;
}

#[tokio::test]
async fn a_redirect_is_returned_not_followed() {
    let mut target = Receiver::start(None, OK).await;
    let stolen = format!("http://127.0.0.1:{}/stolen", target.address.port());
    let redirecting = Answer {
        status: StatusCode::FOUND,
        location: Some(stolen),
        body: "",
    };
    let mut receiver = Receiver::start(None, redirecting).await;
    let open = || CallbackPolicy::new().allow_http(true).allow_private(true);
    let transport = trusting(&ca_and_leaf(&["localhost"]).ca_pem);

    let url = format!("http://127.0.0.1:{}/hook", receiver.address.port());
    let answer = transport.deliver(delivery(&url, open(), EVENT)).await;
    assert_eq!(answer.expect("an answer").status, StatusCode::FOUND);
    assert_eq!(receiver.next().await.target, "/hook");

    let direct = format!("http://127.0.0.1:{}/direct", target.address.port());
    let answer = transport.deliver(delivery(&direct, open(), EVENT)).await;
    assert_eq!(answer.expect("delivered").status, StatusCode::OK);
    target.only_request_is("/direct").await;
}

#[tokio::test]
async fn a_receiver_that_never_answers_times_out_within_the_bound() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a listener");
    let port = listener.local_addr().expect("its address").port();
    let (accepted_tx, mut accepted) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let _ = accepted_tx.send(());
            tokio::spawn(async move {
                // Reads the request, never answers.
                let mut sink = [0u8; 4096];
                while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {}
            });
        }
    });
    let transport = trusting(&ca_and_leaf(&["localhost"]).ca_pem);
    let open = CallbackPolicy::new().allow_http(true).allow_private(true);
    let mut slow = delivery(&format!("http://127.0.0.1:{port}/slow"), open, EVENT);
    slow.timeout = Duration::from_millis(400);

    let started = Instant::now();
    let answer = tokio::time::timeout(BOUND, transport.deliver(slow))
        .await
        .expect("the delivery ends by itself");
    let took = started.elapsed();
    assert_eq!(answer.unwrap_err(), DeliveryError::Timeout);
    assert!(took >= Duration::from_millis(400), "ended early: {took:?}");
    assert!(took < Duration::from_secs(5), "ended late: {took:?}");
    assert!(accepted.try_recv().is_ok(), "the connection was made");
}

/// How the endless receiver frames its answer.
#[derive(Debug, Clone, Copy)]
enum Framing {
    Chunked,
    Length,
}

/// A receiver that reads one request and answers with [`HUGE`] bytes;
/// reports how many it wrote before its connection was closed.
async fn endless(framing: Framing) -> (u16, oneshot::Receiver<u64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a listener");
    let port = listener.local_addr().expect("its address").port();
    let (written_tx, written) = oneshot::channel();
    tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.expect("a connection");
        let mut request = Vec::new();
        let mut buffer = [0u8; 4096];
        while !request.ends_with(EVENT.as_bytes()) {
            let n = tcp.read(&mut buffer).await.expect("the request");
            assert!(n > 0, "the request was cut");
            request.extend_from_slice(&buffer[..n]);
        }
        let head = match framing {
            Framing::Chunked => "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_owned(),
            Framing::Length => format!("HTTP/1.1 200 OK\r\ncontent-length: {HUGE}\r\n\r\n"),
        };
        let mut written = 0u64;
        let block = vec![b'x'; 64 * 1024];
        let mut result = tcp.write_all(head.as_bytes()).await;
        while result.is_ok() && written < HUGE {
            result = match framing {
                Framing::Chunked => {
                    let mut chunk = format!("{:x}\r\n", block.len()).into_bytes();
                    chunk.extend_from_slice(&block);
                    chunk.extend_from_slice(b"\r\n");
                    tcp.write_all(&chunk).await
                }
                Framing::Length => tcp.write_all(&block).await,
            };
            if result.is_ok() {
                written += block.len() as u64;
            }
        }
        if result.is_ok() && matches!(framing, Framing::Chunked) {
            let _ = tcp.write_all(b"0\r\n\r\n").await;
        }
        let _ = written_tx.send(written);
    });
    (port, written)
}

#[tokio::test]
async fn a_50_mb_answer_is_too_large_and_is_not_read() {
    let transport = trusting(&ca_and_leaf(&["localhost"]).ca_pem);
    for framing in [Framing::Chunked, Framing::Length] {
        let (port, written) = endless(framing).await;
        let open = CallbackPolicy::new().allow_http(true).allow_private(true);
        let answer = transport
            .deliver(delivery(&format!("http://127.0.0.1:{port}/"), open, EVENT))
            .await;
        assert_eq!(
            answer.unwrap_err(),
            DeliveryError::AnswerTooLarge,
            "{framing:?}"
        );
        let written = tokio::time::timeout(BOUND, written)
            .await
            .expect("the receiver saw its connection closed")
            .expect("the receiver reports");
        // What the receiver could write is what the loopback's socket
        // buffers hold (a few MB), not the answer.
        assert!(
            written < HUGE / 2,
            "{framing:?}: {written} bytes were taken"
        );
    }
}

#[tokio::test]
async fn an_open_policy_reaches_a_loopback_receiver_over_http() {
    let mut receiver = Receiver::start(None, OK).await;
    let port = receiver.address.port();
    let transport = trusting(&ca_and_leaf(&["localhost"]).ca_pem);
    for (host, path) in [("127.0.0.1", "/by-ip"), ("localhost", "/by-name")] {
        let open = CallbackPolicy::new().allow_http(true).allow_private(true);
        let url = format!("http://{host}:{port}{path}");
        let answer = transport.deliver(delivery(&url, open, EVENT)).await;
        let Delivered { status, body } = answer.expect("delivered");
        assert_eq!((status, body.as_ref()), (StatusCode::OK, &b"received"[..]));
        let seen = receiver.next().await;
        assert_eq!(
            (seen.target.as_str(), seen.body.as_ref()),
            (path, EVENT.as_bytes())
        );
        assert_eq!(seen.headers["host"], format!("{host}:{port}").as_str());
    }
    // http is still refused when only private addresses are allowed.
    let plain = format!("http://127.0.0.1:{port}/");
    let answer = transport.deliver(delivery(&plain, loopback(), EVENT)).await;
    assert_eq!(answer.unwrap_err(), DeliveryError::Refused(Refused::Scheme));
}
