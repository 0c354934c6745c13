//! Who waits for what, and what reaches a connection besides its replies:
//! the registries the command layer writes into and `net` delivers from.
//!
//! - [`blocking`]: clients blocked on keys (BLPOP, BZPOPMIN, XREAD, ...).
//! - [`watch`]: WATCH, and the invalidation every write makes.
//! - [`pubsub`]: subscriptions and message delivery.
//! - [`tracking`]: client-side caching invalidations.
//! - [`monitor`]: MONITOR's clients.
//! - [`inbox`]: a connection's queue of pushes from other threads.
//! - [`notify`]: keyspace notifications.
//! - [`pause`]: CLIENT PAUSE, and the commands in flight it waits for.

pub mod blocking;
pub mod inbox;
pub mod monitor;
pub mod notify;
pub mod pause;
pub mod pubsub;
pub mod tracking;
pub mod watch;
