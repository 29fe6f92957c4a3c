//! What faults do to messages: a cut link drops what travels on it, and a broker whose process
//! is gone refuses what reaches it.

use bevy_ecs::prelude::*;
use bevy_ecs::system::SystemParam;

use super::Runtime;
use super::SimClock;
use super::cluster::{Broker, Cluster, broker_views};
use super::consumer::Consumer;
use super::ledger::AckLedger;
use super::network::{Network, Node, Wire};
use super::producer::Producer;
use super::protocol::Payload;

/// Only a cut link or a dead broker loses messages: a healthy cluster skips the phase.
pub(super) fn any_fault<'a>(
    clock: &SimClock,
    network: &Network,
    mut brokers: impl Iterator<Item = &'a Broker>,
) -> bool {
    !clock.skip_idle_rules || network.any_cut() || brokers.any(|b| !b.alive)
}

/// What faults do to the messages on the wire, with what it borrows for one step.
#[derive(SystemParam)]
pub(super) struct NetworkPhase<'w, 's> {
    runtime: ResMut<'w, Runtime>,
    cluster: Res<'w, Cluster>,
    ledger: ResMut<'w, AckLedger>,
    brokers: Query<'w, 's, &'static mut Broker>,
    producers: Query<'w, 's, &'static mut Producer>,
    consumers: Query<'w, 's, &'static mut Consumer>,
    /// The messages arriving or held now, kept between steps.
    due: Local<'s, Vec<u64>>,
}

/// The network's phase: what faults do to the messages on the wire.
pub(super) fn phase(mut rules: NetworkPhase) {
    rules.drop_on_cut_links();
    rules.refuse_at_dead_brokers();
}

impl NetworkPhase<'_, '_> {
    /// A message whose link is cut while it travels never arrives (a network partition drops
    /// packets; nobody is told).
    fn drop_on_cut_links(&mut self) {
        let Self { runtime, .. } = self;
        let Runtime {
            clock,
            network,
            wires,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        if !network.any_cut() {
            return;
        }
        wires.lose_where(now, |w| network.is_cut(w.from, w.to));
    }

    /// A broker whose process is gone refuses connections: a request that reaches it, or one it was
    /// holding when it died, is lost, and its sender learns at once (the connection resets; a producer
    /// sees NETWORK_EXCEPTION, a follower's fetcher backs off).
    fn refuse_at_dead_brokers(&mut self) {
        let Self {
            runtime,
            cluster,
            ledger,
            brokers,
            producers,
            consumers,
            due,
            ..
        } = self;
        let Runtime {
            clock,
            rng,
            wires,
            network,
            ..
        } = &mut **runtime;
        let now = clock.now_ms;
        if brokers.iter().all(|b| b.alive) {
            return;
        }
        let views = broker_views(brokers.iter());
        // A broker still registering hears only the controller's answers.
        let dead = |w: &Wire| match w.to {
            Node::Broker(b) => {
                let view = views[b as usize];
                !(view.alive || view.starting && w.from == Node::Controller)
            }
            _ => false,
        };
        wires.all_arriving_or_held(due);
        due.retain(|id| dead(&wires.get(*id).expect("a message on the wire").wire));
        for &id in due.iter() {
            let message = wires.refuse(id, now);
            let wire = message.wire;
            match &message.payload {
                // The broker's machine resets the connection: every request on it fails.
                Payload::Produce(request) => {
                    let producer = cluster.producers[request.producer as usize];
                    if let Node::Broker(broker) = wire.to {
                        let mut producer = producers.get_mut(producer).expect("producer entity");
                        producer.connection_broke(broker, wire.id, now, rng, ledger);
                        network.connection_closed(producer.index, broker);
                    }
                }
                Payload::Group(_) | Payload::ConsumerFetch(_) => {
                    if let Node::Consumer(c) = wire.from {
                        consumers
                            .get_mut(cluster.consumers[c as usize])
                            .expect("consumer entity")
                            .request_failed(wire.id, now);
                    }
                }
                Payload::Fetch(_) => {
                    if let (Node::Broker(follower), Node::Broker(leader)) = (wire.from, wire.to) {
                        let mut broker = brokers
                            .get_mut(cluster.brokers[follower as usize - 1])
                            .expect("broker entity");
                        let fetcher = broker.fetcher(leader);
                        if fetcher.in_flight == Some(wire.id) {
                            fetcher.in_flight = None;
                            fetcher.backoff_until_ms =
                                now + cluster.config.replica_fetch_backoff_ms;
                        }
                    }
                }
                _ => {}
            }
        }
    }
}
