//! Kafka's own tools at an instant (`kafkascope describe`, the Terminal panel): what
//! `kafka-topics.sh --describe` and `kafka-consumer-groups.sh --describe` print, in Kafka 4.0's
//! formats, checked against the JSON report of the same run at the same instant.

use kafkascope::report::Report;
use kafkascope::sim::Sim;
use kafkascope::view::kafka_tools::{GroupTable, describe_group, describe_topics};
use kafkascope::view::snapshot::Snapshot;

/// A tab-separated `Name: value` line of `kafka-topics --describe`, as pairs.
fn fields(line: &str) -> Vec<(&str, &str)> {
    line.trim_start_matches('\t')
        .split('\t')
        .map(|f| f.split_once(": ").unwrap_or((f.trim_end_matches(':'), "")))
        .collect()
}

fn field<'a>(fields: &[(&str, &'a str)], name: &str) -> &'a str {
    fields
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no {name} in {fields:?}"))
        .1
}

fn ids(list: &[u32]) -> String {
    list.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// What the checks met across the runs, so that each case is known to have been tried.
#[derive(Default, Debug)]
struct Seen {
    offline: bool,
    reassigning: bool,
    rebalancing: bool,
    unowned_row: bool,
    rows: usize,
}

/// Every partition line and every offsets row agrees with the report at the same instant.
fn check(scenario: &kafkascope::scenario::Scenario, sim: &mut Sim, seen: &mut Seen) {
    let at_ms = sim.now_ms();
    let report = Report::of(sim);
    let snapshot = Snapshot::of(sim.world_mut());
    let topics = describe_topics(&snapshot, None).unwrap();
    let mut topic_lines = 0;
    for line in topics.lines() {
        let f = fields(line);
        if !line.starts_with('\t') {
            let name = field(&f, "Topic");
            let count = report.partitions.iter().filter(|p| p.topic == name).count();
            assert_eq!(field(&f, "PartitionCount"), count.to_string(), "{line}");
            assert_eq!(field(&f, "TopicId").len(), 22);
            topic_lines += 1;
            continue;
        }
        let (topic, index) = (field(&f, "Topic"), field(&f, "Partition"));
        let p = report
            .partitions
            .iter()
            .find(|p| p.topic == topic && p.partition.to_string() == index)
            .unwrap_or_else(|| panic!("{line}: not in the report"));
        let leader = p.leader.map_or("none".to_string(), |l| l.to_string());
        assert_eq!(
            field(&f, "Leader"),
            leader,
            "{scenario:?} at {at_ms}: {line}"
        );
        assert_eq!(field(&f, "Isr"), ids(&p.isr), "{line}");
        assert_eq!(field(&f, "Elr"), ids(&p.elr), "{line}");
        let replicas: Vec<u32> = p.replicas.iter().map(|r| r.broker).collect();
        assert_eq!(field(&f, "Replicas"), ids(&replicas), "{line}");
        seen.offline |= p.leader.is_none();
        seen.reassigning |= line.contains("\tAdding Replicas: ");
        assert!(line.ends_with("\tLastKnownElr: "), "{line:?}");
    }
    let user_topics = scenario.topics.len();
    assert_eq!(topic_lines, user_topics, "{topics}");

    for g in &report.consumer_groups {
        let out = describe_group(&snapshot, &g.name, GroupTable::Offsets);
        seen.rebalancing |= out.stderr.contains("is rebalancing");
        if out.stdout.is_empty() {
            // Nothing owned and nothing committed: the tool prints no table.
            assert!(g.offsets.iter().all(|o| o.committed.is_none()), "{out:?}");
            continue;
        }
        assert!(out.stdout.starts_with("\nGROUP "), "{out:?}");
        for row in out.stdout.lines().skip(2) {
            let cols: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(cols.len(), 9, "{row}");
            assert_eq!(cols[0], g.name);
            let o = g
                .offsets
                .iter()
                .find(|o| o.topic == cols[1] && o.partition.to_string() == cols[2])
                .unwrap_or_else(|| panic!("{row}: not in the report"));
            let dash = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
            assert_eq!(cols[3], dash(o.committed), "{row}");
            let leader = report
                .partitions
                .iter()
                .find(|p| p.topic == o.topic && p.partition == o.partition)
                .and_then(|p| p.leader);
            let end = leader.map(|_| o.high_watermark);
            assert_eq!(cols[4], dash(end), "{row}");
            if end.is_some() {
                assert_eq!(cols[5], dash(o.lag), "{row}");
            }
            seen.unowned_row |= cols[6] == "-";
            seen.rows += 1;
        }
        let members = describe_group(&snapshot, &g.name, GroupTable::Members);
        let state = describe_group(&snapshot, &g.name, GroupTable::State);
        assert!(
            state.stdout.contains(&format!(" {} ", g.protocol))
                || state.stdout.contains("ASSIGNMENT-STRATEGY")
        );
        let listed = members.stdout.lines().skip(2).count();
        let count: usize = state
            .stdout
            .lines()
            .nth(2)
            .and_then(|l| l.split_whitespace().last())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{state:?}"));
        assert_eq!(listed, count, "{members:?} {state:?}");
    }
}

#[test]
fn kafkas_tools_print_what_the_report_says_at_the_same_instant() {
    let mut seen = Seen::default();
    for (name, every) in [
        ("quickstart", 7_500),
        ("rolling-restart-crash", 2_500),
        // Its reassignment runs from 20.001 s to 20.527 s.
        ("reassign", 100),
        ("rebalance-storm", 1_000),
        // Offline from leader 1's fencing on.
        ("isr-then-leader-dies", 5_000),
        ("rebalance-storm-consumer-protocol", 2_500),
    ] {
        let scenario = crate::built_in(name);
        let mut sim = Sim::new(&scenario);
        for at in (1..=scenario.duration_ms / every).map(|i| i * every) {
            sim.run_until(at);
            check(&scenario, &mut sim, &mut seen);
        }
    }
    assert!(
        seen.offline && seen.reassigning && seen.rebalancing && seen.unowned_row && seen.rows > 100,
        "{seen:?}"
    );
}

/// The tables' columns are laid out as `ConsumerGroupCommand`'s `printf` formats lay them out.
#[test]
fn the_tables_keep_kafkas_column_widths() {
    let scenario = crate::built_in("quickstart");
    let mut sim = Sim::new(&scenario);
    sim.run_until(30_000);
    let s = Snapshot::of(sim.world_mut());
    let offsets = describe_group(&s, "fulfilment", GroupTable::Offsets);
    assert_eq!(offsets.stderr, "");
    let lines: Vec<&str> = offsets.stdout.split('\n').collect();
    // A leading empty line, the header, a row per partition, and the final newline.
    assert_eq!(lines[0], "");
    assert!(
        lines[1].starts_with(
            "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID"
        ),
        "{:?}",
        lines[1]
    );
    assert_eq!(lines.len(), 2 + 3 + 1);
    assert_eq!(*lines.last().unwrap(), "");
    // CONSUMER-ID is as wide as the longest id, plus the one space between columns.
    let id = lines[2].split_whitespace().nth(6).unwrap();
    assert_eq!(
        lines[1].find("HOST"),
        Some(lines[2].find(id).unwrap() + id.len() + 1)
    );
    assert!(
        id.starts_with("consumer-fulfilment-1-") && id.len() == "consumer-fulfilment-1-".len() + 36
    );

    let members = describe_group(&s, "fulfilment", GroupTable::Members);
    let lines: Vec<&str> = members.stdout.split('\n').collect();
    assert!(
        lines[1].starts_with("GROUP           CONSUMER-ID "),
        "{:?}",
        lines[1]
    );
    // `%-15s ` after #PARTITIONS: every line ends in spaces.
    assert!(lines[1].ends_with("#PARTITIONS     "), "{:?}", lines[1]);
    assert!(lines[2].ends_with("2               "), "{:?}", lines[2]);

    let state = describe_group(&s, "fulfilment", GroupTable::State);
    assert_eq!(
        state.stdout,
        format!(
            "\nGROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                #MEMBERS\nfulfilment      broker-{c}:9092  ({c})        range                Stable               2\n",
            c = s.group("fulfilment").unwrap().coordinator.unwrap()
        )
    );

    let missing = describe_group(&s, "nope", GroupTable::Offsets);
    assert_eq!(
        missing.stdout,
        "\nError: Executing consumer group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: Group nope not found.\n"
    );
    let topic = describe_topics(&s, Some("orders")).unwrap();
    assert!(
        topic.starts_with("Topic: orders\tTopicId: ")
            && topic.contains(
                "\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2\n"
            ),
        "{topic:?}"
    );
    assert!(
        describe_topics(&s, Some("nope"))
            .unwrap_err()
            .contains("Topic 'Optional[nope]' does not exist as expected")
    );
}

#[test]
fn a_topic_describes_the_log_settings_set_on_it() {
    let scenario = kafkascope::scenario::Scenario::built_in("retention").expect("built in");
    let mut sim = Sim::new(&scenario);
    sim.run_until(1_000);
    let s = Snapshot::of(sim.world_mut());
    let topic = describe_topics(&s, Some("events")).unwrap();
    // Only what differs from Kafka's defaults, by name.
    assert!(
        topic.contains("\tConfigs: min.insync.replicas=2,retention.ms=10000,segment.bytes=1000\n"),
        "{topic:?}"
    );
}
