//! Scenario files: Kafka's defaults, and clear refusals of what cannot exist.

use kafkascope_model::scenario::{Acks, Keys, Scenario, ScenarioError};

fn refused(source: &str) -> ScenarioError {
    Scenario::parse(source, "bad.ron").expect_err("the scenario should be refused")
}

fn invalid_field(source: &str) -> (String, String) {
    match refused(source) {
        ScenarioError::Invalid { field, message, .. } => (field, message),
        other => panic!("expected a field error, got {other}"),
    }
}

const MINIMAL: &str = r#"(name: "m", topics: [(name: "t")], producers: [(name: "p", topic: "t")])"#;

#[test]
fn left_out_fields_take_kafkas_defaults() {
    let s = crate::scenario(MINIMAL);
    assert_eq!(s.cluster.brokers, 3);
    assert_eq!(s.cluster.replica_lag_time_max_ms, 30_000);
    assert_eq!(s.cluster.replica_fetch_wait_max_ms, 500);
    assert_eq!(s.cluster.replica_socket_timeout_ms, 30_000);
    let t = &s.topics[0];
    assert_eq!(
        (t.partitions, t.replication_factor, t.min_insync_replicas),
        (1, 1, 1)
    );
    let p = &s.producers[0];
    assert_eq!(p.acks, Acks::All);
    assert_eq!(p.keys, Keys::None);
    assert_eq!((p.linger_ms, p.batch_size), (5, 16_384));
    assert_eq!(
        (p.request_timeout_ms, p.delivery_timeout_ms),
        (30_000, 120_000)
    );
    assert_eq!((p.retry_backoff_ms, p.retry_backoff_max_ms), (100, 1_000));
    assert_eq!(p.max_in_flight_requests_per_connection, 5);
    assert_eq!(p.enable_idempotence, None);
}

#[test]
fn the_issue_example_parses() {
    let s = crate::built_in("isr-shrink");
    assert_eq!(s.name, "ISR shrink");
    assert_eq!(s.seed, 7);
    assert_eq!(s.topics[0].assignment, Some(vec![vec![1, 2, 3]]));
    assert_eq!(s.producers[0].keys, Keys::Sequence("k".into()));
}

#[test]
fn default_assignment_is_kafkas_rack_unaware_placement() {
    let s = crate::scenario(
        r#"(name: "a", cluster: (brokers: 3), topics: [(name: "t", partitions: 4, replication_factor: 2)])"#,
    );
    // First replicas round-robin over the brokers; followers shift by one more every full round.
    assert_eq!(
        s.assignment(&s.topics[0]),
        vec![vec![1, 2], vec![2, 3], vec![3, 1], vec![1, 3]]
    );
}

#[test]
fn a_syntax_error_names_line_and_column() {
    let e = refused("(\n  name: \"x\",\n  seed: oops,\n)");
    let ScenarioError::Syntax { line, column, .. } = &e else {
        panic!("expected a syntax error, got {e}");
    };
    assert_eq!(*line, 3);
    assert!(*column > 1);
    assert!(e.to_string().starts_with("bad.ron:3:"), "{e}");
}

#[test]
fn a_syntax_error_says_what_it_found_there() {
    let cases = [
        (
            r#"(name: "x", duration_ms: 1.5)"#,
            "bad.ron:1:27: Expected comma, found `.5` (a whole number goes here)",
        ),
        (
            r#"(name: "x", timeline: [(at_ms: 5, action: PreferredElection())])"#,
            "found `(` (`PreferredElection` is written without parentheses)",
        ),
        (
            r#"(name: "x", duration_ms: -5)"#,
            "Integer is out of bounds, found `-5`",
        ),
        (
            r#"(name: "x", duration_ms: "5")"#,
            "Expected integer, found `\"5\"`",
        ),
        (
            "(name: \"x\",\n  duration_ms: 5000\n  seed: 3)",
            "bad.ron:3:3: Expected comma, found `seed:`",
        ),
        (r#"(name: "x""#, "found the end of the file"),
    ];
    for (source, expected) in cases {
        let e = refused(source).to_string();
        assert!(e.contains(expected), "{source}: {e}");
    }
}

#[test]
fn a_byte_order_mark_is_read_as_a_space() {
    let s = crate::scenario("\u{feff}(name: \"x\", seed: 4)");
    assert_eq!(s.seed, 4);
    let e = refused("\u{feff}(name: \"x\", seed: oops)").to_string();
    assert!(e.starts_with("bad.ron:1:19:"), "{e}");
}

#[test]
fn an_unknown_field_is_an_error() {
    let e = refused(r#"(name: "x", brokers: 3)"#);
    assert!(matches!(e, ScenarioError::Syntax { .. }));
    assert!(e.to_string().contains("brokers"), "{e}");
    let e = refused(r#"(name: "x", topics: [(name: "t", partitons: 3)])"#);
    assert!(e.to_string().contains("partitons"), "{e}");
}

#[test]
fn impossible_scenarios_name_the_field() {
    let cases = [
        (
            r#"(name: "x", cluster: (brokers: 2), topics: [(name: "t", replication_factor: 3)])"#,
            "topics[0].replication_factor",
            "above the broker count",
        ),
        (
            r#"(name: "x", topics: [(name: "t", partitions: 0)])"#,
            "topics[0].partitions",
            "0 partitions",
        ),
        (
            r#"(name: "x", topics: [(name: "t")], timeline: [(at_ms: 10, action: CutLink(1, 9))])"#,
            "timeline[0].action",
            "broker 9 does not exist",
        ),
        (
            r#"(name: "x", topics: [(name: "t")], timeline: [(at_ms: 10, action: SetRate("ghost", 5))])"#,
            "timeline[0].action",
            "no producer named \"ghost\"",
        ),
        (
            r#"(name: "x", producers: [(name: "p", topic: "nope")])"#,
            "producers[0].topic",
            "no topic named",
        ),
        (
            r#"(name: "x", topics: [(name: "t", replication_factor: 3)], producers: [(name: "p", topic: "t", records_per_sec: 1000000)], duration_ms: 600000000)"#,
            "producers",
            "fit in memory",
        ),
        (
            r#"(name: "x", cluster: (brokers: 64), topics: [(name: "t", partitions: 4096, replication_factor: 5)])"#,
            "topics[0].replication_factor",
            "20480 replicas in all (partitions x replication factor): at most 16384",
        ),
        (
            r#"(name: "x", topics: [(name: "t")], consumer_groups: [(name: "g", topics: ["t"], max_poll_interval_ms: 0)])"#,
            "consumer_groups[0].max_poll_interval_ms",
            "must be at least 1",
        ),
        (
            r#"(name: "x", topics: [(name: "t")], consumer_groups: [(name: "g", topics: ["t"])], timeline: [(at_ms: 5, action: SetConsumerRate("g", 4294967295))])"#,
            "timeline[0].action",
            "4294967295 records/s: at most 1000000",
        ),
        (
            r#"(name: "x", topics: [(name: "t")], producers: [(name: "p", topic: "t", acks: One, max_in_flight_requests_per_connection: 6)])"#,
            "producers[0].max_in_flight_requests_per_connection",
            "6: the idempotent producer allows at most 5",
        ),
        (
            r#"(name: "x", topics: [(name: "t")], producers: [(name: "p", topic: "t", acks: One, enable_idempotence: Some(true))])"#,
            "producers[0].enable_idempotence",
            "needs acks=all",
        ),
        (
            r#"(name: "x", topics: [(name: "t", partitions: 2, assignment: Some([[1]]))])"#,
            "topics[0].assignment",
            "lists 1 partitions",
        ),
        (
            r#"(name: "x", topics: [(name: "t")], producers: [(name: "p", topic: "t", retry_backoff_ms: 0)])"#,
            "producers[0].retry_backoff_ms",
            "at least 1 ms",
        ),
        (
            r#"(name: "x", topics: [(name: "t")], consumer_groups: [(name: "g", topics: ["t"], max_poll_records: 0)])"#,
            "consumer_groups[0].max_poll_records",
            "at least 1",
        ),
        (
            r#"(name: "x", topics: [(name: "t")], consumer_groups: [(name: "g", topics: ["t", "t"])])"#,
            "consumer_groups[0].topics[1]",
            "listed twice",
        ),
        (
            r#"(name: "x", cluster: (replica_socket_timeout_ms: 2, replica_fetch_wait_max_ms: 600))"#,
            "cluster.replica_fetch_wait_max_ms",
            "at most replica_socket_timeout_ms (2 ms)",
        ),
        (
            r#"(name: "x", cluster: (request_timeout_ms: 5000))"#,
            "cluster.request_timeout_ms",
            "now replica_socket_timeout_ms",
        ),
        (
            r#"(name: "x", cluster: (replica_lag_time_max_ms: 400))"#,
            "cluster.replica_fetch_wait_max_ms",
            "at most replica_lag_time_max_ms (400 ms)",
        ),
        (
            r#"(name: "x", topics: [(name: "t")], producers: [(name: "", topic: "t")])"#,
            "producers[0].name",
            "needs a name",
        ),
    ];
    for (source, field, why) in cases {
        let (f, message) = invalid_field(source);
        assert_eq!(f, field, "{source}");
        assert!(message.contains(why), "{source}: {message}");
    }
    let long = "k".repeat(kafkascope_model::scenario::limits::KEY_BYTES + 1);
    let cases = [
        (
            format!(
                r#"(name: "x", topics: [(name: "t")], producers: [(name: "p", topic: "t", keys: Fixed("{long}"))])"#
            ),
            "producers[0].keys",
        ),
        (
            format!(
                r#"(name: "x", topics: [(name: "t")], producers: [(name: "p", topic: "t")], timeline: [(at_ms: 1, action: Produce("p", Some("{long}"), 1))])"#
            ),
            "timeline[0].action",
        ),
    ];
    for (source, field) in cases {
        let (f, message) = invalid_field(&source);
        assert_eq!(f, field);
        assert!(message.contains("at most 4096"), "{message}");
    }
}

#[test]
fn every_built_in_scenario_parses_and_has_a_description() {
    for b in kafkascope_model::scenario::BUILT_IN {
        let s = crate::built_in(b.name);
        assert!(!s.description.is_empty(), "{}", b.name);
    }
    assert_eq!(kafkascope_model::scenario::BUILT_IN[0].name, "quickstart");
}

#[test]
fn mutated_scenarios_are_refused_or_run_but_never_panic() {
    // Every number of every built-in scenario, swapped for awkward values: the file is either
    // refused with a message or runs.
    let awkward = [
        "0",
        "1",
        "2",
        "65",
        "1000000000",
        "18446744073709551615",
        "-1",
    ];
    let mut draw = kafkascope_model::sim::SimRng::new(42);
    let mut ran = 0;
    for built_in in kafkascope_model::scenario::BUILT_IN {
        let source = built_in.source;
        let numbers: Vec<(usize, usize)> = source
            .char_indices()
            .filter(|(i, c)| {
                c.is_ascii_digit() && !source[..*i].ends_with(|p: char| p.is_ascii_alphanumeric())
            })
            .map(|(i, _)| {
                let len = source[i..].chars().take_while(char::is_ascii_digit).count();
                (i, len)
            })
            .collect();
        for _ in 0..25 {
            let (at, len) = numbers[draw.below(numbers.len() as u64) as usize];
            let value = awkward[draw.below(awkward.len() as u64) as usize];
            let mutated = format!("{}{}{}", &source[..at], value, &source[at + len..]);
            match Scenario::parse(&mutated, "mutated.ron") {
                Err(e) => assert!(!e.to_string().is_empty()),
                Ok(mut s) => {
                    s.duration_ms = s.duration_ms.min(3_000);
                    crate::run(&s);
                    ran += 1;
                }
            }
        }
    }
    assert!(ran > 50, "some mutations still run ({ran})");
}

#[test]
fn a_loaded_built_in_is_found_by_its_scenario_name() {
    use kafkascope_model::scenario::{BUILT_IN, BuiltIn};
    for b in BUILT_IN {
        let name = crate::built_in(b.name).name;
        assert_eq!(
            BuiltIn::named(&name).map(|f| f.name),
            Some(b.name),
            "{name}"
        );
    }
    // isr-shrink, the issue's example, is named "ISR shrink".
    assert_eq!(
        BuiltIn::named("ISR shrink").map(|b| b.name),
        Some("isr-shrink")
    );
    assert!(BuiltIn::named("isr-shrink").is_none());
    assert!(BuiltIn::named("a file of mine").is_none());
}

/// `group.protocol`: the classic protocol by default, as Kafka 4.0's consumer; the consumer
/// protocol takes its assignor from the coordinator (uniform by default) and its timings from
/// the broker, and refuses what Kafka's consumer refuses with it
/// (`ConsumerConfig.CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS`).
#[test]
fn a_group_protocol_takes_only_its_own_settings() {
    use kafkascope_model::scenario::{Assignor, GroupProtocol};
    let group = |fields: &str| {
        format!(
            r#"(name: "x", topics: [(name: "t")], consumer_groups: [(name: "g", topics: ["t"], {fields})])"#
        )
    };
    let classic = crate::scenario(&group("members: 2"));
    let g = &classic.consumer_groups[0];
    assert_eq!(g.protocol, GroupProtocol::Classic);
    assert_eq!(g.assignor(), Assignor::Range);
    assert_eq!(
        (g.session_timeout_ms(), g.heartbeat_interval_ms()),
        (45_000, 3_000)
    );
    let consumer = crate::scenario(&group("protocol: Consumer"));
    assert_eq!(consumer.consumer_groups[0].assignor(), Assignor::Uniform);
    assert_eq!(
        (
            consumer.cluster.group_consumer_heartbeat_interval_ms,
            consumer.cluster.group_consumer_session_timeout_ms
        ),
        (5_000, 45_000)
    );
    let ranged = crate::scenario(&group("protocol: Consumer, assignor: Range"));
    assert_eq!(ranged.consumer_groups[0].assignor(), Assignor::Range);
    for (fields, field, why) in [
        (
            "protocol: Consumer, session_timeout_ms: 10000",
            "session_timeout_ms",
            "group_consumer_session_timeout_ms",
        ),
        (
            "protocol: Consumer, heartbeat_interval_ms: 1000",
            "heartbeat_interval_ms",
            "group_consumer_heartbeat_interval_ms",
        ),
        (
            "protocol: Consumer, assignor: CooperativeSticky",
            "assignor",
            "client-side assignor",
        ),
        (
            "protocol: Consumer, static_members: true",
            "static_members",
            "classic protocol only",
        ),
        ("assignor: Uniform", "assignor", "server-side assignor"),
    ] {
        let (f, message) = invalid_field(&group(fields));
        assert_eq!(f, format!("consumer_groups[0].{field}"), "{fields}");
        assert!(message.contains(why), "{fields}: {message}");
    }
    let (f, message) = invalid_field(
        r#"(name: "x", cluster: (group_consumer_heartbeat_interval_ms: 45000), topics: [(name: "t")])"#,
    );
    assert_eq!(f, "cluster.group_consumer_heartbeat_interval_ms");
    assert!(
        message.contains("below group_consumer_session_timeout_ms"),
        "{message}"
    );
}
