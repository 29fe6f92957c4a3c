//! The command line, run as a person runs it.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn kafkascope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kafkascope"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn run_prints_the_json_report() {
    let out = kafkascope(&["run", "isr-shrink", "--until-ms", "50000", "--seed", "9"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["scenario"], "ISR shrink");
    assert_eq!(report["seed"], 9);
    assert_eq!(report["sim_time_ms"], 50000);
    let p = &report["partitions"][0];
    for field in [
        "topic",
        "partition",
        "leader",
        "leader_epoch",
        "isr",
        "high_watermark",
        "log_end_offset",
    ] {
        assert!(!p[field].is_null(), "partition field {field}");
    }
    assert_eq!(p["replicas"][2]["broker"], 3);
    assert!(p["replicas"][0]["log_end_offset"].is_u64());
    let producer = &report["producers"][0];
    for field in ["name", "sent", "acked", "failed", "errors"] {
        assert!(!producer[field].is_null(), "producer field {field}");
    }
    assert_eq!(report["metrics"]["isr_shrinks"], 1);
    let shrink = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "IsrShrink")
        .expect("an IsrShrink event");
    assert_eq!(shrink["topic"], "orders");
    assert_eq!(shrink["isr"], serde_json::json!([1, 2]));
    assert!(shrink["at_ms"].is_u64());
    assert!(
        report["invariant_violations"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn the_summary_reads_quickstart() {
    let out = kafkascope(&["run", "quickstart", "--summary"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("quickstart"), "{text}");
    assert!(text.contains("orders-0"));
    assert!(text.contains("producer checkout (acks=all, idempotent)"));
}

#[test]
fn without_a_display_the_window_says_so() {
    for args in [
        &[][..],
        &["view", "quickstart"],
        &["tour"],
        &["tour", "walkthrough", "--beat", "3", "--talk"],
        &["shot", "quickstart", "--at-ms", "5", "--out", "x.png"],
        &["shot", "walkthrough", "--beat", "2", "--out", "x.png"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_kafkascope"))
            .args(args)
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .output()
            .expect("the binary runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("no display"), "{}", stderr(&out));
    }
}

#[test]
fn window_flags_are_checked_before_any_window_opens() {
    for (args, says) in [
        ("shot quickstart --at-ms 5 --out x.jpg", "must end in .png"),
        (
            "shot quickstart --at-ms 5 --out /nonexistent/x.png",
            "no folder",
        ),
        (
            "shot quickstart --at-ms 5 --out x.png --places /nonexistent/x.json",
            "--places /nonexistent/x.json: no folder",
        ),
        (
            "shot quickstart --at-ms 999999999 --out x.png",
            "past the end",
        ),
        (
            "shot quickstart --at-ms 5 --out x.png --size 10x10",
            "200 to 8192",
        ),
        (
            "shot quickstart --at-ms 5 --out x.png --theme pink",
            "dark or light",
        ),
        ("view quickstart --speed 1000", "0.001 to 100"),
        ("view no-such-scenario", "no-such-scenario"),
        ("tour no-such-tour", "no built-in tour of that name"),
        (
            "tour walkthrough --beat 0",
            "--beat 0: tour \"walkthrough\" has beats 1 to 8",
        ),
        ("tour walkthrough --beat 9", "has beats 1 to 8"),
        ("shot walkthrough --beat 12 --out x.png", "--beat 12"),
        ("shot walkthrough --out x.png", "--at-ms"),
        (
            "shot walkthrough --beat 1 --at-ms 5 --out x.png",
            "cannot be used with",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_kafkascope"))
            .args(args.split(' '))
            .env("DISPLAY", ":4242")
            .output()
            .expect("the binary runs");
        assert_eq!(out.status.code(), Some(2), "{args}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args}: {}", stderr(&out));
    }
}

#[test]
fn tour_json_prints_the_beats() {
    let out = kafkascope(&["tour", "walkthrough", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(json["name"], "walkthrough");
    assert_eq!(json["scenario"], "walkthrough");
    let beats = json["beats"].as_array().unwrap();
    assert_eq!(beats.len(), 8);
    assert_eq!(beats[0]["n"], 1);
    assert_eq!(beats[0]["component"], "producer");
    assert_eq!(beats[7]["component"], "lag_monitor");
    for b in beats {
        let keys: Vec<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "component",
                "from_ms",
                "holds_ms",
                "n",
                "notes",
                "speed",
                "title",
                "to_ms"
            ]
        );
        assert!(b["from_ms"].as_u64() < b["to_ms"].as_u64());
        for hold in b["holds_ms"].as_array().unwrap() {
            assert!(hold.as_u64() > b["from_ms"].as_u64() && hold.as_u64() <= b["to_ms"].as_u64());
        }
    }
    assert_eq!(
        beats[3]["holds_ms"].as_array().unwrap().len(),
        1,
        "the ISR shrink"
    );
    assert_eq!(
        json["follow"],
        serde_json::json!({"key": "user-7", "topic": "orders", "partition": 2, "offset": 4})
    );
    // The default tour is the walkthrough, and --json needs no display.
    let out = Command::new(env!("CARGO_BIN_EXE_kafkascope"))
        .args(["tour", "--json"])
        .env_remove("DISPLAY")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("\"name\": \"walkthrough\""));
}

#[test]
fn list_names_the_built_in_scenarios() {
    let out = kafkascope(&["list"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.lines().next().unwrap().starts_with("quickstart"));
    for b in kafkascope::scenario::BUILT_IN {
        assert!(text.contains(b.name));
    }
    // Every description starts in the same column, whatever the names' lengths.
    let starts: Vec<usize> = text
        .lines()
        .map(|l| {
            let name = l.split_whitespace().next().unwrap();
            name.len() + l[name.len()..].chars().take_while(|c| *c == ' ').count()
        })
        .collect();
    assert!(
        starts.windows(2).all(|w| w[0] == w[1]),
        "descriptions start at columns {starts:?}"
    );
}

#[test]
fn partition_agrees_with_the_library_for_any_utf8_key() {
    let keys = [
        "21",
        "foobar",
        "abc",
        "",
        "ünïcödé",
        "键",
        "🦀 crab",
        "tab\tin",
        "a b c",
    ];
    let expected: Vec<String> = keys
        .iter()
        .map(|k| kafkascope::partitioner::partition_for_key(k.as_bytes(), 12).to_string())
        .collect();

    let mut args = vec!["partition", "--partitions", "12", "--"];
    args.extend(keys);
    let out = kafkascope(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), expected);

    // The same keys, one a line on stdin.
    let mut child = Command::new(env!("CARGO_BIN_EXE_kafkascope"))
        .args(["partition", "--partitions", "12"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{}\n", keys.join("\n")).as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), expected);

    // Kafka's vectors for 12 partitions.
    let out = kafkascope(&[
        "partition",
        "--partitions",
        "12",
        "foobar",
        "a-little-bit-longer-string",
    ]);
    assert_eq!(stdout(&out), "6\n11\n");
}

/// Runs `kafkascope partition --partitions 3` with `input` on stdin.
fn partition_stdin(input: &[u8]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kafkascope"))
        .args(["partition", "--partitions", "3"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The command may stop reading early: a broken pipe here is expected.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn partition_refuses_an_endless_or_broken_key_line() {
    let out = partition_stdin(&vec![b'0'; 17 * 1024 * 1024]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("stdin line 1: a key longer than"),
        "{}",
        stderr(&out)
    );

    let out = partition_stdin(b"ok\n\xff\n");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stdout(&out).lines().count(),
        1,
        "the good line is answered first"
    );
    assert!(
        stderr(&out).contains("stdin line 2: the key is not UTF-8"),
        "{}",
        stderr(&out)
    );

    // A last line without a newline is a key like any other.
    let out = partition_stdin(b"foobar\nfoobar");
    assert!(out.status.success());
    assert_eq!(stdout(&out).lines().count(), 2);
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let dir = std::env::temp_dir().join(format!("kafkascope-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("broken.ron");
    std::fs::write(&bad, "(\n  name: \"b\",\n  duration_ms: -5,\n)").unwrap();
    let path = bad.to_str().unwrap();
    let out = kafkascope(&["run", path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!("{path}:3:")),
        "{}",
        stderr(&out)
    );

    let impossible = dir.join("impossible.ron");
    std::fs::write(
        &impossible,
        r#"(name: "i", cluster: (brokers: 1), topics: [(name: "t", replication_factor: 2)])"#,
    )
    .unwrap();
    let out = kafkascope(&["run", impossible.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("topics[0].replication_factor"),
        "{}",
        stderr(&out)
    );

    // A path that exists but is no scenario file says so.
    let out = kafkascope(&["run", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is a folder"), "{}", stderr(&out));

    for args in [
        &["run", "no-such-scenario"][..],
        &["run", "quickstart", "--until-ms", "soon"],
        &["partition", "--partitions", "0", "k"],
        &["frobnicate"],
    ] {
        let out = kafkascope(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).is_empty());
        assert!(!stderr(&out).contains("panicked"), "{args:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bench_prints_speed_messages_and_memory() {
    let out = kafkascope(&["bench", "throughput", "--sim-seconds", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("throughput: 2 simulated s in "), "{text}");
    // Every millisecond of this load is stepped, with two or three messages arriving at each.
    assert!(
        text.contains("2000 steps (100% of the milliseconds)"),
        "{text}"
    );
    let memory = text
        .lines()
        .find(|l| l.contains("messages sent a step"))
        .expect("a line of messages and memory");
    let number_before = |label: &str| -> f64 {
        memory
            .split(label)
            .next()
            .and_then(|head| head.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{label:?} in {memory}"))
    };
    assert!(
        (2.0..2.6).contains(&number_before(" messages sent a step")),
        "{memory}"
    );
    // One checkpoint at 0 ms, and the next at 2.5 s (1000 records/s).
    assert_eq!(number_before(" checkpoints ("), 1.0, "{memory}");
    let peak = memory
        .split("peak memory ")
        .nth(1)
        .and_then(|m| m.strip_suffix(" MB"))
        .and_then(|n| n.parse::<f64>().ok())
        .expect("the peak memory in MB on Linux");
    assert!((1.0..10_000.0).contains(&peak), "{memory}");
    assert!(text.contains("seeking to 20 instants"), "{text}");
}

#[test]
fn assign_command_prints_kafkas_assignment() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kafkascope"))
        .args([
            "assign",
            "--assignor",
            "range",
            "--topic",
            "t1:3",
            "--topic",
            "t2:2",
            "--member",
            "c1=t1",
            "--member",
            "c2=t1,t2",
            "--member",
            "c3=t1",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed,
        serde_json::json!({"c1": ["t1-0"], "c2": ["t1-1", "t2-0", "t2-1"], "c3": ["t1-2"]})
    );
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_kafkascope"))
        .args([
            "assign",
            "--assignor",
            "range",
            "--topic",
            "t1:3",
            "--member",
            "c1=nope",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn tour_check_passes_a_kept_contract_and_names_a_broken_one() {
    let out = kafkascope(&["tour", "walkthrough", "--check"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("every beat shows what it says"));
    // Beat 2 cut 1 ms later shows the followers' copies, which beat 3 is about.
    let dir = std::env::temp_dir().join(format!("kafkascope-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = include_str!("../../scenarios/tours/walkthrough.ron")
        .replacen("to_ms: 2673,", "to_ms: 2674,", 1)
        .replacen("from_ms: 2673,", "from_ms: 2674,", 1);
    let file = dir.join("late.ron");
    std::fs::write(&file, source).unwrap();
    let out = kafkascope(&["tour", file.to_str().unwrap(), "--check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("beat 2: says Fetched(Followers"), "{said}");
    assert!(said.contains("beat 3: shows Fetched(Followers"), "{said}");
}

/// `kafkascope describe` prints what Kafka's tools print at the instant, exactly as the
/// Terminal panel shows it; a topic or group it lacks, or no tool named, is exit status 2.
#[test]
fn describe_prints_kafkas_tools_at_an_instant() {
    let scenario = crate::built_in("quickstart");
    let mut sim = kafkascope::sim::Sim::new(&scenario);
    sim.run_until(30_000);
    let s = kafkascope::view::snapshot::Snapshot::of(sim.world_mut());
    use kafkascope::view::kafka_tools::{GroupTable, describe_group, describe_topics};

    let out = kafkascope(&["describe", "quickstart", "--at-ms", "30000", "--topics"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), describe_topics(&s, None).unwrap());
    for (flag, table) in [
        (None, GroupTable::Offsets),
        (Some("--members"), GroupTable::Members),
        (Some("--state"), GroupTable::State),
    ] {
        let mut args = vec![
            "describe",
            "quickstart",
            "--at-ms",
            "30000",
            "--group",
            "fulfilment",
        ];
        args.extend(flag);
        let out = kafkascope(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let expected = describe_group(&s, "fulfilment", table);
        assert_eq!(stdout(&out), expected.stdout);
        assert_eq!(stderr(&out), expected.stderr);
    }
    for (args, says) in [
        (
            vec!["--topic", "nope"],
            "Topic 'Optional[nope]' does not exist",
        ),
        (vec!["--group", "nope"], "no consumer group named \"nope\""),
        (vec![], "--topics"),
        (vec!["--topics", "--members"], "--group"),
    ] {
        let mut all = vec!["describe", "quickstart"];
        all.extend(args);
        let out = kafkascope(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        assert!(
            stderr(&out).contains(says) || stdout(&out).contains(says),
            "{all:?}: {}",
            stderr(&out)
        );
    }
}
