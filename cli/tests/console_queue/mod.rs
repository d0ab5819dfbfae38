//! The queue `serve` is tested against, built through the library to known counts, with
//! data that must never turn into markup: a group id holding an HTML tag and a dead letter
//! whose event holds a `<script>`. Used by tests/serve.rs and, through the example
//! `console_queue`, by the browser test (tests/console).
//!
//! - ready-a: 2 messages, priority 0, ready
//! - `<img src=x onerror="window.__xss=1">`: 1 message, priority 0, ready
//! - leased: 2 messages, priority 1, the head leased to "worker-stuck" for 600 s
//! - parked: 1 message, priority 2, nacked with a delay of 600 s
//! - delayed: 1 message, priority 1, published with a delay of 600 s
//! - overdue: 1 message, priority 2, its lease lapsed (a worker that died): ready
//! - poison: priority 3, its one message moved to the dead letters (`<script>` in its event
//!   and in a header's value, a header name of markup, markup in its reason), so the group is
//!   gone until a redrive brings it back
//! - archived: its two messages acked by "worker-archive" (the first after a nack, so its
//!   attempts are 2; `<script>` in its event and markup in a header), so the group is gone and
//!   the archive holds them, in order
//! - limits: routing key "leased" at most 1 leased at once (its head's lease, taken after the
//!   limit was set, uses it: 1 in use of 1); routing key "delayed" at most 2 leases a second,
//!   burst 5 (nothing claimed: its bucket is full, 5 tokens)
//!
//! The transport that builds it has the archive on (`options`): its acks are kept.

use harel_transport::{Delivery, Headers, Limit, Message, Options, Rate, Transport};

pub const MARKUP_GROUP: &str = r#"<img src=x onerror="window.__xss=1">"#;
pub const SCRIPT_EVENT: &str = r#"{"html":"<script>window.__xss=1;alert(1)</script>"}"#;
/// The poison message's headers, in order: a trace context, a value holding a `<script>`, a
/// name of markup (a name may hold '<', '>' and '/').
pub const POISON_HEADERS: [(&str, &str); 3] = [
    ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
    ("x-note", "<script>window.__xss=2;alert(2)</script>"),
    ("<b>bold</b>", "<i onmouseover=alert(3)>x</i>"),
];
/// The archived group's messages, in order, and the first one's headers.
pub const ARCHIVED_GROUP: &str = "archived";
pub const ARCHIVED_EVENTS: [&str; 2] = [r#"{"done":"<script>window.__xss=3;alert(4)</script>"}"#, r#"{"done":2}"#];
pub const ARCHIVED_HEADERS: [(&str, &str); 2] =
    [("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), ("x-html", "<u>under</u>")];
pub const ARCHIVE_WORKER: &str = "worker-archive";
/// The routing key limited to one lease at once (its one lease running), and the one with a
/// rate limit of `RATE` a second and a burst of `BURST` (nothing claimed).
pub const CONCURRENCY_KEY: &str = "leased";
pub const RATE_KEY: &str = "delayed";
pub const RATE: f64 = 2.0;
pub const BURST: f64 = 5.0;
/// How long the lease and the park last: longer than any test.
pub const HELD: f64 = 600.0;
/// The overdue group's lease: it has lapsed by the time `build` returns.
const LAPSING: f64 = 0.05;

/// The options of the transport `build` takes: the archive on (a day), so its acks are kept.
pub fn options() -> Options {
    let mut options = Options::new();
    options.archive(86_400.0).unwrap();
    options
}

/// Builds the queue through `t` (a new, empty queue, opened with `options`); returns the
/// dead letter's seq.
pub fn build(t: &Transport) -> i64 {
    t.publish("ready-a", r#"{"n":1}"#, 0, Some("a")).unwrap();
    t.publish("ready-a", r#"{"n":2}"#, 0, Some("a")).unwrap();
    t.publish(MARKUP_GROUP, r#"{"n":3}"#, 0, Some("img")).unwrap();
    t.publish("leased", r#"{"n":4}"#, 1, Some("leased")).unwrap();
    t.publish("leased", r#"{"n":5}"#, 1, Some("leased")).unwrap();
    t.publish("parked", r#"{"n":6}"#, 2, Some("parked")).unwrap();
    t.publish("overdue", r#"{"n":7}"#, 2, Some("overdue")).unwrap();
    let headers = Headers::new(&POISON_HEADERS).unwrap();
    let poison = Message { group_id: "poison", event_json: SCRIPT_EVENT, priority: 3, routing_key: Some("poison"), headers: Some(&headers) };
    t.publish_many(&[poison]).unwrap();
    let delayed = Message { group_id: "delayed", event_json: r#"{"n":8}"#, priority: 1, routing_key: Some("delayed"), headers: None };
    t.publish_with(delayed, Delivery { delay: HELD, ..Delivery::default() }).unwrap();

    let headers = Headers::new(&ARCHIVED_HEADERS).unwrap();
    let archived = ARCHIVED_EVENTS.map(|event| Message {
        group_id: ARCHIVED_GROUP,
        event_json: event,
        priority: 0,
        routing_key: Some(ARCHIVED_GROUP),
        headers: None,
    });
    t.publish_many(&[Message { headers: Some(&headers), ..archived[0] }, archived[1]]).unwrap();
    let done = || t.claim(ARCHIVE_WORKER, HELD, 0, &[ARCHIVED_GROUP]).unwrap().expect("an archived message");
    t.nack(&done(), 0.0).unwrap();
    t.ack(&done()).unwrap();
    t.ack(&done()).unwrap();

    t.set_limit(CONCURRENCY_KEY, Limit { concurrency: Some(1), rate: None }).unwrap();
    t.set_limit(RATE_KEY, Limit { concurrency: None, rate: Some(Rate { per_second: RATE, burst: BURST }) }).unwrap();
    let claim = |key: &str, visibility: f64| t.claim("worker-stuck", visibility, 0, &[key]).unwrap().expect(key);
    claim("leased", HELD);
    t.nack(&claim("parked", HELD), HELD).unwrap();
    claim("overdue", LAPSING);
    let poison = claim("poison", HELD);
    t.dead_letter(&poison, "<b>bad</b> payload").unwrap();
    std::thread::sleep(std::time::Duration::from_secs_f64(LAPSING * 2.0));
    poison.seq
}
