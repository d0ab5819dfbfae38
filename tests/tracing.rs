//! The Rust face's spans (the `opentelemetry` feature, docs/tracing.md), recorded by the
//! SDK's in-memory exporter: what each call records, links against parents, and nothing
//! at all without a tracer.

use harel_transport_testkit as common;

use common::{file, temp_db, TestClock};
use harel_transport::trace_context::TraceParent;
use harel_transport::{Delivery, Error, Headers, Message, Options, Transport, Wait};
use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::Context;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

const V: f64 = 30.0;

struct Traced {
    _dir: tempfile::TempDir,
    path: String,
    clock: TestClock,
    t: Transport,
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
}

fn traced(as_parent: bool) -> Traced {
    let (dir, path) = temp_db();
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let clock = TestClock::at(1000.0);
    let mut options = clock.options();
    options.tracer(BoxedTracer::new(Box::new(provider.tracer("harel-test"))), as_parent);
    Traced { t: Transport::open(&path, &options).unwrap(), path, clock, _dir: dir, exporter, provider }
}

impl Traced {
    fn spans(&self) -> Vec<SpanData> {
        self.exporter.get_finished_spans().unwrap()
    }

    fn named(&self, kind: SpanKind) -> Vec<SpanData> {
        self.spans().into_iter().filter(|s| s.span_kind == kind).collect()
    }
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

fn msg<'a>(group_id: &'a str, headers: Option<&'a Headers>) -> Message<'a> {
    Message { group_id, event_json: "{}", priority: 0, routing_key: None, headers }
}

#[test]
fn a_publish_writes_its_span_into_the_headers_and_a_claim_links_to_it() {
    let q = traced(false);
    let given = Headers::new(&[("content-type", "application/json")]).unwrap();
    let published = q.t.publish_with(msg("g", Some(&given)), Delivery::default()).unwrap();
    let [producer] = q.named(SpanKind::Producer).try_into().expect("one producer span");
    assert_eq!(producer.name, "publish harel");
    for (key, value) in [
        ("messaging.system", "harel"),
        ("messaging.operation.type", "send"),
        ("messaging.destination.name", "harel"),
        ("messaging.message.conversation_id", "g"),
    ] {
        assert_eq!(attribute(&producer, key).as_deref(), Some(value), "{key}");
    }
    assert_eq!(attribute(&producer, "messaging.message.id"), Some(published.seq.to_string()));

    let lease = q.t.claim("w", V, 0, &[]).unwrap().unwrap();
    assert_eq!(lease.headers.get("content-type"), Some("application/json"), "the producer's own headers stay");
    let parent = TraceParent::parse(lease.headers.get("traceparent").expect("a traceparent")).unwrap();
    assert_eq!(parent.trace_id, producer.span_context.trace_id().to_bytes());
    assert_eq!(parent.span_id, producer.span_context.span_id().to_bytes());
    q.t.ack(&lease).unwrap();
    let [consumer] = q.named(SpanKind::Consumer).try_into().expect("one consumer span");
    assert_eq!(consumer.name, "process harel");
    assert_eq!(attribute(&consumer, "messaging.operation.type").as_deref(), Some("process"));
    assert_eq!(attribute(&consumer, "messaging.message.id"), Some(lease.seq.to_string()));
    assert_eq!(consumer.status, Status::Ok);
    let links: Vec<_> = consumer.links.iter().map(|l| l.span_context.clone()).collect();
    assert_eq!(links, [producer.span_context.clone()].map(|c| c.with_remote(true)), "linked to its producer");
    assert_ne!(consumer.span_context.trace_id(), producer.span_context.trace_id(), "a root of its own");
}

trait Remote {
    fn with_remote(self, remote: bool) -> Self;
}

impl Remote for opentelemetry::trace::SpanContext {
    fn with_remote(self, remote: bool) -> Self {
        let state = self.trace_state().clone();
        opentelemetry::trace::SpanContext::new(self.trace_id(), self.span_id(), self.trace_flags(), remote, state)
    }
}

#[test]
fn as_parent_the_consumer_span_is_the_producers_child() {
    let q = traced(true);
    let tracer = q.provider.tracer("app");
    let root = tracer.start("request");
    let cx = Context::current_with_span(root);
    {
        let _in_request = cx.clone().attach();
        q.t.publish("g", "{}", 0, None).unwrap();
    }
    let lease = q.t.claim("w", V, 0, &[]).unwrap().unwrap();
    q.t.ack(&lease).unwrap();
    let [producer] = q.named(SpanKind::Producer).try_into().unwrap();
    let [consumer] = q.named(SpanKind::Consumer).try_into().unwrap();
    assert_eq!(producer.span_context.trace_id(), cx.span().span_context().trace_id(), "a child of the current context");
    assert_eq!(consumer.span_context.trace_id(), producer.span_context.trace_id(), "one trace");
    assert_eq!(consumer.parent_span_id, producer.span_context.span_id());
    assert!(consumer.links.is_empty());
}

#[test]
fn nack_dead_letter_lease_loss_and_extend_mark_the_span() {
    let q = traced(false);
    for g in ["a", "b", "c"] {
        q.t.publish(g, "{}", 0, None).unwrap();
    }
    let leases = q.t.claim_many("w", V, 0, &[], 3, &Wait::none()).unwrap();
    let mut extended = leases[0].clone();
    q.t.extend(&mut extended, 60.0).unwrap();
    q.t.nack(&extended, 5.0).unwrap();
    q.t.dead_letter(&leases[1], "cannot parse").unwrap();
    let forged = harel_transport::Lease { worker_id: "other".into(), ..leases[2].clone() };
    assert!(matches!(q.t.ack(&forged), Err(Error::LeaseLost(_))));
    let consumers = q.named(SpanKind::Consumer);
    assert_eq!(consumers.len(), 3, "each lease's span ended");
    let of = |seq: i64| {
        consumers.iter().find(|s| attribute(s, "messaging.message.id") == Some(seq.to_string())).unwrap()
    };
    let nacked = of(leases[0].seq);
    let events: Vec<&str> = nacked.events.iter().map(|e| e.name.as_ref()).collect();
    assert_eq!(events, ["extend", "nack"]);
    assert_eq!(nacked.status, Status::error("nacked"));
    assert_eq!(attribute(nacked, "messaging.batch.message_count").as_deref(), Some("3"));
    assert_eq!(of(leases[1].seq).status, Status::error("dead letter: cannot parse"));
    assert_eq!(of(leases[2].seq).status, Status::error("lease lost"));
}

#[test]
fn a_batch_publish_is_one_span_and_a_transaction_s_ends_with_its_commit() {
    let q = traced(false);
    q.t.publish_many(&[msg("a", None), msg("b", None)]).unwrap();
    let [batch] = q.named(SpanKind::Producer).try_into().unwrap();
    assert_eq!(attribute(&batch, "messaging.batch.message_count").as_deref(), Some("2"));
    let mut tx = q.t.begin();
    tx.publish(msg("c", None)).unwrap();
    assert_eq!(q.named(SpanKind::Producer).len(), 1, "open until the commit");
    let published = tx.commit().unwrap();
    let producers = q.named(SpanKind::Producer);
    assert_eq!(producers.len(), 2);
    assert_eq!(attribute(&producers[1], "messaging.message.id"), Some(published[0].seq.to_string()));
    let leases = q.t.claim_many("w", V, 0, &[], 3, &Wait::none()).unwrap();
    for lease in &leases {
        let parent = TraceParent::parse(lease.headers.get("traceparent").unwrap()).unwrap();
        let from = if lease.group_id == "c" { &producers[1] } else { &batch };
        assert_eq!(parent.span_id, from.span_context.span_id().to_bytes(), "{}", lease.group_id);
    }
}

#[test]
fn an_invalid_traceparent_is_ignored_and_no_tracer_records_nothing() {
    let q = traced(false);
    let bad = Headers::new(&[("traceparent", "00-00000000000000000000000000000000-b7ad6b7169203331-01")]).unwrap();
    // Written as another program would (not through a traced publish): through an untraced transport.
    let plain = file(&q.path, &TestClock::at(1000.0));
    plain.publish_many(&[msg("g", Some(&bad))]).unwrap();
    let lease = q.t.claim("w", V, 0, &[]).unwrap().unwrap();
    q.t.ack(&lease).unwrap();
    let [consumer] = q.named(SpanKind::Consumer).try_into().unwrap();
    assert!(consumer.links.is_empty(), "no link, no error");

    plain.publish("h", "{}", 0, None).unwrap();
    let untraced = plain.claim("w", V, 0, &[]).unwrap().unwrap();
    assert!(untraced.headers.is_empty(), "without a tracer nothing is written");
    plain.ack(&untraced).unwrap();
    assert_eq!(q.spans().len(), 1, "and nothing recorded");
}

#[test]
fn spans_of_leases_dropped_unfinished_end_once_long_lapsed() {
    let q = traced(false);
    let groups: Vec<String> = (0..1100).map(|i| format!("g{i}")).collect();
    q.t.publish_many(&groups.iter().map(|g| msg(g, None)).collect::<Vec<_>>()).unwrap();
    let mut dropped = q.t.claim_many("w", V, 0, &[], 1000, &Wait::none()).unwrap();
    dropped.extend(q.t.claim_many("w", V, 0, &[], 1000, &Wait::none()).unwrap());
    assert_eq!(dropped.len(), 1100);
    assert!(q.named(SpanKind::Consumer).is_empty(), "open while their leases may still be finished");
    q.clock.advance(V + 301.0);
    let late = q.t.claim("w2", V, 0, &[]).unwrap().expect("a lapsed head, claimed again");
    let ended = q.named(SpanKind::Consumer);
    assert_eq!(ended.len(), 1100, "every dropped lease's span ended by the next claim");
    assert!(ended.iter().all(|s| s.status == Status::error("lease lapsed")));
    q.t.ack(&late).unwrap();
    let last = q.named(SpanKind::Consumer).pop().unwrap();
    assert_eq!((&last.status, attribute(&last, "messaging.message.id")), (&Status::Ok, Some(late.seq.to_string())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_face_traces_as_the_blocking_one() {
    let (_dir, path) = temp_db();
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let mut options = Options::new();
    options.tracer(BoxedTracer::new(Box::new(provider.tracer("harel-test"))), false);
    let t = harel_transport::AsyncTransport::open(&path, &options).await.unwrap();
    t.publish("g", "{}", 0, None).await.unwrap();
    let lease = t.claim("w", V, 0, &[]).await.unwrap().unwrap();
    t.ack(&lease).await.unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let [producer, consumer] = spans.as_slice() else { panic!("two spans: {spans:?}") };
    assert_eq!((producer.span_kind.clone(), consumer.span_kind.clone()), (SpanKind::Producer, SpanKind::Consumer));
    let linked: Vec<_> = consumer.links.iter().map(|l| l.span_context.span_id()).collect();
    assert_eq!(linked, [producer.span_context.span_id()]);
    assert_eq!(consumer.status, Status::Ok);
}
