//! Built without the `opentelemetry` feature: nothing is traced.

use crate::error::Result;
use crate::headers::Headers;
use crate::types::{Lease, Message};

use super::Outcome;

/// Never made: only a build with the feature has a tracer to hold.
#[derive(Clone)]
pub enum Tracing {}

#[derive(Default)]
pub struct Telemetry;

/// A publish's span; none without the feature.
pub struct Publishing;

impl Telemetry {
    pub fn of(_: Option<&Tracing>, _: &str) -> Telemetry {
        Telemetry
    }

    #[inline]
    pub fn on(&self) -> bool {
        false
    }

    #[inline]
    pub fn publishing(&self, _: &[Message<'_>]) -> Option<(Publishing, Vec<Headers>)> {
        None
    }

    #[inline]
    pub fn published<T>(&self, _: Option<Publishing>, _: &Result<T>, _: &[i64]) {}

    #[inline]
    pub fn leased(&self, _: &[Lease], _: f64) {}

    #[inline]
    pub fn finished(&self, _: &Lease, _: Outcome<'_>, _: &Result<()>) {}
}
