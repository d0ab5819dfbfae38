//! The spans, with the `opentelemetry` crate's API: a PRODUCER span per publish whose context
//! goes into the messages' `traceparent` and `tracestate` headers, a CONSUMER span per lease
//! linked to (or, asked, a child of) that context, ended by the lease's ack, nack, dead
//! letter or loss. Attributes follow OpenTelemetry's messaging conventions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use opentelemetry::global::{BoxedSpan, BoxedTracer};
use opentelemetry::trace::{
    Link, Span, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer,
};
use opentelemetry::{Context, KeyValue};

use super::Outcome;
use crate::error::{Error, Result};
use crate::headers::Headers;
use crate::trace_context::{TraceParent, TraceState as W3cTraceState, TRACEPARENT, TRACESTATE};
use crate::types::{Lease, Message};

/// What the options carry: the tracer, and whether a lease's span is a child of its
/// producer's (true) or linked to it (false, the default).
#[derive(Clone)]
pub struct Tracing {
    pub(crate) tracer: Arc<BoxedTracer>,
    pub(crate) as_parent: bool,
}

/// Above this many open lease spans, a claim ends those whose lease lapsed long ago (a
/// worker that dropped its lease without finishing it), so they cannot pile up.
const SWEEP_ABOVE: usize = 1024;
/// How long after its end a lease's span is kept for a late ack or nack.
const LAPSED_FOR: f64 = 300.0;

#[derive(Default)]
pub struct Telemetry {
    on: Option<On>,
}

struct On {
    tracing: Tracing,
    queue: String,
    /// The spans of leases handed out and not yet finished, by (group, seq).
    open: Mutex<HashMap<(String, i64), (BoxedSpan, f64)>>,
}

/// A publish's span.
pub struct Publishing(BoxedSpan);

impl Telemetry {
    /// Tracing with `tracing`, spans named after `queue` (the prefix); off without it.
    pub fn of(tracing: Option<&Tracing>, queue: &str) -> Telemetry {
        let on = tracing.map(|t| On { tracing: t.clone(), queue: queue.to_owned(), open: Mutex::default() });
        Telemetry { on }
    }

    /// Starts the span of a publish of `messages` (a child of the current context) and
    /// returns each message's headers with its context in them.
    pub fn publishing(&self, messages: &[Message<'_>]) -> Option<(Publishing, Vec<Headers>)> {
        let on = self.on.as_ref().filter(|_| !messages.is_empty())?;
        let mut attributes = on.common("send", "publish");
        match messages {
            [one] => attributes.push(KeyValue::new("messaging.message.conversation_id", one.group_id.to_owned())),
            many => attributes.push(KeyValue::new("messaging.batch.message_count", many.len() as i64)),
        }
        let span = on
            .tracing
            .tracer
            .span_builder(format!("publish {}", on.queue))
            .with_kind(SpanKind::Producer)
            .with_attributes(attributes)
            .start_with_context(on.tracing.tracer.as_ref(), &Context::current());
        let headers = messages.iter().map(|m| inject(span.span_context(), m.headers)).collect();
        Some((Publishing(span), headers))
    }

    /// Ends a publish's span: its seq when one message was stored, an error status if it failed.
    pub fn published<T>(&self, publishing: Option<Publishing>, outcome: &Result<T>, seqs: &[i64]) {
        let Some(Publishing(mut span)) = publishing else { return };
        if let [seq] = seqs {
            span.set_attribute(KeyValue::new("messaging.message.id", seq.to_string()));
        }
        if let Err(e) = outcome {
            span.set_status(Status::error(e.to_string()));
        }
        span.end();
    }

    /// Whether spans are recorded.
    pub fn on(&self) -> bool {
        self.on.is_some()
    }

    /// Starts a span for each of `leases`, leased for `visibility` seconds.
    pub fn leased(&self, leases: &[Lease], visibility: f64) {
        let Some(on) = &self.on else { return };
        let mut open = on.open.lock().unwrap_or_else(PoisonError::into_inner);
        // The claim's instant, on the transport's clock: a lease's end less its length.
        let now = leases.iter().map(|l| l.lock_expiry - visibility).fold(f64::NAN, f64::min);
        if open.len() > SWEEP_ABOVE && now.is_finite() {
            open.retain(|_, (span, lock_expiry)| {
                let kept = *lock_expiry + LAPSED_FOR > now;
                if !kept {
                    span.set_status(Status::error("lease lapsed"));
                    span.end();
                }
                kept
            });
        }
        for lease in leases {
            let span = on.consumer(lease, leases.len());
            if let Some((mut older, _)) = open.insert((lease.group_id.clone(), lease.seq), (span, lease.lock_expiry)) {
                // The same message leased again (its lease lapsed): the old one is over.
                older.set_status(Status::error("lease lost"));
                older.end();
            }
        }
    }

    /// What became of `lease` (`outcome`, whose call returned `result`): its span ends,
    /// or for an extend is annotated.
    pub fn finished(&self, lease: &Lease, outcome: Outcome<'_>, result: &Result<()>) {
        let Some(on) = &self.on else { return };
        let mut open = on.open.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (lease.group_id.clone(), lease.seq);
        let Some((span, lock_expiry)) = open.get_mut(&key) else { return };
        match (result, outcome) {
            (Err(Error::LeaseLost(_)), _) => span.set_status(Status::error("lease lost")),
            // Another error leaves the lease as it was: the span waits for what comes next.
            (Err(_), _) => return,
            (Ok(()), Outcome::Extended) => {
                span.add_event("extend", vec![]);
                *lock_expiry = lease.lock_expiry;
                return;
            }
            (Ok(()), Outcome::Acked) => span.set_status(Status::Ok),
            (Ok(()), Outcome::Nacked(delay)) => {
                span.add_event("nack", vec![KeyValue::new("messaging.harel.nack_delay", delay)]);
                span.set_status(Status::error("nacked"));
            }
            (Ok(()), Outcome::Dead(reason)) => {
                let why = KeyValue::new("messaging.harel.dead_letter_reason", reason.to_owned());
                span.add_event("dead_letter", vec![why]);
                span.set_status(Status::error(format!("dead letter: {reason}")));
            }
        }
        if let Some((mut span, _)) = open.remove(&key) {
            span.end();
        }
    }
}

impl On {
    fn common(&self, operation_type: &'static str, operation_name: &'static str) -> Vec<KeyValue> {
        vec![
            KeyValue::new("messaging.system", "harel"),
            KeyValue::new("messaging.operation.type", operation_type),
            KeyValue::new("messaging.operation.name", operation_name),
            KeyValue::new("messaging.destination.name", self.queue.clone()),
        ]
    }

    /// A lease's span: linked to the context its producer wrote, or its child.
    fn consumer(&self, lease: &Lease, batch: usize) -> BoxedSpan {
        let mut attributes = self.common("process", "process");
        attributes.push(KeyValue::new("messaging.message.id", lease.seq.to_string()));
        attributes.push(KeyValue::new("messaging.message.conversation_id", lease.group_id.clone()));
        if batch > 1 {
            attributes.push(KeyValue::new("messaging.batch.message_count", batch as i64));
        }
        let tracer = self.tracing.tracer.as_ref();
        let builder = tracer
            .span_builder(format!("process {}", self.queue))
            .with_kind(SpanKind::Consumer)
            .with_attributes(attributes);
        match (extract(&lease.headers), self.tracing.as_parent) {
            (Some(producer), true) => {
                builder.start_with_context(tracer, &Context::new().with_remote_span_context(producer))
            }
            (Some(producer), false) => {
                builder.with_links(vec![Link::with_context(producer)]).start_with_context(tracer, &Context::new())
            }
            (None, _) => builder.start_with_context(tracer, &Context::new()),
        }
    }
}

/// `headers` with `traceparent` (and `tracestate`, if the span has one) set to `span`'s.
fn inject(span: &SpanContext, headers: Option<&Headers>) -> Headers {
    let parent = TraceParent::new(span.trace_id().to_bytes(), span.span_id().to_bytes(), span.trace_flags().to_u8());
    let mut out = headers.cloned().unwrap_or_default();
    if let Some(parent) = parent {
        // A traceparent is 55 characters of the rules' alphabet: it always fits, unless the
        // caller's headers are at their limit; then they go as given.
        out = out.with(TRACEPARENT, &parent.to_header()).unwrap_or(out);
        let state = span.trace_state().header();
        if !state.is_empty() {
            out = out.with(TRACESTATE, &state).unwrap_or(out);
        }
    }
    out
}

/// The producer's context in `headers`; None when absent or invalid (never an error).
fn extract(headers: &Headers) -> Option<SpanContext> {
    let parent = TraceParent::parse(headers.get(TRACEPARENT)?)?;
    let state = headers
        .get(TRACESTATE)
        .and_then(W3cTraceState::parse)
        .and_then(|s| TraceState::from_key_value(s.entries().iter().map(|(k, v)| (k.as_str(), v.as_str()))).ok())
        .unwrap_or_default();
    let flags = TraceFlags::new(parent.flags);
    Some(SpanContext::new(TraceId::from_bytes(parent.trace_id), SpanId::from_bytes(parent.span_id), flags, true, state))
}
