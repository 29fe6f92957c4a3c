//! The producer's connections to brokers: what fails when one breaks, how it waits for a broker
//! that refuses it, and how acks=0 finds a new leader.

use kafkascope_model::report::Report;

/// One partition led by broker 1, a producer at 100 records a second, and `action` at 5 s.
fn one_partition(acks: &str, action: &str) -> kafkascope_model::scenario::Scenario {
    crate::scenario(&format!(
        r#"(name: "conn", seed: 3, duration_ms: 60000, cluster: (brokers: 3),
            topics: [(name: "t", partitions: 1, replication_factor: 3, min_insync_replicas: 1,
                      assignment: Some([[1, 2, 3]]))],
            producers: [(name: "p", topic: "t", acks: {acks}, records_per_sec: 100,
                         keys: Sequence("k"))],
            timeline: [(at_ms: 5000, action: {action})])"#
    ))
}

fn errors(report: &Report, name: &str) -> u64 {
    report.producers[0]
        .stats
        .errors
        .get(name)
        .copied()
        .unwrap_or(0)
}

/// `KafkaApis.handleProduceRequest` closes the connection on any error to an acks=0 request, so
/// that the producer refreshes its metadata (`NetworkClient.processDisconnection`,
/// `handleServerDisconnect`); while a crashed leader refuses connections the producer sends it
/// nothing (`Sender.sendProducerData`: `client.ready` is false) and its records wait for the new
/// leader. acks=0 loses what was in flight at the failure, not everything after it.
#[test]
fn an_acks_zero_producer_follows_the_leader_when_it_moves() {
    for action in ["CrashBroker(1)", "ControlledShutdown(1)"] {
        let report = crate::run(&one_partition("Zero", action));
        let p = &report.partitions[0];
        assert_ne!(p.leader, Some(1), "{action}: the leadership moved");
        assert!(
            report.acked_records_lost <= 5,
            "{action}: {} of 6000 lost",
            report.acked_records_lost
        );
        assert!(
            p.log_end_offset > 5_900,
            "{action}: the new leader's log grows: {p:?}"
        );
        assert!(
            report.invariant_violations.is_empty(),
            "{:?}",
            report.invariant_violations
        );
    }
}

/// `ClusterConnectionStates`: the requests in flight when a broker's process dies fail with
/// NETWORK_EXCEPTION; after that its connection is refused and backed off
/// (`reconnect.backoff.ms` doubling to `reconnect.backoff.max.ms`), and batches wait in the
/// accumulator, their delivery timeout running, instead of failing again and again until the
/// broker is fenced.
#[test]
fn writes_to_a_crashed_leader_stall_until_it_is_fenced_instead_of_failing_again_and_again() {
    let report = crate::run(&one_partition("All", "CrashBroker(1)"));
    // `max.in.flight.requests.per.connection`, 5: at most that many requests were in flight.
    let in_flight = 5;
    let failed = errors(&report, "NETWORK_EXCEPTION");
    assert!(
        (1..=in_flight).contains(&failed),
        "{failed} NETWORK_EXCEPTION for one partition"
    );
    assert_eq!(report.producers[0].stats.failed, 0);
    assert_eq!(report.acked_records_lost, 0);
    assert_eq!(report.partitions[0].leader, Some(2));
}
