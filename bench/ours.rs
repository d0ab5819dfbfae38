//! Our library, through its public blocking API (`harel_transport::Transport`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use harel_transport::{Lease, Message, Options, Synchronous, Transport};

use crate::measure::Queue;

pub struct Ours(Transport);

impl Ours {
    /// Opens with the defaults except `synchronous`.
    pub fn open(path: &str, synchronous: Synchronous) -> Result<Ours, String> {
        let mut options = Options::new();
        options.synchronous(synchronous);
        Transport::open(path, &options).map(Ours).map_err(|e| format!("open: {e:?}"))
    }
}

fn err(e: harel_transport::Error) -> String {
    format!("{e:?}")
}

impl Queue for Ours {
    fn publish(&mut self, group_id: &str, event_json: &str) -> Result<(), String> {
        self.0.publish(group_id, event_json, 0, None).map_err(err)
    }

    fn publish_many(&mut self, messages: &[(String, String)]) -> Result<(), String> {
        let batch: Vec<Message> = messages
            .iter()
            .map(|(g, e)| Message { group_id: g, event_json: e, priority: 0, routing_key: None, headers: None })
            .collect();
        self.0.publish_many(&batch).map_err(err)
    }

    fn publish_from_threads(
        &mut self,
        work: &[(String, String)],
        threads: usize,
        slice: Duration,
    ) -> Result<Option<usize>, String> {
        let (t, next, started) = (&self.0, AtomicUsize::new(0), Instant::now());
        std::thread::scope(|s| {
            let publishers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        while started.elapsed() < slice {
                            let Some((g, e)) = work.get(next.fetch_add(1, Ordering::SeqCst)) else {
                                break;
                            };
                            t.publish(g, e, 0, None).map_err(err)?;
                        }
                        Ok::<(), String>(())
                    })
                })
                .collect();
            publishers.into_iter().try_for_each(|p| p.join().map_err(|_| "a publisher thread panicked".to_owned())?)
        })?;
        Ok(Some(next.into_inner().min(work.len())))
    }

    fn claim(
        &mut self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>, String> {
        self.0.claim(worker_id, visibility, min_priority, routing_keys).map_err(err)
    }

    fn ack(&mut self, lease: &Lease) -> Result<(), String> {
        self.0.ack(lease).map_err(err)
    }

    fn ack_and_claim(
        &mut self,
        lease: &Lease,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>, String> {
        self.0.ack_and_claim(lease, worker_id, visibility, min_priority, routing_keys).map_err(err)
    }

    fn nack_now(&mut self, lease: &Lease) -> Result<(), String> {
        self.0.nack(lease, 0.0).map_err(err)
    }
}
