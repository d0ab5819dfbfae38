//! OpenTelemetry spans around publishes and leases (docs/tracing.md), with the cargo feature
//! `opentelemetry` and a tracer in the options; otherwise every hook is an empty inline
//! function, so a build or a transport without tracing pays nothing.

#[cfg(feature = "opentelemetry")]
mod spans;
#[cfg(feature = "opentelemetry")]
pub use spans::{Publishing, Telemetry, Tracing};

#[cfg(not(feature = "opentelemetry"))]
mod off;
#[cfg(not(feature = "opentelemetry"))]
pub use off::{Publishing, Telemetry, Tracing};

/// How a lease ended, or what happened to it, for its span.
#[cfg_attr(not(feature = "opentelemetry"), allow(dead_code))] // read only by the spans
pub enum Outcome<'a> {
    Acked,
    Nacked(f64),
    Dead(&'a str),
    Extended,
}
