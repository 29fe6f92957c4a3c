//! The window app, rendered: `kafkascope shot` under a display (Xvfb with Mesa's software Vulkan
//! on machines without one), checked by its pixels. Without any display the tests say so and
//! pass, unless KAFKASCOPE_REQUIRE_RENDER is set (CI sets it).

use std::path::{Path, PathBuf};
use std::process::Command;

use bevy::asset::RenderAssetUsages;
use bevy::color::{ColorToPacked, Srgba};
use bevy::image::{CompressedImageFormats, Image, ImageSampler, ImageType};
use kafkascope::view::palette::{Palette, Theme};

/// How to reach a display: the one there is, or a virtual one from xvfb-run.
fn display() -> Option<Vec<String>> {
    if std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty()) {
        return Some(Vec::new());
    }
    let xvfb = Command::new("xvfb-run").arg("--help").output().is_ok();
    if xvfb {
        return Some(
            ["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24"]
                .map(String::from)
                .to_vec(),
        );
    }
    assert!(
        std::env::var_os("KAFKASCOPE_REQUIRE_RENDER").is_none(),
        "KAFKASCOPE_REQUIRE_RENDER is set but there is no display and no xvfb-run"
    );
    eprintln!(
        "render tests skipped: no display and no xvfb-run (apt install xvfb xauth mesa-vulkan-drivers)"
    );
    None
}

/// The binary, under the display prefix.
fn app(prefix: &[String]) -> Command {
    let bin = env!("CARGO_BIN_EXE_kafkascope");
    let mut command = match prefix.split_first() {
        None => Command::new(bin),
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(bin);
            c
        }
    };
    command.env("WGPU_BACKEND", "vulkan");
    command
}

fn shot(scenario: &str, at_ms: u64, theme: &str) -> Option<PathBuf> {
    shoot(
        scenario,
        &["--at-ms", &at_ms.to_string()],
        theme,
        &format!("{at_ms}"),
    )
}

/// A shot of a tour's beat, at its end.
fn beat_shot(tour: &str, beat: u32, theme: &str, extra: &[&str]) -> Option<PathBuf> {
    let n = beat.to_string();
    let mut args = vec!["--beat", &n];
    args.extend(extra);
    shoot(
        tour,
        &args,
        theme,
        &format!("beat-{beat}{}", extra.join("")),
    )
}

fn shoot(scenario: &str, when: &[&str], theme: &str, tag: &str) -> Option<PathBuf> {
    shoot_at(scenario, when, theme, tag, "1600x900", false).map(|(path, _)| path)
}

/// A shot at a window size, with where it drew what (`shot --places`) when `placed`.
fn shoot_at(
    scenario: &str,
    when: &[&str],
    theme: &str,
    tag: &str,
    size: &str,
    placed: bool,
) -> Option<(PathBuf, serde_json::Value)> {
    let prefix = display()?;
    let dir = std::env::temp_dir().join(format!("kafkascope-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{scenario}-{tag}-{theme}-{size}.png"));
    let places = out.with_extension("json");
    let mut args = vec!["shot", scenario];
    args.extend(when);
    args.extend([
        "--out",
        out.to_str().unwrap(),
        "--size",
        size,
        "--theme",
        theme,
    ]);
    if placed {
        args.extend(["--places", places.to_str().unwrap()]);
    }
    let result = app(&prefix).args(args).output().expect("the shot runs");
    assert!(
        result.status.success(),
        "shot {scenario} failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    let places = if placed {
        let text = std::fs::read_to_string(&places).expect("the places file");
        let _ = std::fs::remove_file(&places);
        serde_json::from_str(&text).expect("the places are JSON")
    } else {
        serde_json::Value::Null
    };
    Some((out, places))
}

/// The picture's pixels as sRGB bytes.
fn pixels(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let bytes = std::fs::read(path).unwrap();
    let image = Image::from_buffer(
        &bytes,
        ImageType::Extension("png"),
        CompressedImageFormats::NONE,
        true,
        ImageSampler::Default,
        RenderAssetUsages::MAIN_WORLD,
    )
    .expect("a PNG");
    let (w, h) = (image.width(), image.height());
    let data = image.data.expect("pixel data");
    let px = data.chunks_exact(4).map(|p| [p[0], p[1], p[2]]).collect();
    (w, h, px)
}

/// How many pixels are within a small distance of a colour.
fn count(px: &[[u8; 3]], c: Srgba) -> usize {
    let [r, g, b, _] = c.to_u8_array();
    px.iter()
        .filter(|p| {
            (p[0] as i32 - r as i32).abs() <= 6
                && (p[1] as i32 - g as i32).abs() <= 6
                && (p[2] as i32 - b as i32).abs() <= 6
        })
        .count()
}

fn check_theme_colours(scenario: &str, at_ms: u64, theme: Theme, expect_out_of_sync: bool) {
    let name = if theme == Theme::Dark {
        "dark"
    } else {
        "light"
    };
    let Some(path) = shot(scenario, at_ms, name) else {
        return;
    };
    let (w, h, px) = pixels(&path);
    assert_eq!((w, h), (1600, 900), "the window's size");
    let palette = Palette::of(theme);
    let background = count(&px, palette.background);
    assert!(
        background > px.len() / 10 && background < px.len() * 9 / 10,
        "{scenario}: {background} of {} pixels are background: blank or wrong theme",
        px.len()
    );
    // Committed log cells are drawn solid in their replica's colour, tens of pixels each.
    let leader = count(&px, palette.leader);
    let in_sync = count(&px, palette.in_sync);
    let out_of_sync = count(&px, palette.out_of_sync);
    assert!(leader > 500, "{scenario} ({name}): {leader} leader pixels");
    if expect_out_of_sync {
        assert!(
            out_of_sync > 500,
            "{scenario} ({name}): {out_of_sync} out-of-sync pixels"
        );
    } else {
        assert!(
            in_sync > 500,
            "{scenario} ({name}): {in_sync} in-sync pixels"
        );
        assert!(
            out_of_sync < 50,
            "{scenario} ({name}): {out_of_sync} out-of-sync pixels in a healthy cluster"
        );
    }
    let _ = std::fs::remove_file(path);
}

#[test]
fn quickstart_shows_leaders_and_followers_in_both_themes() {
    check_theme_colours("quickstart", 12_000, Theme::Dark, false);
    check_theme_colours("quickstart", 12_000, Theme::Light, false);
}

#[test]
fn a_shrunk_isr_shows_its_followers_out_of_sync() {
    // isr-shrink: the follower cut off at 5 s leaves the ISR at 35 s to 45 s; at 50 s it is out.
    check_theme_colours("isr-shrink", 50_000, Theme::Dark, true);
}

/// How many pixels of a region (fractions of the picture) are within a small distance of a colour.
fn count_in(
    (w, h): (u32, u32),
    px: &[[u8; 3]],
    (x0, y0, x1, y1): (f32, f32, f32, f32),
    c: Srgba,
) -> usize {
    let (w, h) = (w as usize, h as usize);
    let rows = (h as f32 * y0) as usize..(h as f32 * y1) as usize;
    let cols = (w as f32 * x0) as usize..(w as f32 * x1) as usize;
    rows.map(|y| count(&px[y * w + cols.start..y * w + cols.end], c))
        .sum()
}

#[test]
fn a_beat_shows_its_narration_its_callouts_and_dims_the_rest() {
    for theme in [Theme::Dark, Theme::Light] {
        let name = if theme == Theme::Dark {
            "dark"
        } else {
            "light"
        };
        let Some(path) = beat_shot("walkthrough", 4, name, &[]) else {
            return;
        };
        let (w, h, px) = pixels(&path);
        let palette = Palette::of(theme);
        // The narration panel, across the bottom: text on the panel's colour.
        let text = count_in((w, h), &px, (0.0, 0.62, 0.5, 0.92), palette.text);
        let panel = count_in((w, h), &px, (0.0, 0.62, 0.5, 0.92), palette.panel);
        assert!(text > 1500, "{name}: {text} pixels of narration text");
        assert!(
            panel > 50_000,
            "{name}: {panel} pixels of the narration panel"
        );
        // The beat's callouts, framed in the accent colour, above the narration.
        let framed = count_in((w, h), &px, (0.0, 0.0, 1.0, 0.62), palette.produce);
        assert!(framed > 1500, "{name}: {framed} accent pixels of callouts");
        // The followers' and the leader's rows are lit in their colours.
        let lit = count(&px, palette.in_sync) + count(&px, palette.leader);
        assert!(lit > 2000, "{name}: {lit} pixels of lit replicas");
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn a_lab_draws_its_two_runs_side_by_side_each_with_its_own_state() {
    // The unclean-election lab at its second beat: unclean election off on the left (the
    // partition offline, no leader), on on the right (broker 2 leads, elected uncleanly).
    let Some(path) = beat_shot("lab-unclean-election", 2, "dark", &[]) else {
        return;
    };
    let (w, h, px) = pixels(&path);
    let palette = Palette::of(Theme::Dark);
    let scene = |x0: f32, x1: f32, c: Srgba| count_in((w, h), &px, (x0, 0.1, x1, 0.7), c);
    let (left, right) = (
        scene(0.0, 0.5, palette.leader),
        scene(0.5, 1.0, palette.leader),
    );
    assert!(
        left < 300,
        "{left} leader pixels in the left run, whose partition is offline"
    );
    assert!(
        right > 3000,
        "{right} leader pixels in the right run, led by broker 2"
    );
    // Each half has its heading, framed in the accent colour, over its scene.
    let band = |x0: f32, x1: f32| count_in((w, h), &px, (x0, 0.02, x1, 0.09), palette.produce);
    let (l, r) = (band(0.0, 0.5), band(0.5, 1.0));
    assert!(l > 800 && r > 800, "heading frames: {l} left, {r} right");
    let _ = std::fs::remove_file(path);
}

#[test]
fn the_talk_preset_shows_only_the_narration_and_the_lag_monitor() {
    let Some(path) = beat_shot("walkthrough", 8, "dark", &["--talk"]) else {
        return;
    };
    let (w, h, px) = pixels(&path);
    // The talk preset is light whatever the theme asked, and has no transport bar: the top rows
    // are the scene's background, not a panel.
    let palette = Palette::of(Theme::Light);
    let top = count_in((w, h), &px, (0.0, 0.0, 0.2, 0.02), palette.background);
    let region = (w as f32 * 0.2) * (h as f32 * 0.02);
    assert!(
        top as f32 > region * 0.9,
        "{top} of {region} pixels in the top rows are background: a panel is there"
    );
    let light = count(&px, palette.background) + count(&px, palette.panel);
    assert!(
        light > px.len() / 3,
        "{light} light pixels: not the light theme"
    );
    // No panel down the right: the scene reaches the window's edge, and its top holds the
    // scene's own lag monitor, opened up by the beat in a callout framed in the accent colour.
    let edge = count_in((w, h), &px, (0.97, 0.4, 1.0, 0.6), palette.panel);
    let region = (w as f32 * 0.03) * (h as f32 * 0.2);
    assert!(
        (edge as f32) < region * 0.5,
        "{edge} of {region} panel pixels at the right edge: a panel is there"
    );
    let framed = count_in((w, h), &px, (0.0, 0.0, 1.0, 0.35), palette.produce);
    assert!(framed > 1500, "{framed} pixels of the lag monitor's frame");
    let _ = std::fs::remove_file(path);
}

#[test]
fn the_app_plays_live_and_reports_its_frame_times() {
    // Playing at real time through the crash of a leader: playback, tweens, overlay, every frame.
    let Some(prefix) = display() else { return };
    let result = app(&prefix)
        .args([
            "bench-frames",
            "clean-failover",
            "--frames",
            "40",
            "--at-ms",
            "9500",
        ])
        .output()
        .expect("the app runs");
    let out = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(
        out.starts_with("clean-failover: 40 frames (")
            && out.contains("sim ms each")
            && out.contains("overlay"),
        "{out}"
    );
}

/// `kafkascope render` into a fresh folder; the folder.
fn render(prefix: &[String], tag: &str, args: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kafkascope-render-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let result = app(prefix)
        .arg("render")
        .args(args)
        .arg("--out")
        .arg(&dir)
        .output()
        .expect("the app runs");
    assert!(
        result.status.success(),
        "{}{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    dir
}

/// The files of a folder, by name, with their bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("the folder was written")
        .map(|e| {
            let path = e.expect("an entry").path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read(&path).expect("a frame"))
        })
        .collect();
    files.sort();
    files
}

/// Frames a stretch of a beat takes: a frame per 1/fps of its wall time at the beat's speed,
/// the last one reaching its end.
fn frames_for(span_ms: u64, speed: f64, fps: u32) -> usize {
    (span_ms as f64 * f64::from(fps) / (1000.0 * speed) - 1e-9).ceil() as usize
}

#[test]
fn a_rendered_beat_is_the_same_bytes_every_time_a_frame_per_fps_of_its_span() {
    let Some(prefix) = display() else { return };
    let (tour, _) = kafkascope::tour::Tour::built_in("walkthrough").expect("built in");
    let beat = &tour.beats[1];
    let args = [
        "walkthrough",
        "--beat",
        "2",
        "--fps",
        "5",
        "--size",
        "640x360",
    ];
    let first_dir = render(&prefix, "a", &args);
    let first = files(&first_dir.join("beat-02"));
    let again_dir = render(&prefix, "b", &args);
    let again = files(&again_dir.join("beat-02"));
    // Beat 2 plays 2 ms at 1/1000: two seconds, ten frames at 5 fps.
    let want = frames_for(beat.to_ms - beat.from_ms, beat.speed, 5);
    assert_eq!(want, 10);
    assert_eq!(first.len(), want);
    assert_eq!(first[0].0, "00001.png");
    assert_eq!(first[want - 1].0, format!("{want:05}.png"));
    let hash = |b: &[u8]| {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        b.hash(&mut h);
        h.finish()
    };
    for ((name, a), (_, b)) in first.iter().zip(&again) {
        assert_eq!(hash(a), hash(b), "{name} differs between two renders");
    }
    // The record moves: the beat's frames are not all one picture.
    assert_ne!(hash(&first[0].1), hash(&first[want - 1].1));
    // A re-render into the same folder replaces the frames, leaving none of a longer one.
    std::fs::write(again_dir.join("beat-02/00099.png"), b"stale").unwrap();
    let result = app(&prefix)
        .args([
            "render",
            "walkthrough",
            "--beat",
            "2",
            "--fps",
            "2",
            "--size",
            "640x360",
        ])
        .arg("--out")
        .arg(&again_dir)
        .output()
        .expect("the app runs");
    assert!(result.status.success());
    assert_eq!(
        files(&again_dir.join("beat-02")).len(),
        frames_for(2, 0.001, 2)
    );
    for dir in [first_dir, again_dir] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn a_rendered_hold_adds_its_frames_and_the_beat_goes_on() {
    let Some(prefix) = display() else { return };
    let (tour, _) = kafkascope::tour::Tour::built_in("walkthrough").expect("built in");
    let tour = tour.with_holds().expect("the walkthrough's holds");
    // Beat 5 holds at the fencing, then plays on to its end.
    let (beat, holds) = (&tour.beats[4], tour.holds_of(4));
    assert_eq!(holds.len(), 1);
    let hold = holds[0].at_ms;
    let dir = render(
        &prefix,
        "hold",
        &[
            "walkthrough",
            "--beat",
            "5",
            "--fps",
            "2",
            "--size",
            "640x360",
            "--hold-s",
            "1.5",
        ],
    );
    let frames = files(&dir.join("beat-05"));
    let want = frames_for(hold - beat.from_ms, beat.speed, 2)
        + 3
        + frames_for(beat.to_ms - hold, beat.speed, 2);
    assert_eq!(frames.len(), want);
    let _ = std::fs::remove_dir_all(dir);
}

/// Text without its spaces and line breaks: egui wraps a text into rows.
fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

#[test]
fn the_presenter_view_follows_the_clickers_keys_forward_and_back() {
    let Some(prefix) = display() else { return };
    let (tour, scenario) = kafkascope::tour::Tour::built_in("walkthrough").expect("built in");
    let tour = tour.with_holds().expect("its holds");
    // From beat 1's end, the keys a speaker presses; where each stop must be: the beat, its
    // stage, and the instant (a beat's end, or its hold).
    let stops: [(&str, usize, &str, u64); 4] = [
        ("Right", 2, "Ended", tour.beats[1].to_ms),
        ("Right,Right,Left", 2, "Ended", tour.beats[1].to_ms),
        ("Right,Right,Right", 4, "Held(0)", tour.holds_of(3)[0].at_ms),
        ("5,Enter", 5, "Held(0)", tour.holds_of(4)[0].at_ms),
    ];
    for (keys, beat, stage, at_ms) in stops {
        let dir = std::env::temp_dir();
        let tag = format!(
            "{}-presenter-{}",
            std::process::id(),
            keys.replace(',', "-")
        );
        let (png, json) = (
            dir.join(format!("{tag}.png")),
            dir.join(format!("{tag}.json")),
        );
        let result = app(&prefix)
            .args([
                "shot",
                "walkthrough",
                "--beat",
                "1",
                "--presenter",
                "--keys",
                keys,
            ])
            .args(["--size", "1280x720", "--out"])
            .arg(&png)
            .arg("--places")
            .arg(&json)
            .output()
            .expect("the app runs");
        assert!(
            result.status.success(),
            "{keys}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        let places: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("places")).expect("JSON");
        assert_eq!(places["tour"]["beat"], beat, "{keys}");
        assert_eq!(places["tour"]["stage"], stage, "{keys}");
        assert_eq!(places["now_ms"], at_ms, "{keys}");
        // The model is the run's own state at that instant, as a headless run gives it.
        let mut sim = kafkascope::sim::Sim::new(&scenario);
        sim.run_until(at_ms);
        let want: serde_json::Value =
            serde_json::from_str(&kafkascope::report::Report::of(&sim).to_json()).unwrap();
        assert!(
            places["report"] == want,
            "{keys}: the window's model is not the run's"
        );
        let texts = |window: &str| -> String {
            places["panel_texts"]
                .as_array()
                .expect("panel texts")
                .iter()
                .filter(|t| t["window"] == window)
                .map(|t| squeezed(t["text"].as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join("|")
        };
        let (presenter, stage_texts) = (texts("presenter"), texts("stage"));
        let b = &tour.beats[beat - 1];
        // The presenter view shows the beat's notes, where it is, and the next beat.
        assert!(!b.notes.is_empty());
        assert!(
            presenter.contains(&squeezed(&b.notes)),
            "{keys}: {presenter}"
        );
        assert!(
            presenter.contains(&squeezed(&format!("Beat {beat} of 8"))),
            "{keys}"
        );
        let next = &tour.beats[beat].title;
        assert!(
            presenter.contains(&squeezed(next)),
            "{keys}: next is {next}"
        );
        // The stage shows the title only: never the notes, nor the narration.
        assert!(
            stage_texts.contains(&squeezed(&b.title)),
            "{keys}: {stage_texts}"
        );
        assert!(!stage_texts.contains(&squeezed(&b.notes)), "{keys}");
        assert!(!stage_texts.contains(&squeezed(b.stage_line())), "{keys}");
        for f in [png, json] {
            let _ = std::fs::remove_file(f);
        }
    }
}

// What a person sees, measured on the pixels at the places the shot says it drew things
// (`shot --places`): contrast as WCAG 2 computes it, sizes in the picture's pixels.

/// A picture and where its scene drew what.
struct Placed {
    w: usize,
    h: usize,
    px: Vec<[u8; 3]>,
    places: serde_json::Value,
}

/// A rectangle of the places file: left, top, right, bottom, in pixels.
type PxRect = [f32; 4];

fn rect_of(v: &serde_json::Value) -> PxRect {
    let a: Vec<f32> = v
        .as_array()
        .expect("a rectangle")
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    [a[0], a[1], a[2], a[3]]
}

/// The rectangles of a list of places (texts, messages, cells), in order.
fn rects(list: &serde_json::Value, key: &str) -> Vec<PxRect> {
    list.as_array()
        .expect("a list of places")
        .iter()
        .map(|v| rect_of(&v[key]))
        .collect()
}

fn placed_shot(scenario: &str, when: &[&str], theme: &str, size: &str) -> Option<Placed> {
    // Tests run at once, and two may take the same shot: each has its own files.
    static SHOTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SHOTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tag = format!("{}-{n}", when.join(""));
    let (path, places) = shoot_at(scenario, when, theme, &tag, size, true)?;
    let (w, h, px) = pixels(&path);
    let _ = std::fs::remove_file(path);
    Some(Placed {
        w: w as usize,
        h: h as usize,
        px,
        places,
    })
}

impl Placed {
    fn at(&self, x: f32, y: f32) -> [u8; 3] {
        let x = (x.max(0.0) as usize).min(self.w - 1);
        let y = (y.max(0.0) as usize).min(self.h - 1);
        self.px[y * self.w + x]
    }

    /// The pixels whose centres lie inside `r`.
    fn inside(&self, r: PxRect) -> Vec<[u8; 3]> {
        let xs = (r[0].max(0.0).round() as usize)..(r[2].round().max(0.0) as usize).min(self.w);
        let ys = (r[1].max(0.0).round() as usize)..(r[3].round().max(0.0) as usize).min(self.h);
        ys.flat_map(|y| xs.clone().map(move |x| (x, y)))
            .map(|(x, y)| self.px[y * self.w + x])
            .collect()
    }

    /// The pixels in a band `d` wide around `r`, outside it.
    fn around(&self, r: PxRect, d: f32) -> Vec<[u8; 3]> {
        let mut px = Vec::new();
        for y in (r[1] - d).max(0.0) as usize..((r[3] + d) as usize).min(self.h) {
            for x in (r[0] - d).max(0.0) as usize..((r[2] + d) as usize).min(self.w) {
                let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
                if fx < r[0] || fx > r[2] || fy < r[1] || fy > r[3] {
                    px.push(self.px[y * self.w + x]);
                }
            }
        }
        px
    }

    fn center(&self, r: PxRect) -> [u8; 3] {
        self.at((r[0] + r[2]) / 2.0, (r[1] + r[3]) / 2.0)
    }
}

/// WCAG 2's relative luminance of an sRGB colour.
fn luminance(c: [u8; 3]) -> f64 {
    let ch = |v: u8| {
        let v = v as f64 / 255.0;
        if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * ch(c[0]) + 0.7152 * ch(c[1]) + 0.0722 * ch(c[2])
}

fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// The most common value (a colour, a spacing), and its share.
fn mode<T: Copy + Eq + std::hash::Hash + Ord + Default>(values: &[T]) -> (T, f64) {
    let mut counts = std::collections::HashMap::new();
    for v in values {
        *counts.entry(*v).or_insert(0usize) += 1;
    }
    let (v, n) = counts
        .into_iter()
        .max_by_key(|(v, n)| (*n, *v))
        .unwrap_or_default();
    (v, n as f64 / values.len().max(1) as f64)
}

/// The strongest contrast any pixel of `px` makes with `bg`: a mark's ink.
fn ink(px: &[[u8; 3]], bg: [u8; 3]) -> f64 {
    px.iter().map(|p| contrast(*p, bg)).fold(1.0, f64::max)
}

fn overlaps(a: PxRect, b: PxRect) -> bool {
    a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]
}

/// A row's own colour: the most common one outside its log and its role's mark.
fn row_background(shot: &Placed, row: &serde_json::Value) -> [u8; 3] {
    let r = rect_of(&row["rect"]);
    let cells = rects(&row["cells"], "rect");
    let log = cells.iter().fold(cells[0], |a, c| {
        [
            a[0].min(c[0]),
            a[1].min(c[1]),
            a[2].max(c[2]),
            a[3].max(c[3]),
        ]
    });
    let log = [log[0] - 4.0, log[1] - 4.0, log[2] + 4.0, log[3] + 4.0];
    let mut px = Vec::new();
    for y in (r[1] + 3.0) as usize..(r[3] - 3.0) as usize {
        for x in (r[0] + 10.0) as usize..(r[2] - 3.0) as usize {
            let (fx, fy) = (x as f32, y as f32);
            if !(fx >= log[0] && fx <= log[2] && fy >= log[1] && fy <= log[3]) {
                px.push(shot.at(fx, fy));
            }
        }
    }
    mode(&px).0
}

/// Every state of a log cell, every role, the high watermark, the messages in flight and the
/// text keep their contrast as drawn, in both themes: cells and marks 3:1 against the row they
/// sit on, text 4.5:1 against what is behind it. Uncommitted, missing and diverged cells differ
/// from committed ones by form: hollow, not only paler.
#[test]
fn each_state_keeps_its_contrast_on_the_rendered_pixels() {
    let mut states = std::collections::BTreeSet::new();
    let mut roles = std::collections::BTreeSet::new();
    let mut measured_messages = 0;
    for theme in ["dark", "light"] {
        // Steady replication; an ISR shrunk to the leader; after an unclean election.
        for (scenario, at) in [
            ("quickstart", 20_000),
            ("unclean-election", 50_000),
            ("unclean-election", 70_000),
        ] {
            let at = at.to_string();
            let Some(shot) = placed_shot(scenario, &["--at-ms", &at], theme, "1920x1080") else {
                return;
            };
            let what = format!("{theme} {scenario} at {at} ms");
            // A mark written over a log ("<- 2489") hides the cells under it.
            let texts = rects(&shot.places["texts"], "rect");
            for row in shot.places["rows"].as_array().unwrap() {
                let bg = row_background(&shot, row);
                let name = format!("{what}: {} on broker {}", row["partition"], row["broker"]);
                let role = row["role"].as_str().unwrap().to_string();
                let mark = contrast(shot.center(rect_of(&row["role_mark"])), bg);
                assert!(
                    mark >= 3.0,
                    "{name}: its role's mark ({role}) at {mark:.2}:1"
                );
                roles.insert(role);
                if !row["high_watermark"].is_null() {
                    let c = ink(&shot.inside(rect_of(&row["high_watermark"])), bg);
                    assert!(c >= 3.0, "{name}: its high watermark's bar at {c:.2}:1");
                }
                for cell in row["cells"].as_array().unwrap() {
                    let r = rect_of(&cell["rect"]);
                    if texts.iter().any(|t| overlaps(*t, r)) {
                        continue;
                    }
                    let state = cell["state"].as_str().unwrap();
                    let (middle, mark) = (contrast(shot.center(r), bg), ink(&shot.inside(r), bg));
                    let at = format!("{name}: offset {} ({state})", cell["offset"]);
                    assert!(mark >= 3.0, "{at} drawn at {mark:.2}:1");
                    match state {
                        "committed" => assert!(middle >= 3.0, "{at}: not filled ({middle:.2}:1)"),
                        "uncommitted" | "missing" => {
                            assert!(middle < 1.2, "{at}: not hollow ({middle:.2}:1 inside)")
                        }
                        // Struck through: its middle is the stroke, a quarter down is hollow.
                        "diverged" => {
                            let quarter = contrast(
                                shot.at((r[0] + r[2]) / 2.0, r[1] + (r[3] - r[1]) / 4.0),
                                bg,
                            );
                            assert!(
                                middle >= 3.0 && quarter < 1.2,
                                "{at}: not struck ({middle:.2}, {quarter:.2})"
                            );
                        }
                        other => panic!("{at}: unknown state {other}"),
                    }
                    states.insert(state.to_string());
                }
            }
            let scene = rect_of(&shot.places["scene"]);
            let messages = rects(&shot.places["messages"], "rect");
            for (i, m) in shot.places["messages"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
            {
                let r = messages[i];
                let alone = messages.iter().enumerate().all(|(j, o)| {
                    j == i || !overlaps([r[0] - 6.0, r[1] - 6.0, r[2] + 6.0, r[3] + 6.0], *o)
                });
                if m["alpha"].as_f64().unwrap() < 0.99 || !alone {
                    continue;
                }
                // Against what surrounds it, where one colour does (not astride a box's edge).
                let around = shot.around(r, 6.0);
                let (bg, share) = mode(&around);
                if share < 0.6 {
                    continue;
                }
                let c = ink(&shot.inside(r), bg);
                assert!(c >= 3.0, "{what}: a {} message at {c:.2}:1", m["kind"]);
                measured_messages += 1;
            }
            for t in shot.places["texts"].as_array().unwrap() {
                let r = rect_of(&t["rect"]);
                let within =
                    r[0] >= scene[0] && r[1] >= scene[1] && r[2] <= scene[2] && r[3] <= scene[3];
                if !within || messages.iter().any(|m| overlaps(*m, r)) {
                    continue;
                }
                let px = shot.inside(r);
                let (bg, _) = mode(&px);
                let c = ink(&px, bg);
                assert!(c >= 4.5, "{what}: the text {} at {c:.2}:1", t["text"]);
            }
        }
    }
    for state in ["committed", "uncommitted", "missing", "diverged"] {
        assert!(
            states.contains(state),
            "no {state} cell was measured: {states:?}"
        );
    }
    for role in ["Leader", "InSync", "OutOfSync", "Offline"] {
        assert!(
            roles.contains(role),
            "no {role} row was measured: {roles:?}"
        );
    }
    assert!(measured_messages > 0, "no message was measured");
}

/// After `unclean-election`'s election the new leader's log is in view, filled, beside the old
/// leader's records that will be truncated, and the logs that run past the window say how far.
#[test]
fn the_leaders_log_shows_after_the_unclean_election() {
    let Some(shot) = placed_shot(
        "unclean-election",
        &["--at-ms", "70000"],
        "dark",
        "1600x900",
    ) else {
        return;
    };
    let rows = shot.places["rows"].as_array().unwrap();
    let palette = Palette::of(Theme::Dark);
    let leader = rows
        .iter()
        .find(|r| r["role"] == "Leader")
        .expect("a leader row");
    let committed: Vec<PxRect> = leader["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["state"] == "committed")
        .map(|c| rect_of(&c["rect"]))
        .collect();
    assert!(
        committed.len() >= 3,
        "the leader's strip shows {} committed cells",
        committed.len()
    );
    let [r, g, b, _] = palette.leader.to_u8_array();
    for c in &committed {
        let p = shot.center(*c);
        let near = (p[0] as i32 - r as i32).abs()
            + (p[1] as i32 - g as i32).abs()
            + (p[2] as i32 - b as i32).abs();
        assert!(
            near < 30,
            "a committed cell of the leader is {p:?}, not the leader's colour"
        );
    }
    let old = rows
        .iter()
        .find(|r| r["role"] == "Offline")
        .expect("the old leader's row");
    assert!(
        old["cells"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["state"] == "diverged"),
        "the old leader's records past the divergence are not shown as diverging"
    );
    let texts: Vec<&str> = shot.places["texts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["text"].as_str())
        .collect();
    assert!(
        texts.iter().any(|t| t.starts_with("truncates to ")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with('+') && t.ends_with("->")),
        "{texts:?}"
    );
}

/// The scene fills the room the panels leave it: at least 60% of the scene's pixels are not the
/// background, in a window and in an 800x450 embed, for `quickstart` and each of the
/// walkthrough's beats.
#[test]
fn the_scene_covers_its_free_area() {
    let background = Palette::of(Theme::Dark).background.to_u8_array();
    for size in ["1600x900", "800x450"] {
        let mut shots = vec![(
            "quickstart".to_string(),
            vec!["--at-ms".to_string(), "20000".to_string()],
        )];
        for beat in 1..=8 {
            shots.push((
                "walkthrough".to_string(),
                vec!["--beat".to_string(), beat.to_string()],
            ));
        }
        for (scenario, when) in shots {
            let when: Vec<&str> = when.iter().map(String::as_str).collect();
            let Some(shot) = placed_shot(&scenario, &when, "dark", size) else {
                return;
            };
            let px = shot.inside(rect_of(&shot.places["scene"]));
            let void = px
                .iter()
                .filter(|p| (0..3).all(|i| (p[i] as i32 - background[i] as i32).abs() <= 2))
                .count();
            let covered = 1.0 - void as f64 / px.len() as f64;
            assert!(
                covered >= 0.6,
                "{scenario} {when:?} at {size}: the scene covers {:.0}% of its area",
                covered * 100.0
            );
        }
    }
}

/// At 1920x1080 the scene's smallest text is 14 pixels or more, and 21 with the talk preset.
#[test]
fn scene_text_is_large_enough_to_read_from_the_back() {
    for (scenario, when, least) in [
        ("quickstart", vec!["--at-ms", "20000"], 14.0),
        ("large", vec!["--at-ms", "60000"], 14.0),
        ("walkthrough", vec!["--beat", "4"], 14.0),
        ("walkthrough", vec!["--beat", "4", "--talk"], 21.0),
    ] {
        let Some(shot) = placed_shot(scenario, &when, "dark", "1920x1080") else {
            return;
        };
        let scene = rect_of(&shot.places["scene"]);
        let texts = shot.places["texts"].as_array().unwrap();
        let smallest = texts
            .iter()
            .filter(|t| overlaps(rect_of(&t["rect"]), scene))
            .map(|t| (t["size"].as_f64().unwrap(), t["text"].as_str().unwrap()))
            .fold((f64::MAX, ""), |a, b| if b.0 < a.0 { b } else { a });
        assert!(
            smallest.0 >= least - 0.05, // within a rounding of the scale
            "{scenario} {when:?}: {:?} is {:.1} px",
            smallest.1,
            smallest.0
        );
    }
}

/// Side by side, at 1280x720 and 1600x900: each half's scene text reads at 12 pixels or more,
/// and the lab's subject shows whole at the top: the storm's group with its title and every
/// member's row, acks-all's partition on each broker.
#[test]
fn side_by_side_text_reads_and_the_labs_subject_shows_its_rows() {
    for size in ["1280x720", "1600x900"] {
        for (lab, beat, subject) in [
            ("lab-rebalance-storm", "3", "Group analytics"),
            ("lab-acks-all", "2", "orders-0"),
        ] {
            let Some(shot) = placed_shot(lab, &["--beat", beat], "dark", size) else {
                return;
            };
            let scene = rect_of(&shot.places["scene"]);
            let within = |r: PxRect| {
                r[0] >= scene[0] - 0.5
                    && r[1] >= scene[1] - 0.5
                    && r[2] <= scene[2] + 0.5
                    && r[3] <= scene[3] + 0.5
            };
            let texts = shot.places["texts"].as_array().unwrap();
            let shown: Vec<(&str, f64, PxRect)> = texts
                .iter()
                .map(|t| {
                    (
                        t["text"].as_str().unwrap(),
                        t["size"].as_f64().unwrap(),
                        rect_of(&t["rect"]),
                    )
                })
                .filter(|(.., r)| overlaps(*r, scene))
                .collect();
            for (text, px, _) in &shown {
                assert!(
                    *px >= 12.0 - 0.05,
                    "{lab} beat {beat} at {size}: {text:?} is {px:.1} px"
                );
                assert!(
                    !text.contains("more"),
                    "{lab} beat {beat} at {size}: {text:?} folds the subject"
                );
            }
            assert!(
                shown
                    .iter()
                    .any(|(t, _, r)| t.starts_with(subject) && within(*r)),
                "{lab} beat {beat} at {size}: no whole {subject:?} in the left half"
            );
        }
        // Every member the storm's group has shows a whole row (the dead ones' included).
        let Some(shot) = placed_shot("lab-rebalance-storm", &["--beat", "3"], "dark", size) else {
            return;
        };
        let scene = rect_of(&shot.places["scene"]);
        let rows = shot.places["texts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| {
                let r = rect_of(&t["rect"]);
                let text = t["text"].as_str().unwrap();
                (text.starts_with("analytics-") || text.starts_with('#'))
                    && r[1] >= scene[1]
                    && r[3] <= scene[3]
                    && r[2] <= scene[2]
            })
            .count();
        assert!(rows >= 8, "{size}: {rows} of the storm's 8 members show");
    }
}

/// A lab's end, at 1280x720 and 1600x900: no text of the panels covers another's (the table
/// never runs under "How to prevent it" or "Where next"), every run's heading in the table is
/// whole, and so is every value it ends on.
#[test]
fn a_labs_end_table_keeps_to_its_own_area() {
    for built_in in kafkascope::tour::BUILT_IN_TOURS {
        let (tour, _) = kafkascope::tour::Tour::built_in(built_in.name).unwrap();
        let Some(lab) = tour.lab.as_ref() else {
            continue;
        };
        let base = tour.base_scenario().unwrap();
        let table = kafkascope::view::lab::table(lab, &base).unwrap();
        for size in ["1280x720", "1600x900"] {
            let Some(shot) = placed_shot(built_in.name, &["--end"], "dark", size) else {
                return;
            };
            let texts: Vec<(&str, PxRect, PxRect)> = shot.places["panel_texts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    (
                        t["text"].as_str().unwrap(),
                        rect_of(&t["rect"]),
                        rect_of(&t["visible"]),
                    )
                })
                .filter(|(_, _, v)| v[2] > v[0] + 0.5 && v[3] > v[1] + 0.5)
                .collect();
            let name = built_in.name;
            for (i, (a, _, va)) in texts.iter().enumerate() {
                for (b, _, vb) in &texts[i + 1..] {
                    let inner = |r: PxRect| [r[0] + 1.0, r[1] + 1.0, r[2] - 1.0, r[3] - 1.0];
                    assert!(
                        !overlaps(inner(*va), inner(*vb)),
                        "{name} at {size}: {a:?} {va:?} and {b:?} {vb:?} overlap"
                    );
                }
            }
            let whole = |text: &str| {
                texts.iter().any(|(t, r, v)| {
                    *t == text && (r[2] - v[2]).abs() < 0.5 && (r[0] - v[0]).abs() < 0.5
                })
            };
            for run in &table.runs {
                assert!(whole(run), "{name} at {size}: the run {run:?} is not whole");
            }
            for row in &table.rows {
                for (_, now) in &row.values {
                    let value = row.metric.format(*now);
                    assert!(
                        whole(&value),
                        "{name} at {size}: {:?} ends on {value:?}, not shown whole",
                        row.metric.name()
                    );
                }
            }
        }
    }
}

/// With the talk preset, at 1280x720 and 1920x1080: the stage takes at least 60% of the
/// window's height, no broker folds replicas into "+N more", the narration's buttons show at its
/// right, and every HW and LEO, dimmed or not, reads at 3:1 or better on the rendered pixels.
#[test]
fn the_talk_preset_keeps_its_stage_its_rows_its_buttons_and_dimmed_text_readable() {
    for size in ["1280x720", "1920x1080"] {
        let Some(shot) = placed_shot("walkthrough", &["--beat", "4", "--talk"], "light", size)
        else {
            return;
        };
        let scene = rect_of(&shot.places["scene"]);
        let stage = (scene[3] - scene[1]) / shot.h as f32;
        assert!(
            stage >= 0.6,
            "{size}: the stage is {:.0}% of the height",
            stage * 100.0
        );
        let texts = shot.places["texts"].as_array().unwrap();
        for t in texts {
            let text = t["text"].as_str().unwrap();
            assert!(
                !text.contains("more"),
                "{size}: {text:?} folds what the beat frames"
            );
        }
        // Each broker shows orders-2, the partition the beat frames, as a row of its own.
        let rows = shot.places["rows"].as_array().unwrap();
        for broker in 1..=3 {
            assert!(
                rows.iter()
                    .any(|r| r["partition"] == "orders-2" && r["broker"] == broker),
                "{size}: broker {broker} shows no orders-2 row"
            );
        }
        // The narration's buttons: ink in the right fifth of the band under the stage.
        let band = [
            shot.w as f32 * 0.8,
            scene[3] + 4.0,
            shot.w as f32,
            shot.h as f32,
        ];
        let px = shot.inside(band);
        let (panel, _) = mode(&px);
        let inked = px.iter().filter(|p| contrast(**p, panel) >= 3.0).count();
        assert!(
            inked > 200,
            "{size}: {inked} inked pixels where the buttons go"
        );
        // HW and LEO, lit and dimmed: the most contrast any of their pixels makes with what is behind
        // them (the most common colour around them).
        let callouts = rects(&shot.places["callouts"], "rect");
        let mut measured = 0;
        for t in texts {
            let text = t["text"].as_str().unwrap();
            let r = rect_of(&t["rect"]);
            if !text.contains("HW")
                || r[0] < scene[0]
                || r[2] > scene[2]
                || r[1] < scene[1]
                || r[3] > scene[3]
                || callouts.iter().any(|c| overlaps(*c, r))
            {
                continue;
            }
            let inner = shot.inside(r);
            let (behind, _) = mode(&shot.around(r, 3.0));
            let c = ink(&inner, behind);
            assert!(c >= 3.0, "{size}: dimmed {text:?} reads at {c:.2}:1");
            measured += 1;
        }
        assert!(
            measured >= 6,
            "{size}: only {measured} dimmed HW or LEO measured"
        );
    }
}

/// With the talk preset at 1920x1080 the tour's narration is 32-pixel type or larger: its lines,
/// measured on the pixels under the scene, are at least 36.5 pixels apart (the narration's font
/// lays its lines 1.14 em apart: 22-pixel type measures 25, 33-pixel type 38).
#[test]
fn the_talk_presets_narration_reads_at_32_pixels() {
    let Some(shot) = placed_shot(
        "walkthrough",
        &["--beat", "5", "--talk"],
        "light",
        "1920x1080",
    ) else {
        return;
    };
    let top = rect_of(&shot.places["scene"])[3] as usize;
    let half = shot.w / 2;
    let below: Vec<[u8; 3]> = (top..shot.h)
        .flat_map(|y| (0..half).map(move |x| (x, y)))
        .map(|(x, y)| shot.px[y * shot.w + x])
        .collect();
    let (panel, _) = mode(&below);
    let inked = |y: usize| {
        (0..half).any(|x| {
            let p = shot.px[y * shot.w + x];
            (0..3)
                .map(|i| (p[i] as i32 - panel[i] as i32).abs())
                .sum::<i32>()
                > 200
        })
    };
    // The lines of text, as runs of rows with ink, and the distance from each to the next.
    let mut starts = Vec::new();
    let mut was = false;
    for y in top..shot.h {
        let ink = inked(y);
        if ink && !was {
            starts.push(y);
        }
        was = ink;
    }
    let pitches: Vec<usize> = starts.windows(2).take(6).map(|w| w[1] - w[0]).collect();
    // The narration's paragraph is the most common spacing among the first lines.
    let (pitch, _) = mode(&pitches);
    assert!(
        pitch as f32 >= 36.5,
        "the narration's lines are {pitch} px apart (lines start at {starts:?})"
    );
}

/// The callouts on the rendered frame, where `shot --places` says they are: apart from each
/// other, inside the scene, their texts inside them, and over no text of what the beat frames.
#[test]
fn a_beats_callouts_cover_nothing_it_frames_on_the_rendered_frame() {
    for (beat, size) in [("4", "1920x1080"), ("7", "1280x720")] {
        let Some(shot) = placed_shot("walkthrough", &["--beat", beat], "dark", size) else {
            return;
        };
        let overlap = |a: PxRect, b: PxRect| {
            a[0] < b[2] - 1.0 && b[0] < a[2] - 1.0 && a[1] < b[3] - 1.0 && b[1] < a[3] - 1.0
        };
        let callouts: Vec<(String, PxRect)> = shot.places["callouts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["id"].as_str().unwrap().to_string(), rect_of(&c["rect"])))
            .collect();
        assert!(!callouts.is_empty(), "beat {beat}: no callouts placed");
        let scene = rect_of(&shot.places["scene"]);
        for (i, (id, r)) in callouts.iter().enumerate() {
            assert!(
                r[0] >= scene[0] - 1.0
                    && r[1] >= scene[1] - 1.0
                    && r[2] <= scene[2] + 1.0
                    && r[3] <= scene[3] + 1.0,
                "beat {beat} at {size}: callout {id} {r:?} leaves the scene {scene:?}"
            );
            for (other, o) in &callouts[i + 1..] {
                assert!(!overlap(*r, *o), "beat {beat}: {id} covers {other}");
            }
        }
        for t in shot.places["texts"].as_array().unwrap() {
            let (owner, rect) = (t["owner"].as_str().unwrap(), rect_of(&t["rect"]));
            let text = t["text"].as_str().unwrap();
            if let Some(id) = owner.strip_prefix("callout:") {
                let (_, c) = callouts.iter().find(|(i, _)| i == id).unwrap();
                assert!(
                    rect[0] >= c[0] - 1.0 && rect[2] <= c[2] + 1.0,
                    "beat {beat}: {text:?} runs out of callout {id}"
                );
            } else if t["focus"].as_bool().unwrap() {
                for (id, c) in &callouts {
                    assert!(
                        !overlap(rect, *c),
                        "beat {beat} at {size}: callout {id} covers {text:?} of {owner}"
                    );
                }
            }
        }
    }
}

/// The label of a message carrying the followed record sits on no title, HW, LEO or replica
/// row: at the end of beat 2 the ProduceRequest meets broker 3 at its corner, and the answers to
/// the followers' fetches leave it at its foot.
#[test]
fn message_labels_sit_on_no_title_hw_or_leo() {
    for size in ["1600x900", "1920x1080"] {
        let Some(shot) = placed_shot("walkthrough", &["--beat", "2"], "dark", size) else {
            return;
        };
        let texts: Vec<(&str, PxRect)> = shot.places["texts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["text"].as_str().unwrap(), rect_of(&t["rect"])))
            .collect();
        let is_label = |t: &str| {
            t.rsplit_once(": ").is_some_and(|(_, n)| {
                n.strip_suffix(" records")
                    .or(n.strip_suffix(" record"))
                    .is_some_and(|n| n.parse::<u64>().is_ok())
            })
        };
        let labels: Vec<&(&str, PxRect)> = texts.iter().filter(|(t, _)| is_label(t)).collect();
        assert!(
            !labels.is_empty(),
            "{size}: no message label at beat 2's end"
        );
        let kept_clear = |t: &str| {
            [
                "Broker ",
                "KRaft controller",
                "Producer ",
                "Group ",
                "Lag monitor",
            ]
            .iter()
            .any(|p| t.starts_with(p))
                || t.contains("HW ")
                || t.contains("LEO ")
        };
        let rows = rects(&shot.places["rows"], "rect");
        for (label, r) in &labels {
            for row in &rows {
                assert!(
                    !overlaps(*r, *row),
                    "{size}: {label:?} sits on a replica's row {row:?}"
                );
            }
            for (text, o) in texts.iter().filter(|(t, _)| kept_clear(t)) {
                let inner = |r: PxRect| [r[0] + 1.0, r[1] + 1.0, r[2] - 1.0, r[3] - 1.0];
                assert!(
                    !overlaps(inner(*r), inner(*o)),
                    "{size}: {label:?} sits on {text:?}"
                );
            }
        }
    }
}

/// A click on each broker's box opens its menu beside that box, inside the window, and not
/// over the box: at three window sizes, in both themes, at two text sizes.
#[test]
fn a_brokers_menu_opens_beside_the_broker_clicked() {
    for (size, theme, scale) in [
        ("1280x720", "dark", "1"),
        ("1600x900", "light", "1.5"),
        ("1920x1080", "dark", "1"),
    ] {
        let when = ["--at-ms", "20000", "--text-scale", scale];
        let Some(base) = placed_shot("quickstart", &when, theme, size) else {
            return;
        };
        let boxes = base.places["boxes"].as_array().unwrap().clone();
        assert_eq!(boxes.len(), 3, "{size}");
        for b in &boxes {
            let owner = b["owner"].as_str().unwrap();
            let id = owner.trim_start_matches("broker:");
            let r = rect_of(&b["rect"]);
            // The box's title row: its cells would pick a record to follow instead.
            let at = format!("{},{}", (r[0] + r[2]) / 2.0, r[1] + 8.0);
            let mut clicked = when.to_vec();
            clicked.extend(["--click", &at]);
            let shot = placed_shot("quickstart", &clicked, theme, size).unwrap();
            let title = format!("Broker {id}: ");
            let menu = shot.places["panel_texts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["text"].as_str().unwrap().starts_with(&title))
                .unwrap_or_else(|| panic!("{size}: no menu for {owner} after a click at {at}"));
            let m = rect_of(&menu["rect"]);
            let (w, h) = (shot.w as f32, shot.h as f32);
            assert!(
                m[0] >= 0.0 && m[1] >= 0.0 && m[2] <= w && m[3] <= h,
                "{size}: {owner}'s menu title {m:?} leaves the window"
            );
            // Beside the box: to its right or its left, not over it...
            assert!(
                m[0] >= r[2] || m[2] <= r[0],
                "{size}: {owner}'s menu title {m:?} lies over its box {r:?}"
            );
            let gap = if m[0] >= r[2] {
                m[0] - r[2]
            } else {
                r[0] - m[2]
            };
            // ...near it (the title is centred in a menu a few hundred pixels wide)...
            assert!(
                gap < 250.0,
                "{size}: {owner}'s menu {m:?} is {gap} px from its box {r:?}"
            );
            // ...and level with its top.
            assert!(
                (m[1] - r[1]).abs() < 60.0,
                "{size}: {owner}'s menu title {m:?} is not level with its box {r:?}"
            );
        }
    }
}
