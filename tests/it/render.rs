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
    let prefix = display()?;
    let dir = std::env::temp_dir().join(format!("kafkascope-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{scenario}-{tag}-{theme}.png"));
    let mut args = vec!["shot", scenario];
    args.extend(when);
    args.extend([
        "--out",
        out.to_str().unwrap(),
        "--size",
        "1600x900",
        "--theme",
        theme,
    ]);
    let result = app(&prefix).args(args).output().expect("the shot runs");
    assert!(
        result.status.success(),
        "shot {scenario} failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    Some(out)
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
fn the_talk_preset_shows_only_the_narration_and_the_lag_monitor() {
    let Some(path) = beat_shot("walkthrough", 8, "dark", &["--talk"]) else {
        return;
    };
    let (w, h, px) = pixels(&path);
    // The talk preset is light whatever the theme asked, and has no transport bar: the top rows
    // are the scene's background, not a panel.
    let palette = Palette::of(Theme::Light);
    let top = count_in((w, h), &px, (0.0, 0.0, 0.6, 0.02), palette.background);
    let region = (w as f32 * 0.6) * (h as f32 * 0.02);
    assert!(
        top as f32 > region * 0.9,
        "{top} of {region} pixels in the top rows are background: a panel is there"
    );
    let light = count(&px, palette.background) + count(&px, palette.panel);
    assert!(
        light > px.len() / 3,
        "{light} light pixels: not the light theme"
    );
    // The lag monitor's panel on the right, with its numbers.
    let right = (0.8, 0.0, 1.0, 0.3);
    let panel = count_in((w, h), &px, right, palette.panel);
    let region = (w as f32 * 0.2) * (h as f32 * 0.3);
    assert!(
        panel as f32 > region * 0.5,
        "{panel} of {region} panel pixels: no lag monitor"
    );
    // Its text: dark strokes on the light panel (antialiased, so counted by lightness).
    let (w0, h0) = (w as usize, h as usize);
    let dark = (0..h0 * 3 / 10)
        .flat_map(|y| (w0 * 80 / 100..w0).map(move |x| y * w0 + x))
        .filter(|i| {
            let p = px[*i];
            (u32::from(p[0]) + u32::from(p[1]) + u32::from(p[2])) < 3 * 150
        })
        .count();
    assert!(dark > 300, "{dark} dark pixels: no text in the lag monitor");
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
