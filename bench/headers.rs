//! The cost of headers and of tracing (issue #37, `make bench-headers`), each against its
//! own yardstick in the same run, on a local file at synchronous FULL and on sqld:
//!
//! - a publish with a `traceparent` header against a plain publish (target <= 1.15x);
//! - claim + ack of a message with 4 headers against one without (target <= 1.1x);
//! - claim + ack with OpenTelemetry on (an SDK provider whose exporter drops every span)
//!   against off, the messages carrying a traceparent either way (target <= 1.2x).
//!
//! Each pair is measured as pairs.rs says.

use std::time::{Duration, Instant};

mod pairs;
use pairs::{header, pair, places, row};

use harel_transport::{Headers, Message, Options, Transport, Wait};
use harel_transport_testkit::sqld::Sqld;
use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};

const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// Drops every span: the SDK's cost without an exporter's.
#[derive(Debug)]
struct Dropping;

impl SpanExporter for Dropping {
    async fn export(&self, _: Vec<SpanData>) -> OTelSdkResult {
        Ok(())
    }
}

fn publish(t: &Transport, n: usize, headers: Option<&Headers>) -> Duration {
    let started = Instant::now();
    for i in 0..n {
        let group = format!("g{}", i % 50);
        let message = Message { group_id: &group, event_json: "{\"n\":1}", priority: 0, routing_key: None, headers };
        t.publish_many(&[message]).unwrap();
    }
    started.elapsed()
}

fn fill(t: &Transport, n: usize, headers: Option<&Headers>) {
    let groups: Vec<String> = (0..n).map(|i| format!("g{}", i % 50)).collect();
    let messages: Vec<Message> = groups
        .iter()
        .map(|g| Message { group_id: g, event_json: "{\"n\":1}", priority: 0, routing_key: None, headers })
        .collect();
    t.publish_many(&messages).unwrap();
}

fn drain(t: &Transport, n: usize) -> Duration {
    let started = Instant::now();
    for _ in 0..n {
        let lease = t.claim_wait("w", 30.0, 0, &[], &Wait::none()).unwrap().expect("a message");
        t.ack(&lease).unwrap();
    }
    started.elapsed()
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let sqld = harel_transport_testkit::sqld::binary().ok().map(|b| Sqld::start(&b, false));
    let places = places(dir.path(), sqld.as_ref());
    let traceparent = Headers::new(&[("traceparent", TRACEPARENT)]).unwrap();
    let four = Headers::new(&[
        ("traceparent", TRACEPARENT),
        ("tracestate", "vendor=opaque"),
        ("content-type", "application/json"),
        ("schema", "orders/v3"),
    ])
    .unwrap();
    let provider = SdkTracerProvider::builder().with_simple_exporter(Dropping).build();
    header();
    for (p, place) in places.iter().enumerate() {
        let mut queues = 0;
        let mut open = |tracer: Option<BoxedTracer>| {
            queues += 1;
            let mut options = Options::new();
            options.prefix(&format!("q{p}_{queues}")).unwrap();
            if let Some(tracer) = tracer {
                options.tracer(tracer, false);
            }
            Transport::open(&(place.url)(&format!("q{queues}")), &options).unwrap()
        };
        let (plain, traced) = (open(None), open(None));
        row(place.name, "publish with a traceparent / plain", pair(place.n, |n| publish(&plain, n, None), |n| {
            publish(&traced, n, Some(&traceparent))
        }), 1.15);
        let (bare, headed) = (open(None), open(None));
        let with = |t: &Transport, n, h| {
            fill(t, n, h);
            drain(t, n)
        };
        row(place.name, "claim+ack, 4 headers / none", pair(place.n, |n| with(&bare, n, None), |n| {
            with(&headed, n, Some(&four))
        }), 1.1);
        let off = open(None);
        let on = open(Some(BoxedTracer::new(Box::new(provider.tracer("bench")))));
        row(place.name, "claim+ack, OpenTelemetry on (spans dropped) / off", pair(place.n, |n| {
            with(&off, n, Some(&traceparent))
        }, |n| with(&on, n, Some(&traceparent))), 1.2);
    }
}
