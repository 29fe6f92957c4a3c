//! Kafka's own command-line tools, answered from the model at one instant: what
//! `kafka-topics.sh --describe` and `kafka-consumer-groups.sh --describe` print against a Kafka
//! 4.0 cluster in the same state, byte for byte where the model holds the value. The formats are
//! those of `TopicCommand` (`TopicDescription.printDescription`,
//! `PartitionDescription.printDescription`) and `ConsumerGroupCommand`
//! (`ConsumerGroupService.printOffsets`, `printMembers`, `printStates`,
//! `shouldPrintMemberState`), in Kafka's `tools` module.
//!
//! What a real cluster has and the model does not is made up the same way every time, and
//! said in `docs/model.md`: topic ids come from the scenario's and the topic's names, a
//! consumer's id from its client id, hosts are `/10.0.1.N` for consumer N and
//! `broker-N:9092` for broker N, and the brokers have no `server.properties` overrides.

use super::snapshot::{GroupView, Snapshot, or_dash};

/// What a tool printed: on stdout, and on stderr (`kafka-consumer-groups`' state warnings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    pub stdout: String,
    pub stderr: String,
}

impl ToolOutput {
    /// Both streams as a terminal shows them: stderr's lines first, as Kafka's tool prints
    /// its warning before the table.
    pub fn shown(&self) -> String {
        format!("{}{}", self.stderr, self.stdout)
    }
}

/// Which of `kafka-consumer-groups --describe`'s tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupTable {
    /// The offsets (the default, or `--offsets`).
    #[default]
    Offsets,
    /// `--members`.
    Members,
    /// `--state`.
    State,
}

/// Kafka's defaults of the topic settings the model has: a topic prints those that differ in
/// `Configs` (`TopicCommand`'s description keeps entries whose source is not the default), in
/// name order (Kafka's order is that of a hash map on the broker, `ConfigHelper.allConfigs`).
const DEFAULT_MIN_INSYNC_REPLICAS: u32 = 1;

/// `kafka-topics.sh --describe [--topic NAME]`: a topic line, then a line per partition, for
/// every topic but the internal `__consumer_offsets` (as with `--exclude-internal`: the model
/// holds only the offsets partitions its groups use), or the one named, that one included. An unknown name gets the tool's own error line (Kafka prints it on stdout and
/// exits with 1).
pub fn describe_topics(s: &Snapshot, topic: Option<&str>) -> Result<String, String> {
    let mut names: Vec<&str> = Vec::new();
    for p in &s.partitions {
        if (!p.internal || topic == Some(p.topic.as_str())) && !names.contains(&p.topic.as_str()) {
            names.push(&p.topic);
        }
    }
    // `TopicCommand.getTopics` sorts the names.
    names.sort_unstable();
    if let Some(wanted) = topic {
        if !names.contains(&wanted) {
            // `TopicCommand.ensureTopicExists`, as `printException` prints it (the name is
            // formatted from a Java `Optional`).
            return Err(format!(
                "Error while executing topic command : Topic 'Optional[{wanted}]' does not exist as expected"
            ));
        }
        names.retain(|n| *n == wanted);
    }
    let mut out = String::new();
    for name in names {
        let mut partitions: Vec<_> = s.partitions.iter().filter(|p| p.topic == name).collect();
        partitions.sort_by_key(|p| p.index);
        let Some(first) = partitions.first() else {
            continue;
        };
        // `TopicCommand.getReplicationFactor`: during a reassignment, the replicas less those
        // being added.
        let replication_factor = first.assignment.len()
            - first
                .reassigning
                .as_ref()
                .map_or(0, |(adding, _)| adding.len());
        let mut configs = Vec::new();
        let mut partition_count = partitions.len();
        if first.internal {
            // `GroupCoordinatorService.groupMetadataTopicConfigs`, with
            // `offsets.topic.segment.bytes`.
            configs.extend([
                "cleanup.policy=compact".to_string(),
                "compression.type=producer".to_string(),
                format!("segment.bytes={}", first.log.segment_bytes),
            ]);
            partition_count = s.offsets_topic_partitions as usize;
        } else {
            // The settings set on the topic, by name.
            let log = &first.log;
            let kafka = crate::sim::segments::LogConfig::default();
            if log.cleanup_policy != kafka.cleanup_policy {
                configs.push(format!("cleanup.policy={}", log.cleanup_policy.as_kafka()));
            }
            if first.min_insync_replicas != DEFAULT_MIN_INSYNC_REPLICAS {
                configs.push(format!("min.insync.replicas={}", first.min_insync_replicas));
            }
            if log.retention_bytes != kafka.retention_bytes {
                configs.push(format!("retention.bytes={}", log.retention_bytes));
            }
            if log.retention_ms != kafka.retention_ms {
                configs.push(format!("retention.ms={}", log.retention_ms));
            }
            if log.segment_bytes != kafka.segment_bytes {
                configs.push(format!("segment.bytes={}", log.segment_bytes));
            }
            if log.segment_ms != kafka.segment_ms {
                configs.push(format!("segment.ms={}", log.segment_ms));
            }
            if log.min_cleanable_dirty_ratio != kafka.min_cleanable_dirty_ratio {
                configs.push(format!(
                    "min.cleanable.dirty.ratio={}",
                    log.min_cleanable_dirty_ratio
                ));
            }
            if log.min_compaction_lag_ms != kafka.min_compaction_lag_ms {
                configs.push(format!(
                    "min.compaction.lag.ms={}",
                    log.min_compaction_lag_ms
                ));
            }
            if log.delete_retention_ms != kafka.delete_retention_ms {
                configs.push(format!("delete.retention.ms={}", log.delete_retention_ms));
            }
        }
        if first.unclean_leader_election {
            configs.push("unclean.leader.election.enable=true".to_string());
        }
        out += &format!(
            "Topic: {name}\tTopicId: {}\tPartitionCount: {}\tReplicationFactor: {replication_factor}\tConfigs: {}\n",
            topic_id(&s.scenario, name),
            partition_count,
            configs.join(",")
        );
        for p in partitions {
            let ids = |list: &[u32]| {
                list.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let leader = p
                .leader
                .map_or_else(|| "none".to_string(), |l| l.to_string());
            out += &format!(
                "\tTopic: {name}\tPartition: {}\tLeader: {leader}\tReplicas: {}\tIsr: {}",
                p.index,
                ids(&p.assignment),
                ids(&p.isr)
            );
            if let Some((adding, removing)) = &p.reassigning {
                out += &format!(
                    "\tAdding Replicas: {}\tRemoving Replicas: {}",
                    ids(adding),
                    ids(removing)
                );
            }
            // Kafka 4.0 answers DescribeTopicPartitions with both lists, empty while eligible
            // leader replicas are off; the model keeps no last-known ELR (docs/model.md).
            out += &format!("\tElr: {}\tLastKnownElr: \n", ids(&p.elr));
        }
    }
    Ok(out)
}

/// `kafka-consumer-groups.sh --describe --group NAME [--members | --state]`.
pub fn describe_group(s: &Snapshot, name: &str, table: GroupTable) -> ToolOutput {
    let Some(g) = s.group(name) else {
        // Kafka 4.0's answer for a group id no coordinator knows (`GroupIdNotFoundException`).
        return ToolOutput {
            stdout: format!(
                "\nError: Executing consumer group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: Group {name} not found.\n"
            ),
            stderr: String::new(),
        };
    };
    if g.coordinator.is_none() {
        // The group's `__consumer_offsets` partition has no leader: no coordinator answers.
        return ToolOutput {
            stdout: "\nError: Executing consumer group command failed due to org.apache.kafka.common.errors.CoordinatorNotAvailableException: The coordinator is not available.\n".into(),
            stderr: String::new(),
        };
    }
    match table {
        GroupTable::Offsets => offsets(s, g),
        GroupTable::Members => members(g),
        GroupTable::State => state(g),
    }
}

/// `ConsumerGroupService.shouldPrintMemberState`: the warning a state gets on stderr.
fn state_warning(g: &GroupView) -> String {
    match g.state {
        "Empty" => format!("\nConsumer group '{}' has no active members.\n", g.name),
        "PreparingRebalance" | "CompletingRebalance" | "Assigning" | "Reconciling" => {
            format!("\nWarning: Consumer group '{}' is rebalancing.\n", g.name)
        }
        _ => String::new(),
    }
}

/// A member's client id: the consumer's default, `consumer-<group.id>-<n>`
/// (`ConsumerConfig`'s client id sequence).
fn client_id(member_id: &str) -> String {
    format!("consumer-{member_id}")
}

/// A member's id as its coordinator gave it: a classic member's is its client id and a UUID
/// (`ClassicGroup.generateMemberId`), a consumer-protocol member's a 22-character UUID
/// (`Uuid.randomUuid().toString()`, the client's own). Made from the names here.
fn consumer_id(g: &GroupView, member_id: &str) -> String {
    let bytes = id_bytes(&[&g.name, member_id]);
    if g.protocol == "consumer" {
        return base64url(&bytes);
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}-{}",
        client_id(member_id),
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The host a member connects from: `/10.0.1.N` for the model's consumer N.
fn host(g: &GroupView, member_id: &str) -> String {
    let node = g
        .members
        .iter()
        .find(|m| m.name == member_id)
        .map_or(0, |m| m.node);
    format!("/10.0.1.{}", node + 1)
}

/// `printf`'s `%-Ns`: left-justified in at least `width` columns.
fn pad(text: &str, width: usize) -> String {
    format!("{text:<width$}")
}

/// A `printf` row of `%-Ns` columns, one space apart: each text with its width.
fn columns(cells: &[(&str, usize)]) -> String {
    cells
        .iter()
        .map(|(text, width)| pad(text, *width))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One row of the offsets table, before its widths are known.
struct OffsetLine {
    topic: String,
    partition: String,
    current: String,
    end: String,
    lag: String,
    consumer_id: String,
    host: String,
    client_id: String,
}

/// `printOffsets`: members with partitions first, most partitions first (a stable sort of the
/// coordinator's order, `collectGroupOffsets`), then committed partitions no member has.
fn offsets(s: &Snapshot, g: &GroupView) -> ToolOutput {
    let dash = || "-".to_string();
    let row = |ordinal: u32, member: Option<&str>| {
        let p = s.partitions.get(ordinal as usize);
        let o = g.offsets.iter().find(|o| o.ordinal == ordinal);
        let committed = o.and_then(|o| o.committed);
        // `Admin.listOffsets(latest)`, read_uncommitted: the high watermark, from the leader.
        let end = p
            .filter(|p| p.leader.is_some())
            .and(o.map(|o| o.high_watermark));
        OffsetLine {
            topic: p.map_or_else(dash, |p| p.topic.clone()),
            partition: p.map_or_else(dash, |p| p.index.to_string()),
            current: or_dash(committed),
            end: or_dash(end),
            lag: or_dash(committed.zip(end).map(|(c, e)| e.saturating_sub(c))),
            consumer_id: member.map_or_else(dash, |m| consumer_id(g, m)),
            host: member.map_or_else(dash, |m| host(g, m)),
            client_id: member.map_or_else(dash, client_id),
        }
    };
    let mut by_size: Vec<_> = g
        .described
        .iter()
        .filter(|m| !m.assigned.is_empty())
        .collect();
    by_size.sort_by_key(|m| std::cmp::Reverse(m.assigned.len()));
    let mut lines = Vec::new();
    for m in &by_size {
        let mut assigned = m.assigned.clone();
        assigned.sort_by_key(|o| {
            s.partitions
                .get(*o as usize)
                .map(|p| (p.topic.clone(), p.index))
        });
        for o in assigned {
            lines.push(row(o, Some(&m.member_id)));
        }
    }
    let owned: Vec<u32> = by_size
        .iter()
        .flat_map(|m| m.assigned.iter().copied())
        .collect();
    for o in &g.offsets {
        if o.committed.is_some() && !owned.contains(&o.ordinal) {
            lines.push(row(o.ordinal, None));
        }
    }
    let stderr = state_warning(g);
    if lines.is_empty() {
        return ToolOutput {
            stdout: String::new(),
            stderr,
        };
    }
    // `printOffsetFormat`: the variable columns are at least 15 wide.
    let width = |f: &dyn Fn(&OffsetLine) -> usize| lines.iter().map(f).max().unwrap_or(0).max(15);
    let wg = g.name.len().max(15);
    let wt = width(&|l| l.topic.len());
    let wc = width(&|l| l.consumer_id.len());
    let wh = width(&|l| l.host.len());
    let format = |c: [&str; 9]| {
        let padded = columns(&[
            (c[0], wg),
            (c[1], wt),
            (c[2], 10),
            (c[3], 15),
            (c[4], 15),
            (c[5], 15),
            (c[6], wc),
            (c[7], wh),
        ]);
        format!("\n{padded} {}", c[8])
    };
    let mut stdout = format([
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]);
    for l in &lines {
        stdout += &format([
            &g.name,
            &l.topic,
            &l.partition,
            &l.current,
            &l.end,
            &l.lag,
            &l.consumer_id,
            &l.host,
            &l.client_id,
        ]);
    }
    stdout.push('\n');
    ToolOutput { stdout, stderr }
}

/// `printMembers`: the header always, then every member the coordinator has, with its
/// partition count; a GROUP-INSTANCE-ID column when some member is static.
fn members(g: &GroupView) -> ToolOutput {
    let rows: Vec<[String; 5]> = g
        .described
        .iter()
        .map(|m| {
            [
                consumer_id(g, &m.member_id),
                m.instance_id.clone().unwrap_or_default(),
                host(g, &m.member_id),
                client_id(&m.member_id),
                m.assigned.len().to_string(),
            ]
        })
        .collect();
    let widest = |i: usize, least: usize| {
        rows.iter()
            .map(|r| r[i].len())
            .max()
            .unwrap_or(0)
            .max(least)
    };
    let static_members = rows.iter().any(|r| !r[1].is_empty());
    let (wg, wc, wi, wh, wcl) = (
        g.name.len().max(15),
        widest(0, 15),
        widest(1, 17),
        widest(2, 15),
        widest(3, 15),
    );
    let line = |group: &str, r: [&str; 5]| {
        let mut cells = vec![(group, wg), (r[0], wc)];
        if static_members {
            cells.push((r[1], wi));
        }
        cells.extend([(r[2], wh), (r[3], wcl), (r[4], 15)]);
        // `%-15s ` after #PARTITIONS: each line ends in a space.
        columns(&cells) + " "
    };
    let mut stdout = format!(
        "\n{}\n",
        line(
            "GROUP",
            [
                "CONSUMER-ID",
                "GROUP-INSTANCE-ID",
                "HOST",
                "CLIENT-ID",
                "#PARTITIONS"
            ]
        )
    );
    for r in &rows {
        stdout += &line(&g.name, [&r[0], &r[1], &r[2], &r[3], &r[4]]);
        stdout.push('\n');
    }
    ToolOutput {
        stdout,
        stderr: state_warning(g),
    }
}

/// `printStates`: the group, its coordinator, assignment strategy, state and member count.
fn state(g: &GroupView) -> ToolOutput {
    let b = g.coordinator.unwrap_or(0);
    let coordinator = format!("broker-{b}:9092  ({b})");
    // A classic group has no protocol chosen while it is Empty.
    let strategy = if g.protocol == "classic" && g.state == "Empty" {
        "-"
    } else {
        g.assignor
    };
    let (wg, wco) = (g.name.len().max(15), coordinator.len().max(25));
    let line = |c: [&str; 5]| {
        let padded = columns(&[(c[0], wg), (c[1], wco), (c[2], 20), (c[3], 20)]);
        format!("\n{padded} {}", c[4])
    };
    let members = g.described.len().to_string();
    let stdout = line([
        "GROUP",
        "COORDINATOR (ID)",
        "ASSIGNMENT-STRATEGY",
        "STATE",
        "#MEMBERS",
    ]) + &line([&g.name, &coordinator, strategy, g.state, &members])
        + "\n";
    ToolOutput {
        stdout,
        stderr: state_warning(g),
    }
}

/// A topic's id: Kafka draws a random UUID when the topic is made; here it is made from the
/// scenario's and the topic's names, so every run prints the same. Printed as Kafka's
/// `Uuid.toString` does (URL-safe base64 of its 16 bytes, unpadded).
pub fn topic_id(scenario: &str, topic: &str) -> String {
    base64url(&id_bytes(&[scenario, topic]))
}

/// 16 bytes from names: two FNV-1a hashes, the second seeded differently, each mixed by
/// SplitMix64's finaliser so that names alike give ids unalike.
fn id_bytes(parts: &[&str]) -> [u8; 16] {
    let hash = |seed: u64| {
        let mut h = seed;
        for part in parts {
            for b in part.bytes().chain([0]) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x100_0000_01b3);
            }
        }
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^ (h >> 31)
    };
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&hash(0xcbf2_9ce4_8422_2325).to_be_bytes());
    bytes[8..].copy_from_slice(&hash(0x6c62_272e_07bb_0142).to_be_bytes());
    bytes
}

/// URL-safe base64 without padding (`Base64.getUrlEncoder().withoutPadding()`).
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_as_kafkas_uuids_do() {
        // `Uuid.toString` of the UUID 0x0000...0001: 21 'A's and a 'Q'.
        let mut one = [0u8; 16];
        one[15] = 1;
        assert_eq!(base64url(&one), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(base64url(b"Man"), "TWFu");
        assert_eq!(base64url(b"Ma"), "TWE");
        assert_eq!(topic_id("quickstart", "orders").len(), 22);
        assert_ne!(
            topic_id("quickstart", "orders"),
            topic_id("quickstart", "orders2")
        );
    }

    #[test]
    fn printf_pads_and_never_cuts() {
        assert_eq!(pad("GROUP", 8), "GROUP   ");
        assert_eq!(pad("a-long-group-name", 4), "a-long-group-name");
    }
}
