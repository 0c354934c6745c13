//! keel-ctl: creates and inspects keel clusters. The topology lives in etcd
//! (`--etcd`, `--cluster`); nodes read it from there, so every verb here is
//! an etcd transaction plus, where it helps, questions to the nodes over
//! the Redis protocol (their ids, key counts, state).
//!
//! The verbs follow `redis-cli --cluster`'s names and output where they
//! make sense.

mod nodes;
mod verbs;

use std::time::Duration;

use anyhow::Result;
use clap::{Parser, Subcommand};
use keel_cluster::Store;

#[derive(Parser)]
#[command(
    name = "keel-ctl",
    about = "Create and manage keel clusters kept in etcd"
)]
struct Cli {
    /// etcd endpoints, host:port[,host:port...]
    #[arg(long, default_value = "127.0.0.1:2379")]
    etcd: String,
    /// The cluster's name in etcd (the nodes' `cluster-name`).
    #[arg(long, default_value = "keel")]
    cluster: String,
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Subcommand)]
enum Verb {
    /// Makes a cluster of running nodes: the first ones primaries, the
    /// rest their replicas (`--replicas` per primary).
    Create {
        #[arg(required = true)]
        nodes: Vec<String>,
        #[arg(long, default_value_t = 0)]
        replicas: usize,
    },
    /// Checks that every node runs, agrees with etcd and serves its slots.
    Check,
    /// Keys, slots and replicas per primary.
    Info,
    /// Adds a running empty node: a replica, or the primary of a new shard.
    AddNode {
        node: String,
        /// Node id of the primary it replicates.
        #[arg(long)]
        replica_of: Option<String>,
    },
    /// Removes a node holding no slots.
    DelNode { id: String },
    /// Hands a shard to its replica without losing a write.
    Failover {
        /// Node id of the replica to promote.
        id: String,
    },
    /// Evens out the slots over the primaries.
    Rebalance {
        #[arg(long, default_value_t = 64)]
        batch: usize,
        #[arg(long, default_value_t = 100)]
        pipeline: usize,
    },
    /// Finishes moves of slots a reshard left open.
    Fix,
    /// Moves slots between shards while clients keep writing.
    Reshard {
        /// Node id of the source shard's primary.
        #[arg(long)]
        from: String,
        /// Node id of the destination shard's primary.
        #[arg(long)]
        to: String,
        /// How many slots to move (the source's first ones).
        #[arg(long)]
        slots: usize,
        /// Slots moved per step.
        #[arg(long, default_value_t = 64)]
        batch: usize,
        /// Keys per MIGRATE.
        #[arg(long, default_value_t = 100)]
        pipeline: usize,
        /// MIGRATE's timeout, in milliseconds.
        #[arg(long, default_value_t = 60000)]
        timeout: u64,
    },
}

fn main() {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("[ERR] {e}");
            std::process::exit(1);
        }
    };
    match rt.block_on(run(cli)) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("[ERR] {e:#}");
            std::process::exit(1);
        }
    }
}

/// Runs the verb; `Ok(false)` when it found problems.
async fn run(cli: Cli) -> Result<bool> {
    let endpoints: Vec<String> = cli.etcd.split(',').map(str::to_string).collect();
    let mut store = Store::connect(&endpoints, &cli.cluster, Duration::from_secs(5)).await?;
    match cli.verb {
        Verb::Create { nodes, replicas } => verbs::create(&mut store, &nodes, replicas).await,
        Verb::Check => verbs::check(&mut store).await,
        Verb::Fix => verbs::fix(&mut store).await,
        Verb::Info => verbs::info(&mut store).await,
        Verb::AddNode { node, replica_of } => {
            verbs::add_node(&mut store, &node, replica_of.as_deref()).await
        }
        Verb::DelNode { id } => verbs::del_node(&mut store, &id).await,
        Verb::Failover { id } => verbs::failover(&mut store, &id).await,
        Verb::Rebalance { batch, pipeline } => verbs::rebalance(&mut store, batch, pipeline).await,
        Verb::Reshard {
            from,
            to,
            slots,
            batch,
            pipeline,
            timeout,
        } => {
            let r = verbs::Reshard {
                from: &from,
                to: &to,
                slots,
                batch,
                pipeline,
                timeout_ms: timeout,
            };
            verbs::reshard(&mut store, r).await
        }
    }
}
