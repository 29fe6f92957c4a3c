//! The command line: run a scenario headless, ask the partitioner, list scenarios, benchmark.

use std::fmt::Write as _;
use std::io::{BufRead, Read, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::app::options;
use crate::partitioner::partition_for_key;
use crate::report::Report;
use crate::scenario::{BUILT_IN, Scenario};
use crate::sim::Sim;

#[derive(Parser, Debug)]
#[command(
    name = "kafkascope",
    version,
    about = "Apache Kafka's production lifecycle as a living, deterministic simulation",
    long_about = "Apache Kafka's production lifecycle as a living, deterministic simulation.\n\n\
                  Without a command, opens the window on the guided walkthrough."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// How the window opens.
#[derive(clap::Args, Debug, Clone)]
struct Look {
    /// Window size in logical pixels, WIDTHxHEIGHT.
    #[arg(long, value_name = "WIDTHxHEIGHT", value_parser = parse_size, default_value = "1600x900")]
    size: (u32, u32),
    #[command(flatten)]
    style: Style,
}

/// How the scene looks, whatever its size.
#[derive(clap::Args, Debug, Clone)]
struct Style {
    /// Colour theme: dark for screens, light for projectors.
    #[arg(long, value_parser = options::parse_theme, default_value = "dark")]
    theme: crate::view::palette::Theme,
    /// Multiplies every text size (0.75 to 2).
    #[arg(long, default_value_t = 1.0, value_parser = options::parse_text_scale)]
    text_scale: f32,
    /// The talk preset: the light theme, text 1.5 times larger, and no panels but the narration
    /// and the lag monitor (P toggles it in the window).
    #[arg(long)]
    talk: bool,
}

impl Default for Look {
    /// The flags' defaults.
    fn default() -> Self {
        Look {
            size: (1600, 900),
            style: Style {
                theme: crate::view::palette::Theme::Dark,
                text_scale: 1.0,
                talk: false,
            },
        }
    }
}

impl Look {
    fn apply(&self, options: &mut crate::app::Options) {
        options.size = self.size;
        self.style.apply(options);
    }
}

impl Style {
    fn apply(&self, options: &mut crate::app::Options) {
        options.theme = self.theme;
        options.text_scale = self.text_scale;
        options.talk = self.talk;
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario headless and print its JSON report on stdout.
    Run {
        /// A scenario file (.ron) or the name of a built-in scenario (see `kafkascope list`).
        scenario: String,
        /// Stop at this sim time instead of the scenario's duration_ms.
        #[arg(long, value_name = "MS")]
        until_ms: Option<u64>,
        /// Seed the run with this instead of the scenario's seed.
        #[arg(long, value_name = "S")]
        seed: Option<u64>,
        /// Print a readable summary instead of JSON.
        #[arg(long)]
        summary: bool,
    },
    /// Print the partition Kafka's producer picks for each key, one a line (keys are read from
    /// stdin, one a line, when none are given).
    Partition {
        /// The topic's partition count.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        partitions: u32,
        keys: Vec<String>,
    },
    /// Print the assignment a Kafka assignor computes, as JSON {member: ["topic-partition", ...]}.
    Assign {
        /// range, roundrobin, sticky or cooperative-sticky.
        #[arg(long, value_parser = parse_assignor)]
        assignor: crate::assignor::Assignor,
        /// A topic and its partition count, NAME:PARTITIONS (repeat for more topics).
        #[arg(long = "topic", value_name = "NAME:PARTITIONS", value_parser = parse_topic, required = true)]
        topics: Vec<(String, u32)>,
        /// A member and its subscription, ID=TOPIC[,TOPIC...] (repeat for more members).
        #[arg(long = "member", value_name = "ID=TOPICS", value_parser = parse_member, required = true)]
        members: Vec<(String, Vec<String>)>,
    },
    /// Open the window on a tour: the guided walkthrough unless another is named.
    Tour {
        /// A tour file (.ron) or a built-in tour's name.
        #[arg(default_value = "walkthrough")]
        name: String,
        /// Open at this beat (from 1), paused at its start.
        #[arg(long, value_name = "N")]
        beat: Option<usize>,
        /// Print the tour's beats as JSON instead of opening the window.
        #[arg(long)]
        json: bool,
        /// Print a lab's closing table (Kafka's metrics of each run, was → now), counted
        /// headless, instead of opening the window.
        #[arg(long, conflicts_with = "json")]
        table: bool,
        /// Check every beat's contract (what it shows, what has not happened yet) against the
        /// run, headless, instead of opening the window.
        #[arg(long, conflicts_with_all = ["json", "table"])]
        check: bool,
        /// Open the presenter view beside the stage: the beat's notes, the next beat, the time
        /// (S opens and closes it in the window).
        #[arg(long, conflicts_with_all = ["json", "table", "check"])]
        presenter: bool,
        /// The talk's length, for the presenter view's countdown.
        #[arg(long, value_name = "MINUTES", value_parser = clap::value_parser!(u32).range(1..=600))]
        minutes: Option<u32>,
        #[command(flatten)]
        look: Look,
    },
    /// Print what Kafka's own tools print for the cluster at an instant of a scenario's run:
    /// `kafka-topics.sh --describe` (--topics) or `kafka-consumer-groups.sh --describe`
    /// (--group), in Kafka 4.0's formats.
    #[command(group(clap::ArgGroup::new("tool").required(true).args(["topics", "topic", "group"])))]
    Describe {
        /// A scenario file (.ron) or the name of a built-in scenario.
        scenario: String,
        /// The instant, in sim time (by default the scenario's end).
        #[arg(long, value_name = "MS")]
        at_ms: Option<u64>,
        /// Every topic, as `kafka-topics.sh --describe`.
        #[arg(long)]
        topics: bool,
        /// One topic, as `kafka-topics.sh --describe --topic NAME`.
        #[arg(long, value_name = "NAME", conflicts_with = "group")]
        topic: Option<String>,
        /// A consumer group, as `kafka-consumer-groups.sh --describe --group NAME`.
        #[arg(long, value_name = "NAME", conflicts_with = "topics")]
        group: Option<String>,
        /// The group's members (`--members`).
        #[arg(long, conflicts_with_all = ["state", "topics", "topic"])]
        members: bool,
        /// The group's state (`--state`).
        #[arg(long, conflicts_with_all = ["topics", "topic"])]
        state: bool,
    },
    /// Open the window on a scenario, the sandbox (by default quickstart).
    View {
        /// A scenario file (.ron) or the name of a built-in scenario.
        #[arg(default_value = "quickstart")]
        scenario: String,
        /// Open at this sim time.
        #[arg(long, value_name = "MS", default_value_t = 0)]
        at_ms: u64,
        /// Sim time per real time, 0.001 to 100.
        #[arg(long, default_value_t = crate::app::Options::DEFAULT_SPEED, value_parser = options::parse_speed)]
        speed: f64,
        /// Open paused.
        #[arg(long)]
        paused: bool,
        #[command(flatten)]
        look: Look,
    },
    /// Render the scene at a sim time, or a tour's beat as it ends, into a PNG file, then exit.
    Shot {
        /// A scenario file (.ron) or the name of a built-in scenario; with --beat, a tour's.
        scenario: String,
        /// The sim time to show.
        #[arg(
            long,
            value_name = "MS",
            required_unless_present_any = ["beat", "end"],
            conflicts_with_all = ["beat", "end"]
        )]
        at_ms: Option<u64>,
        /// The beat (from 1) of a tour to show, at its end, with its narration and focus.
        #[arg(long, value_name = "N", conflicts_with = "end")]
        beat: Option<usize>,
        /// A tour's end, past its last beat: a lab's table, and the ways out.
        #[arg(long)]
        end: bool,
        /// The PNG file to write.
        #[arg(long, value_name = "FILE.png")]
        out: std::path::PathBuf,
        /// Also write where the scene drew its cells, bars, messages and texts, in the
        /// picture's pixels, to this JSON file (what the render tests measure).
        #[arg(long, value_name = "FILE.json")]
        places: Option<std::path::PathBuf>,
        /// Click here first, as a reader would (logical pixels from the window's top left):
        /// a broker's box opens its menu.
        #[arg(long, value_name = "X,Y", value_parser = parse_point)]
        click: Option<(f32, f32)>,
        /// Open the Terminal panel on this command, as its list names it (for example
        /// "kafka-consumer-groups.sh --describe --group fulfilment").
        #[arg(long, value_name = "COMMAND")]
        terminal: Option<String>,
        /// Press these keys first, as a speaker's clicker would, each once the playback rests
        /// (a beat ended or held): for example Right,Right,Left or 3,Enter. The picture is of
        /// where they lead.
        #[arg(long, value_name = "KEY,...", value_parser = parse_keys)]
        keys: Option<Keys>,
        /// With a tour: the presenter view opens beside the stage (--places then has its
        /// texts too).
        #[arg(long)]
        presenter: bool,
        #[command(flatten)]
        look: Look,
    },
    /// Render a tour's beats as PNG frames (one per 1/fps of each beat's wall time at its speed),
    /// the same bytes on every run; --gif and --mp4 make clips of them.
    #[cfg(not(target_arch = "wasm32"))]
    Render(RenderArgs),
    /// Measure the CPU time per frame of the app's own systems (model, scene, overlay), in a
    /// window, at real-time speed or the one given.
    BenchFrames {
        /// Scenarios to measure (files or built-in names); `tour:NAME` measures a tour, from its
        /// fastest beat on, going to the next beat as each ends.
        #[arg(default_values_t = ["quickstart".to_string(), "tour:walkthrough".to_string(), "large".to_string()])]
        scenarios: Vec<String>,
        /// Frames to measure in each.
        #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(10..=100_000))]
        frames: u64,
        /// Start this far into the scenario, in sim ms (by default just before `large` loses a
        /// broker, so the frames measured include the elections).
        #[arg(long, value_name = "MS", default_value_t = 58_000)]
        at_ms: u64,
        /// Sim seconds per wall second for scenarios (a tour plays at its beat's speed): 100
        /// measures the fastest the window plays.
        #[arg(long, default_value_t = 1.0, value_parser = options::parse_speed)]
        speed: f64,
    },
    /// List the built-in scenarios.
    List,
    /// Measure how many simulated seconds the model runs per wall-clock second.
    Bench {
        /// Scenario to run (file or built-in name).
        #[arg(default_value = "throughput")]
        scenario: String,
        /// Simulated seconds to run.
        #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        sim_seconds: u64,
        /// Run as the sandbox plays on past the scenario's end: until --sim-seconds, or until the
        /// run's records or its checkpoints fill the memory a run may take, whichever comes first.
        #[arg(long)]
        open_ended: bool,
        /// A soak: open-ended, printing the process's peak memory every simulated 10 minutes.
        #[arg(long)]
        soak: bool,
    },
}

#[cfg(not(target_arch = "wasm32"))]
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["beat", "all"])))]
struct RenderArgs {
    /// A tour file (.ron) or a built-in tour's name.
    tour: String,
    /// The beat (from 1) to render.
    #[arg(long, value_name = "N")]
    beat: Option<usize>,
    /// Every beat, each in its own folder, and a still of each at its end (beat-NN.png).
    #[arg(long)]
    all: bool,
    /// Frames per second of wall time.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=120))]
    fps: u32,
    /// Frame size in pixels, WIDTHxHEIGHT (the projector's).
    #[arg(long, value_name = "WIDTHxHEIGHT", value_parser = parse_size, default_value = "1920x1080")]
    size: (u32, u32),
    #[command(flatten)]
    style: Style,
    /// Seconds of frames to add where a beat holds (by default a hold adds none).
    #[arg(long, value_name = "S", default_value_t = 0.0, value_parser = parse_hold_s)]
    hold_s: f64,
    /// Also write each beat's frames as an animated GIF (beat-NN.gif).
    #[arg(long)]
    gif: bool,
    /// Also write each beat's frames as an H.264 MP4 (beat-NN.mp4) with ffmpeg.
    #[arg(long)]
    mp4: bool,
    /// The folder to write into (made if missing); a beat's earlier frames there are replaced.
    #[arg(long, value_name = "DIR")]
    out: std::path::PathBuf,
}

/// `shot --keys`: one value, the keys in order.
#[derive(Debug, Clone)]
struct Keys(Vec<bevy::input::keyboard::KeyCode>);

fn parse_keys(s: &str) -> Result<Keys, String> {
    options::parse_keys(s).map(Keys)
}

#[cfg(not(target_arch = "wasm32"))]
fn parse_hold_s(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| (0.0..=60.0).contains(v))
        .ok_or_else(|| "expected seconds from 0 to 60".to_string())
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| "expected WIDTHxHEIGHT, for example 1600x900".to_string())?;
    let px = |v: &str| {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|v| (200..=8192).contains(v))
            .ok_or_else(|| format!("{v:?} is not a size from 200 to 8192 pixels"))
    };
    Ok((px(w)?, px(h)?))
}

/// The window needs a display; without one, say so instead of failing inside the windowing
/// library.
fn check_display() -> Result<(), String> {
    #[cfg(all(unix, not(target_os = "macos"), not(target_arch = "wasm32")))]
    if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
        return Err("no display to open a window on (DISPLAY is not set); \
                    `kafkascope run quickstart --summary` runs without one"
            .to_string());
    }
    Ok(())
}

fn app_options(scenario: Scenario, at_ms: u64, look: &Look) -> Result<crate::app::Options, String> {
    let mut options =
        crate::app::Options::at(scenario, at_ms).map_err(|e| format!("--at-ms {e}"))?;
    look.apply(&mut options);
    Ok(options)
}

/// What `bench-frames` opens for a name, and what it calls it: `tour:NAME`, playing the tour's
/// fastest beat (the most sim time a frame), or a scenario from `at_ms` (at most 10 s before
/// its end).
/// How often a soak prints its memory, in simulated time.
const SOAK_EVERY_MS: u64 = 600_000;

fn bench_options(name: &str, at_ms: u64) -> Result<(String, crate::app::Options), String> {
    if let Some(tour) = name.strip_prefix("tour:") {
        let (tour, scenario, _) = load_tour(tour, None)?;
        let fastest = (0..tour.beats.len())
            .max_by(|a, b| tour.beats[*a].speed.total_cmp(&tour.beats[*b].speed))
            .unwrap_or(0);
        let title = format!("tour {} (beat {})", tour.name, fastest + 1);
        let mut options = crate::app::Options::tour(tour, scenario, fastest, false);
        options.paused = false;
        return Ok((title, options));
    }
    let scenario = Scenario::load(name).map_err(|e| e.to_string())?;
    let start = at_ms.min(scenario.duration_ms.saturating_sub(10_000));
    let options = app_options(scenario.clone(), start, &Look::default())?;
    Ok((scenario.name, options))
}

/// A tour (file or built-in) with its scenario, and its beat `beat` (from 1; the first when
/// `None`) as an index.
fn load_tour(
    name: &str,
    beat: Option<usize>,
) -> Result<(crate::tour::Tour, Scenario, usize), String> {
    let (tour, scenario) = crate::tour::Tour::load(name).map_err(|e| e.to_string())?;
    let beat = tour
        .beat_index(beat.unwrap_or(1))
        .map_err(|e| format!("--beat {e}"))?;
    Ok((tour, scenario, beat))
}

/// The window's options for beat `beat` (from 1; the first when `None`) of a tour.
fn tour_options(
    name: &str,
    beat: Option<usize>,
    at_end: bool,
    look: &Look,
) -> Result<crate::app::Options, String> {
    let (tour, scenario, beat) = load_tour(name, beat)?;
    let mut options = crate::app::Options::tour(tour, scenario, beat, at_end);
    look.apply(&mut options);
    Ok(options)
}

fn exit_status(exit: bevy::app::AppExit) -> Result<(), String> {
    match exit {
        bevy::app::AppExit::Success => Ok(()),
        bevy::app::AppExit::Error(code) => Err(format!("the window app stopped with error {code}")),
    }
}

fn parse_assignor(s: &str) -> Result<crate::assignor::Assignor, String> {
    crate::assignor::Assignor::from_name(s)
        .ok_or_else(|| "expected range, roundrobin, sticky or cooperative-sticky".to_string())
}

fn parse_topic(s: &str) -> Result<(String, u32), String> {
    let (name, count) = s
        .rsplit_once(':')
        .ok_or_else(|| "expected NAME:PARTITIONS".to_string())?;
    let count: u32 = count
        .parse()
        .map_err(|_| format!("{count:?} is not a partition count"))?;
    if name.is_empty() || count == 0 || count > crate::scenario::limits::PARTITIONS {
        return Err(format!(
            "expected a name and 1 to {} partitions",
            crate::scenario::limits::PARTITIONS
        ));
    }
    Ok((name.to_string(), count))
}

fn parse_member(s: &str) -> Result<(String, Vec<String>), String> {
    let (id, topics) = s
        .split_once('=')
        .ok_or_else(|| "expected ID=TOPIC[,TOPIC...]".to_string())?;
    let topics: Vec<String> = topics
        .split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    if id.is_empty() || topics.is_empty() {
        return Err("expected ID=TOPIC[,TOPIC...]".to_string());
    }
    Ok((id.to_string(), topics))
}

/// Writes to stdout; a reader that went away (`kafkascope run x | head`) ends the output quietly
/// instead of failing.
fn write_out(text: std::fmt::Arguments) -> Result<(), String> {
    match std::io::stdout().lock().write_fmt(text) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(format!("writing the output: {e}")),
        Ok(()) => Ok(()),
    }
}

macro_rules! out {
    ($($arg:tt)*) => { write_out(format_args!($($arg)*))? };
}

macro_rules! outln {
    ($($arg:tt)*) => { write_out(format_args!("{}\n", format_args!($($arg)*)))? };
}

/// `kafkascope render`: the frames, then the clips asked for.
#[cfg(not(target_arch = "wasm32"))]
fn render(args: RenderArgs) -> Result<(), String> {
    use crate::app::render::{Job, beat_file, beat_folder, is_frame};
    let (tour, scenario, beat) = load_tour(&args.tour, args.beat)?;
    let beats: Vec<usize> = if args.all {
        (0..tour.beats.len()).collect()
    } else {
        vec![beat]
    };
    if args.mp4 {
        crate::clip::check_ffmpeg()?;
    }
    let out = &args.out;
    let place =
        |e: std::io::Error, path: &std::path::Path| format!("--out {}: {e}", path.display());
    std::fs::create_dir_all(out).map_err(|e| place(e, out))?;
    for &b in &beats {
        let folder = beat_folder(out, b);
        std::fs::create_dir_all(&folder).map_err(|e| place(e, &folder))?;
        // A re-render replaces the beat's frames: none of a longer render is left behind.
        for entry in std::fs::read_dir(&folder).map_err(|e| place(e, &folder))? {
            let path = entry.map_err(|e| place(e, &folder))?.path();
            if is_frame(&path) {
                std::fs::remove_file(&path).map_err(|e| place(e, &path))?;
            }
        }
    }
    check_display()?;
    let mut options = crate::app::Options::tour(tour, scenario, beats[0], false);
    options.size = args.size;
    args.style.apply(&mut options);
    let job = Job {
        beats,
        fps: args.fps,
        hold_frames: (args.hold_s * f64::from(args.fps)).round() as u32,
        stills: args.all,
        out: out.clone(),
    };
    let started = std::time::Instant::now();
    let rendered = crate::app::render::render(options, job)?;
    let took = started.elapsed().as_secs_f64();
    let total: usize = rendered.beats.iter().map(|b| b.frames.len()).sum();
    for b in &rendered.beats {
        let n = b.beat + 1;
        let folder = beat_folder(out, b.beat);
        outln!(
            "beat {n}: {} frames ({:.2} s at {} fps) in {}",
            b.frames.len(),
            b.frames.len() as f64 / f64::from(args.fps),
            args.fps,
            folder.display()
        );
        if let Some(still) = &b.still {
            outln!("beat {n}: still {}", still.display());
        }
        if args.gif {
            let gif = beat_file(out, b.beat, "gif");
            crate::clip::write_gif(&b.frames, args.fps, &gif)?;
            outln!("beat {n}: {}", gif.display());
        }
        if args.mp4 {
            let mp4 = beat_file(out, b.beat, "mp4");
            crate::clip::write_mp4(&folder, args.fps, &mp4)?;
            outln!("beat {n}: {}", mp4.display());
        }
    }
    outln!(
        "rendered {total} frames at {}x{} in {took:.1} s ({:.0} ms a frame)",
        args.size.0,
        args.size.1,
        took * 1000.0 / total.max(1) as f64
    );
    Ok(())
}

/// "X,Y" as a point.
fn parse_point(text: &str) -> Result<(f32, f32), String> {
    let bad = || format!("{text:?}: give a point as X,Y, for example 640,360");
    let (x, y) = text.split_once(',').ok_or_else(bad)?;
    let read = |v: &str| {
        v.trim()
            .parse::<f32>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    Ok((read(x).ok_or_else(bad)?, read(y).ok_or_else(bad)?))
}

/// The model's state at `at_ms` of the scenario's run (its end by default), as the view reads
/// it.
fn snapshot_at(
    scenario: &Scenario,
    at_ms: Option<u64>,
) -> Result<crate::view::snapshot::Snapshot, String> {
    let at = at_ms.unwrap_or(scenario.duration_ms);
    if at > crate::scenario::limits::DURATION_MS {
        return Err(format!(
            "--at-ms {at}: a run lasts at most {} ms (a week)",
            crate::scenario::limits::DURATION_MS
        ));
    }
    scenario
        .validate(&scenario.name, at)
        .map_err(|e| e.to_string())?;
    let mut sim = Sim::new(scenario);
    sim.run_until(at);
    Ok(crate::view::snapshot::Snapshot::of(sim.world_mut()))
}

/// The scenario's topic names, for a message about one it lacks.
fn topic_names(scenario: &Scenario) -> String {
    let mut names: Vec<&str> = scenario.topics.iter().map(|t| t.name.as_str()).collect();
    names.push(crate::sim::cluster::OFFSETS_TOPIC);
    names.join(", ")
}

/// Runs the command line; the exit status is 0 on success and 2 on bad input.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kafkascope: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        None => {
            let options = crate::app::Options::front_door()?;
            check_display()?;
            exit_status(crate::app::run(options))
        }
        Some(Command::Tour {
            name,
            beat,
            json,
            table,
            check,
            presenter,
            minutes,
            look,
        }) => {
            let (tour, scenario, beat) = load_tour(&name, beat)?;
            if check {
                let broken = crate::view::contract::check(&tour)?;
                if broken.is_empty() {
                    outln!("{name}: every beat shows what it says");
                    return Ok(());
                }
                let lines: Vec<String> = broken.iter().map(|b| format!("{name}: {b}")).collect();
                return Err(lines.join("\n"));
            }
            if json {
                let followed = crate::view::contract::followed(&tour)?;
                let tour = tour.with_holds()?;
                outln!("{}", tour.to_json(followed));
                return Ok(());
            }
            if table {
                let Some(lab) = &tour.lab else {
                    return Err(format!(
                        "{name}: a lab has a table, and this tour is not one"
                    ));
                };
                let base = tour.base_scenario().map_err(|e| e.to_string())?;
                let table = crate::view::lab::table(lab, &base)?;
                outln!("{}", table.to_text());
                return Ok(());
            }
            check_display()?;
            let mut options = crate::app::Options::tour(tour, scenario, beat, false);
            look.apply(&mut options);
            options.presenter = presenter;
            options.minutes = minutes;
            exit_status(crate::app::run(options))
        }
        Some(Command::View {
            scenario,
            at_ms,
            speed,
            paused,
            look,
        }) => {
            let scenario = Scenario::load(&scenario).map_err(|e| e.to_string())?;
            check_display()?;
            let mut options = app_options(scenario, at_ms, &look)?;
            options.speed = speed;
            options.paused = paused;
            exit_status(crate::app::run(options))
        }
        Some(Command::Shot {
            scenario,
            at_ms,
            beat,
            end,
            out,
            places,
            click,
            terminal,
            keys,
            presenter,
            look,
        }) => {
            let mut options = match (beat, at_ms) {
                _ if end => {
                    let (tour, _, _) = load_tour(&scenario, None)?;
                    let last = tour.beats.len();
                    let mut options = tour_options(&scenario, Some(last), true, &look)?;
                    if let Some(open) = options.tour.as_mut() {
                        open.finished = true;
                    }
                    options
                }
                (Some(beat), _) => tour_options(&scenario, Some(beat), true, &look)?,
                (None, at_ms) => {
                    let scenario = Scenario::load(&scenario).map_err(|e| e.to_string())?;
                    app_options(scenario, at_ms.unwrap_or(0), &look)?
                }
            };
            if out.extension().and_then(|e| e.to_str()) != Some("png") {
                return Err(format!(
                    "--out {}: the file must end in .png",
                    out.display()
                ));
            }
            if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty())
                && !dir.is_dir()
            {
                return Err(format!(
                    "--out {}: no folder {}",
                    out.display(),
                    dir.display()
                ));
            }
            if let Some(places) = &places
                && let Some(dir) = places.parent().filter(|d| !d.as_os_str().is_empty())
                && !dir.is_dir()
            {
                return Err(format!(
                    "--places {}: no folder {}",
                    places.display(),
                    dir.display()
                ));
            }
            if let Some(line) = &terminal {
                let mut sim = Sim::new(&options.scenario);
                let offered = crate::app::terminal_commands(&crate::view::snapshot::Snapshot::of(
                    sim.world_mut(),
                ));
                if !offered.contains(line) {
                    return Err(format!(
                        "--terminal {line:?}: the Terminal offers {}",
                        offered.join("; ")
                    ));
                }
            }
            check_display()?;
            options.shot = Some(out.clone());
            options.places = places;
            options.click = click;
            options.terminal = terminal;
            options.keys = keys.map(|k| k.0).unwrap_or_default();
            options.presenter = presenter;
            exit_status(crate::app::run(options))?;
            if !out.is_file() {
                return Err(format!("{} was not written", out.display()));
            }
            Ok(())
        }
        Some(Command::BenchFrames {
            scenarios,
            frames,
            at_ms,
            speed,
        }) => {
            check_display()?;
            let mut results = Vec::new();
            if let [name] = scenarios.as_slice() {
                let (title, options) = bench_options(name, at_ms)?;
                let bench = crate::app::bench_frames(options, frames as usize, speed);
                let frames = bench.overlay_us.len();
                outln!(
                    "{}",
                    frame_line(
                        &title,
                        frames,
                        (bench.sim_end_ms - bench.sim_start_ms) as f64 / frames.max(1) as f64,
                        [
                            crate::app::summary(&bench.model_us),
                            crate::app::summary(&bench.view_us),
                            crate::app::summary(&bench.overlay_us),
                        ],
                    )
                );
                return Ok(());
            }
            // A process opens one window event loop in its life: each scenario gets its own.
            let exe = std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
            for name in &scenarios {
                bench_options(name, at_ms)?;
                let child = std::process::Command::new(&exe)
                    .args(["bench-frames", name, "--frames", &frames.to_string()])
                    .args(["--at-ms", &at_ms.to_string(), "--speed", &speed.to_string()])
                    .stderr(std::process::Stdio::inherit())
                    .output()
                    .map_err(|e| format!("running the benchmark of {name}: {e}"))?;
                let text = String::from_utf8_lossy(&child.stdout).to_string();
                if !child.status.success() {
                    return Err(format!("the benchmark of {name} failed: {text}"));
                }
                out!("{text}");
                let total = frame_total(&text).ok_or_else(|| {
                    format!("the benchmark of {name} printed no total per frame: {text}")
                })?;
                results.push((name.clone(), total));
            }
            if let [(first, a), .., (last, b)] = results.as_slice() {
                outln!(
                    "{last} takes {:.1}x the CPU time per frame of {first}",
                    b / a.max(1e-9)
                );
            }
            Ok(())
        }
        Some(Command::Run {
            scenario,
            until_ms,
            seed,
            summary: want_summary,
        }) => {
            let mut scenario = Scenario::load(&scenario).map_err(|e| e.to_string())?;
            if let Some(seed) = seed {
                scenario.seed = seed;
            }
            let report = crate::report::run(&scenario, until_ms, "--until-ms")?;
            // A refused action does not stop the run, but the user asked for it: say so.
            for event in &report.events {
                if let crate::sim::EventKind::ActionRefused { action, why } = &event.kind {
                    eprintln!(
                        "kafkascope: at {} ms, {action} was refused: {why}",
                        event.at_ms
                    );
                }
            }
            if want_summary {
                out!("{}", summary(&scenario, &report));
            } else {
                outln!("{}", report.to_json());
            }
            Ok(())
        }
        Some(Command::Describe {
            scenario,
            at_ms,
            topics: _,
            topic,
            group,
            members,
            state,
        }) => {
            use crate::view::kafka_tools::{GroupTable, describe_group, describe_topics};
            let scenario = Scenario::load(&scenario).map_err(|e| e.to_string())?;
            let snapshot = snapshot_at(&scenario, at_ms)?;
            match group {
                Some(name) => {
                    let table = if members {
                        GroupTable::Members
                    } else if state {
                        GroupTable::State
                    } else {
                        GroupTable::Offsets
                    };
                    let shown = describe_group(&snapshot, &name, table);
                    eprint!("{}", shown.stderr);
                    out!("{}", shown.stdout);
                    if snapshot.group(&name).is_none() {
                        return Err(format!(
                            "no consumer group named {name:?} in {}",
                            scenario.name
                        ));
                    }
                }
                None => {
                    let text = describe_topics(&snapshot, topic.as_deref())
                        .map_err(|why| format!("{why} (topics: {})", topic_names(&scenario)))?;
                    out!("{text}");
                }
            }
            Ok(())
        }
        Some(Command::Partition { partitions, keys }) => {
            let emit = |key: &str| -> Result<(), String> {
                outln!("{}", partition_for_key(key.as_bytes(), partitions));
                Ok(())
            };
            if keys.is_empty() {
                let mut stdin = std::io::stdin().lock();
                let mut line = Vec::new();
                for number in 1.. {
                    line.clear();
                    // Read at most one byte past the limit, so an endless line is refused, not
                    // held in memory.
                    (&mut stdin)
                        .take(MAX_KEY_LINE_BYTES + 1)
                        .read_until(b'\n', &mut line)
                        .map_err(|e| format!("reading keys from stdin: {e}"))?;
                    if line.is_empty() {
                        break;
                    }
                    if line.last() == Some(&b'\n') {
                        line.pop();
                    } else if line.len() as u64 > MAX_KEY_LINE_BYTES {
                        return Err(format!(
                            "stdin line {number}: a key longer than {MAX_KEY_LINE_BYTES} bytes (Kafka's records are at most 1 MiB by default)"
                        ));
                    }
                    let key = std::str::from_utf8(&line)
                        .map_err(|e| format!("stdin line {number}: the key is not UTF-8 ({e})"))?;
                    emit(key.strip_suffix('\r').unwrap_or(key))?;
                }
            } else {
                for key in &keys {
                    emit(key)?;
                }
            }
            Ok(())
        }
        Some(Command::Assign {
            assignor,
            topics,
            members,
        }) => {
            let mut counts = std::collections::BTreeMap::new();
            for (name, n) in topics {
                if counts.insert(name.clone(), n).is_some() {
                    return Err(format!("--topic {name} is given twice"));
                }
            }
            let mut seen = std::collections::BTreeSet::new();
            let mut group = Vec::new();
            for (id, subscribed) in members {
                if !seen.insert(id.clone()) {
                    return Err(format!("--member {id} is given twice"));
                }
                if let Some(t) = subscribed.iter().find(|t| !counts.contains_key(*t)) {
                    return Err(format!(
                        "--member {id} subscribes to {t}, which no --topic names"
                    ));
                }
                group.push(crate::assignor::Member {
                    id,
                    topics: subscribed,
                    owned: Vec::new(),
                });
            }
            let assignment = crate::assignor::assign(assignor, &counts, &group);
            outln!(
                "{}",
                serde_json::to_string_pretty(&crate::assignor::to_json(&assignment)).expect("JSON")
            );
            Ok(())
        }
        #[cfg(not(target_arch = "wasm32"))]
        Some(Command::Render(args)) => render(args),
        Some(Command::List) => {
            // One column of names as wide as the longest, so that the descriptions align.
            let width = BUILT_IN.iter().map(|b| b.name.len()).max().unwrap_or(0);
            for built_in in BUILT_IN {
                let scenario = Scenario::built_in(built_in.name).map_err(|e| e.to_string())?;
                outln!("{:<width$}  {}", built_in.name, scenario.description);
            }
            Ok(())
        }
        Some(Command::Bench {
            scenario,
            sim_seconds,
            open_ended,
            soak,
        }) => {
            let open_ended = open_ended || soak;
            let scenario = Scenario::load(&scenario).map_err(|e| e.to_string())?;
            let asked = sim_seconds * 1000;
            // An open-ended run is checked as the sandbox loads it, for its own length: the
            // memory cap, not the check, ends it.
            let checked = if open_ended {
                scenario.duration_ms
            } else {
                asked
            };
            scenario
                .validate(&scenario.name, checked)
                .map_err(|e| e.to_string())?;
            let started = bevy::platform::time::Instant::now();
            let cap = crate::scenario::limits::RECORD_MEMORY_BYTES;
            let mut model = crate::app::Model {
                sim: Sim::new(&scenario),
                scenario: scenario.clone(),
            };
            model.sim.set_open_ended(open_ended);
            let mut stopped = None;
            let steps = if open_ended {
                // In slices of a simulated second, as play runs frame by frame, and stopping
                // where play stops.
                let mut steps = 0;
                while model.sim.now_ms() < asked {
                    stopped = crate::app::full(&model, cap);
                    if stopped.is_some() {
                        break;
                    }
                    steps += model.sim.run_until((model.sim.now_ms() + 1000).min(asked));
                    let now = model.sim.now_ms();
                    if soak && now.is_multiple_of(SOAK_EVERY_MS) {
                        let (checkpoints, _) = model.sim.checkpoint_spacing();
                        outln!(
                            "  {:>6.1} min: peak memory {}, {checkpoints} checkpoints, about {:.0} MB; {:.0} s wall",
                            now as f64 / 60_000.0,
                            peak_memory().map_or("unknown".to_string(), |kb| format!(
                                "{:.0} MB",
                                kb as f64 / 1e3
                            )),
                            model.sim.checkpoint_bytes() as f64 / 1e6,
                            started.elapsed().as_secs_f64(),
                        );
                    }
                }
                steps
            } else {
                model.sim.run_until(asked)
            };
            let wall = started.elapsed().as_secs_f64();
            let mut sim = model.sim;
            let until = sim.now_ms();
            let sim_seconds = until as f64 / 1000.0;
            if open_ended {
                outln!(
                    "{}: open-ended past its {} s; {}",
                    scenario.name,
                    scenario.duration_ms / 1000,
                    stopped.unwrap_or_else(|| format!("ran the {sim_seconds:.0} s asked")),
                );
            }
            let report = Report::of(&sim);
            let records: u64 = report.producers.iter().map(|p| p.stats.sent).sum();
            let messages = report.metrics.produce_requests + report.metrics.fetch_requests;
            outln!(
                "{}: {sim_seconds:.0} simulated s in {wall:.3} wall s = {:.0} simulated s per wall s",
                scenario.name,
                sim_seconds / wall,
            );
            outln!(
                "  {steps} steps ({:.0}% of the milliseconds), {:.2} us per step; {records} records, {messages} produce and fetch requests",
                steps as f64 * 100.0 / until as f64,
                wall * 1e6 / steps as f64,
            );
            let messages_per_step = sim
                .world()
                .resource::<crate::sim::Runtime>()
                .network
                .messages_sent() as f64
                / steps.max(1) as f64;
            let (checkpoints, every_ms) = sim.checkpoint_spacing();
            outln!(
                "  {messages_per_step:.2} messages sent a step; {checkpoints} checkpoints ({every_ms} ms apart), about {:.0} MB; peak memory {}",
                sim.checkpoint_bytes() as f64 / 1e6,
                peak_memory().map_or("unknown".to_string(), |kb| format!(
                    "{:.0} MB",
                    kb as f64 / 1e3
                )),
            );
            // Seeking: to instants drawn across the run, from checkpoints.
            let mut draw = crate::sim::SimRng::new(1);
            let mut worst = 0f64;
            let mut total = 0f64;
            const SEEKS: u32 = 20;
            for _ in 0..SEEKS {
                let at = draw.below(until);
                let started = bevy::platform::time::Instant::now();
                sim.seek(at);
                let took = started.elapsed().as_secs_f64() * 1000.0;
                worst = worst.max(took);
                total += took;
            }
            outln!(
                "  seeking to {SEEKS} instants: {:.1} ms on average, {worst:.1} ms at worst",
                total / f64::from(SEEKS)
            );
            // The longest seeks: to the millisecond before a checkpoint, which re-run a whole
            // interval from the one before, spread across the run.
            let (_, every_ms) = sim.checkpoint_spacing();
            let intervals = until / every_ms;
            let mut longest = 0f64;
            let mut total = 0f64;
            const LONGEST: u64 = 5;
            for k in 1..=LONGEST {
                let at = (intervals * k / LONGEST).max(1) * every_ms - 1;
                let started = bevy::platform::time::Instant::now();
                sim.seek(at.min(until));
                let took = started.elapsed().as_secs_f64() * 1000.0;
                longest = longest.max(took);
                total += took;
            }
            outln!(
                "  seeking to the millisecond before {LONGEST} checkpoints (a whole interval re-run): {:.1} ms on average, {longest:.1} ms at worst",
                total / LONGEST as f64
            );
            Ok(())
        }
    }
}

/// The process's peak resident memory in kB (`VmHWM`), where the system tells it.
fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The longest key `partition` reads from stdin (Kafka's `max.request.size` is 1 MiB).
const MAX_KEY_LINE_BYTES: u64 = 16 * 1024 * 1024;

/// A few lines a person reads: the partitions' state, the producers' counts, what happened.
pub fn summary(scenario: &Scenario, report: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}: {}", scenario.name, scenario.description);
    let _ = writeln!(
        s,
        "{} brokers; ran {:.3} s of sim time with seed {}\n",
        scenario.cluster.brokers,
        report.sim_time_ms as f64 / 1000.0,
        report.seed
    );
    let _ = writeln!(
        s,
        "{:<22} {:>6} {:>6} {:<12} {:>10} {:>10}  replicas (broker: LEO/HW)",
        "partition", "leader", "epoch", "ISR", "HW", "LEO"
    );
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    for p in &report.partitions {
        let replicas: Vec<String> = p
            .replicas
            .iter()
            .map(|r| format!("{}: {}/{}", r.broker, r.log_end_offset, r.high_watermark))
            .collect();
        let _ = writeln!(
            s,
            "{:<22} {:>6} {:>6} {:<12} {:>10} {:>10}  {}",
            format!("{}-{}", p.topic, p.partition),
            p.leader.map_or("none".to_string(), |l| l.to_string()),
            p.leader_epoch,
            list(&p.isr),
            p.high_watermark,
            p.log_end_offset,
            replicas.join("  ")
        );
    }
    let _ = writeln!(s);
    for p in &report.producers {
        let errors = if p.stats.errors.is_empty() {
            "none".to_string()
        } else {
            p.stats
                .errors
                .iter()
                .map(|(k, v)| format!("{k} x{v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            s,
            "producer {} (acks={}{}): sent {}, acked {}, failed {}, pending {}, written twice {}; errors: {}",
            p.name,
            p.acks,
            if p.idempotent { ", idempotent" } else { "" },
            p.stats.sent,
            p.stats.acked,
            p.stats.failed,
            p.pending,
            p.duplicate_records,
            errors
        );
    }
    // Unknown values print as `kafka-consumer-groups` prints them: "-".
    let dash = crate::view::snapshot::or_dash;
    for g in &report.consumer_groups {
        let epochs = match &g.epochs {
            Some(e) => format!(
                "consumer protocol, group epoch {}, target assignment epoch {}",
                e.group_epoch, e.target_assignment_epoch
            ),
            None => format!("generation {}", g.generation),
        };
        let _ = writeln!(
            s,
            "group {} ({}): {epochs}, {} rebalances, paused {:.3} s in all, max lag {}",
            g.name,
            g.assignor,
            g.rebalances,
            g.paused_ms as f64 / 1000.0,
            dash(g.max_lag)
        );
        for o in &g.offsets {
            let committed = dash(o.committed);
            let lag = match o.lag {
                Some(lag) => format!("HW {} - committed {committed} = {lag}", o.high_watermark),
                None => "- (nothing committed)".to_string(),
            };
            let _ = writeln!(
                s,
                "  {:<14} log end {:>8}  committed {:>8}  lag = {lag}; consumer lag {}; paused {:.3} s in {} pauses",
                format!("{}-{}", o.topic, o.partition),
                o.log_end_offset,
                committed,
                dash(o.consumer_lag),
                o.paused_ms as f64 / 1000.0,
                o.pauses
            );
        }
    }
    let m = &report.metrics;
    let brokers: Vec<String> = report
        .brokers
        .iter()
        .map(|b| format!("{} {}", b.id, b.state))
        .collect();
    let _ = writeln!(s, "\nbrokers: {}", brokers.join(", "));
    let _ = writeln!(
        s,
        "ISR shrinks {}, expands {}; leader elections {} ({} unclean); partitions offline {:.3} s in all",
        m.isr_shrinks,
        m.isr_expands,
        m.leader_elections,
        m.unclean_leader_elections,
        m.offline_partition_ms as f64 / 1000.0
    );
    let _ = writeln!(
        s,
        "{} produce and {} fetch requests; {} messages lost on cut links or at dead brokers; {} records truncated",
        m.produce_requests, m.fetch_requests, m.messages_lost, m.records_truncated
    );
    let _ = writeln!(
        s,
        "partitions led by a dead or cut-off broker before fencing: {:.3} s in all",
        m.dead_leader_ms as f64 / 1000.0
    );
    let _ = writeln!(
        s,
        "acknowledged records lost: {}; unavailable (held only by replicas that may not lead): {}",
        report.acked_records_lost, report.acked_records_unavailable
    );
    if !report.events.is_empty() {
        let _ = writeln!(s, "\nevents:");
        for e in &report.events {
            let json = serde_json::to_value(e).expect("events serialize");
            let mut fields: Vec<String> = Vec::new();
            if let serde_json::Value::Object(map) = json {
                for (k, v) in map {
                    if k != "at_ms" && k != "type" {
                        fields.push(format!("{k}={v}"));
                    }
                }
            }
            let kind = serde_json::to_value(e)
                .ok()
                .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string));
            let _ = writeln!(
                s,
                "  {:>9.3} s  {:<16} {}",
                e.at_ms as f64 / 1000.0,
                kind.unwrap_or_default(),
                fields.join(" ")
            );
        }
    }
    if report.invariant_violations.is_empty() {
        let _ = writeln!(s, "\ninvariants: all held");
    } else {
        let _ = writeln!(s, "\ninvariant violations:");
        for v in &report.invariant_violations {
            let _ = writeln!(s, "  {v}");
        }
    }
    s
}

/// How `bench-frames` ends the line of one scenario, after its total per frame.
const PER_FRAME: &str = " ms per frame of the 16.7 ms a 60 fps frame has";

/// The line `bench-frames` prints for one scenario: how much sim time a frame plays, the mean and
/// 95th percentile of the model's, the scene's and the overlay's CPU time per frame (ms), then
/// their total.
fn frame_line(name: &str, frames: usize, sim_ms_each: f64, parts: [(f64, f64); 3]) -> String {
    let [(model, model95), (view, view95), (overlay, overlay95)] = parts;
    let total = model + view + overlay;
    format!(
        "{name}: {frames} frames ({sim_ms_each:.2} sim ms each): model {model:.2} ms (p95 {model95:.2}), scene {view:.2} ms (p95 {view95:.2}), overlay {overlay:.2} ms (p95 {overlay95:.2}); {total:.2}{PER_FRAME}"
    )
}

/// The total per frame in a scenario's `bench-frames` output (each scenario runs in a child
/// process of its own).
fn frame_total(output: &str) -> Option<f64> {
    output.lines().find_map(|line| {
        let (_, last) = line.strip_suffix(PER_FRAME)?.rsplit_once("; ")?;
        last.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_benchmarks_total_per_frame_is_read_back() {
        let line = frame_line(
            "quickstart",
            600,
            16.67,
            [(1.5, 2.0), (3.25, 4.0), (2.0, 2.5)],
        );
        assert_eq!(frame_total(&format!("{line}\n")), Some(6.75));
        assert_eq!(frame_total("quickstart: the window could not open\n"), None);
    }
}
