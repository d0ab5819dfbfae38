//! The Rust worker of the cross-language trace test (tests/tracing/run.py): claims `--count`
//! messages of routing key `--key` with tracing on, acks them, and writes every span the
//! SDK's in-memory exporter recorded as one JSON object per line to `--spans`.
//!
//!     cargo run --release --features opentelemetry --example tracing_worker -- \
//!         --queue Q --prefix harel --key rust --count 2 --spans rust.jsonl

use std::io::Write;
use std::time::{Duration, Instant};

use harel_transport::{Options, Transport, Wait};
use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{SpanKind, Status, TracerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{json, Value};

fn arg(args: &[String], name: &str) -> Result<String, String> {
    let at = args.iter().position(|a| a == name).ok_or(format!("{name} is missing"))?;
    args.get(at + 1).cloned().ok_or(format!("{name} needs a value"))
}

fn line(span: &SpanData) -> Value {
    let kind = match span.span_kind {
        SpanKind::Producer => "producer",
        SpanKind::Consumer => "consumer",
        _ => "other",
    };
    let parent = span.parent_span_id;
    let attributes: serde_json::Map<String, Value> =
        span.attributes.iter().map(|kv| (kv.key.to_string(), Value::String(kv.value.to_string()))).collect();
    let links: Vec<Value> = span
        .links
        .iter()
        .map(|l| {
            let context = &l.span_context;
            json!({"trace_id": context.trace_id().to_string(), "span_id": context.span_id().to_string()})
        })
        .collect();
    json!({
        "lang": "rust",
        "name": span.name,
        "kind": kind,
        "trace_id": span.span_context.trace_id().to_string(),
        "span_id": span.span_context.span_id().to_string(),
        "parent_span_id": (parent != opentelemetry::trace::SpanId::INVALID).then(|| parent.to_string()),
        "links": links,
        "attributes": attributes,
        "status": match span.status { Status::Unset => "unset", Status::Ok => "ok", Status::Error { .. } => "error" },
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (queue, prefix, key) = (arg(&args, "--queue")?, arg(&args, "--prefix")?, arg(&args, "--key")?);
    let (count, spans): (usize, String) = (arg(&args, "--count")?.parse()?, arg(&args, "--spans")?);
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let mut options = Options::new();
    options.prefix(&prefix)?.tracer(BoxedTracer::new(Box::new(provider.tracer("tracing-worker"))), false);
    let t = Transport::open(&queue, &options)?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut done = 0;
    while done < count && Instant::now() < deadline {
        let wait = Wait::up_to(deadline.saturating_duration_since(Instant::now()));
        if let Some(lease) = t.claim_wait("rust-worker", 30.0, 0, &[key.as_str()], &wait)? {
            t.ack(&lease)?;
            done += 1;
        }
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(&spans)?);
    for span in exporter.get_finished_spans()? {
        writeln!(out, "{}", line(&span))?;
    }
    out.flush()?;
    if done < count {
        return Err(format!("{done} of {count} messages of key {key} came within 30 s").into());
    }
    Ok(())
}
