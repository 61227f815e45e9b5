//! Where the gateway's logs and traces go: stderr (`RUST_LOG`, default
//! `info`) and, with `--otlp ENDPOINT` (feature `otlp`), every span over
//! OTLP/HTTP to a collector.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// What must be flushed before the process exits.
pub struct Flush {
    #[cfg(feature = "otlp")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Flush {
    /// Sends the spans still buffered.
    pub fn flush(self) {
        #[cfg(feature = "otlp")]
        if let Some(provider) = self.provider
            && let Err(error) = provider.shutdown()
        {
            eprintln!("mcp-tasks-gateway: OTLP export at exit: {error}");
        }
    }
}

/// Installs the subscriber; `otlp` is the collector's traces URL (e.g.
/// `http://127.0.0.1:4318/v1/traces`).
pub fn init(otlp: Option<&str>) -> Result<Flush, String> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let registry = tracing_subscriber::registry().with(filter).with(stderr);
    #[cfg(feature = "otlp")]
    {
        let provider = otlp.map(exporter).transpose()?;
        let layer = provider.as_ref().map(|provider| {
            use opentelemetry::trace::TracerProvider as _;
            tracing_opentelemetry::layer().with_tracer(provider.tracer("mcp-tasks-gateway"))
        });
        registry.with(layer).init();
        Ok(Flush { provider })
    }
    #[cfg(not(feature = "otlp"))]
    {
        if otlp.is_some() {
            return Err("--otlp needs a gateway built with the `otlp` feature".into());
        }
        registry.init();
        Ok(Flush {})
    }
}

/// A tracer provider batching spans to `endpoint` over OTLP/HTTP (protobuf).
#[cfg(feature = "otlp")]
fn exporter(endpoint: &str) -> Result<opentelemetry_sdk::trace::SdkTracerProvider, String> {
    use opentelemetry_otlp::WithExportConfig;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .build()
        .map_err(|e| format!("--otlp {endpoint}: {e}"))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("mcp-tasks-gateway")
        .build();
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}
