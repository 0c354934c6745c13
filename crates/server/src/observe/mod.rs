//! What the server tells about itself: counters (INFO), the Prometheus
//! endpoint, the latency monitor and the slow log.

pub mod latency;
pub mod metrics;
pub mod slowlog;
pub mod stats;
