//! `kafkascope render`: a tour's beats as numbered PNG frames, for a speaker's recording. Frame
//! k of a beat shows the instant k/fps of wall time into it at the beat's speed, and the app's
//! own clock moves by exactly 1/fps a frame, so animations land on the same pixels every time:
//! the same call writes the same bytes, and a re-render after a fix can be diffed.
//!
//! Each beat is opened as a reader opens it (paused at its start, settled for a few frames that
//! are not written), then started; at a hold, `--hold-s` adds frames of the paused scene before
//! the beat goes on, as a speaker pressing Next would.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};
use bevy::time::TimeUpdateStrategy;

use super::InputSet;
use super::playback::{Control, Playback};
use super::tour::{TourPlay, cue};
use crate::view::tour::{Place, Stage, Step};

/// What to render.
#[derive(Debug, Clone)]
pub struct Job {
    /// The beats (indices into the tour's), in the order to render them.
    pub beats: Vec<usize>,
    pub fps: u32,
    /// Frames of the paused scene added at each hold.
    pub hold_frames: u32,
    /// Also a still of each beat at its end, settled, as `shot --beat` shows it.
    pub stills: bool,
    pub out: PathBuf,
}

/// What a render wrote, beat by beat.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    pub beats: Vec<BeatFrames>,
}

/// A beat's frames, in order, and its still.
#[derive(Debug, Clone)]
pub struct BeatFrames {
    /// The beat's index.
    pub beat: usize,
    pub frames: Vec<PathBuf>,
    pub still: Option<PathBuf>,
}

/// Where beat `beat` (an index)'s frames go.
pub fn beat_folder(out: &Path, beat: usize) -> PathBuf {
    out.join(format!("beat-{:02}", beat + 1))
}

/// A file of beat `beat` (an index) beside its folder: its still (`png`), its clips (`gif`,
/// `mp4`).
pub fn beat_file(out: &Path, beat: usize, extension: &str) -> PathBuf {
    out.join(format!("beat-{:02}.{extension}", beat + 1))
}

fn frame_path(out: &Path, beat: usize, frame: usize) -> PathBuf {
    beat_folder(out, beat).join(format!("{frame:05}.png"))
}

/// Whether a file is one of a render's frames (a re-render replaces them all).
pub fn is_frame(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "png")
        && path
            .file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|s| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit()))
}

/// Frames drawn at a beat's start before it plays, and at its end before its still: the scene
/// has snapped to the beat and its callouts have faded in by then.
const SETTLE_FRAMES: u32 = 20;

/// The sim instant of frame `k` (from 1) of a stretch that starts at `from_ms`: k/fps of wall
/// time at `speed`, computed from k (not summed frame by frame, so it never drifts). The
/// fraction of a millisecond moves the messages between the model's steps, as live play does.
pub fn frame_instant(from_ms: u64, k: u64, fps: u32, speed: f64) -> f64 {
    from_ms as f64 + k as f64 * 1000.0 * speed / f64::from(fps)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Paused at the beat's start: frames that are not written.
    Settle(u32),
    /// Playing a stretch from `from_ms` (the beat's start, or the hold it went on from); `k`
    /// frames of it drawn.
    Play {
        from_ms: u64,
        k: u64,
    },
    /// Paused at a hold: frames still to write before going on.
    Hold(u32),
    /// At the beat's end: frames to settle before its still.
    Still(u32),
    Done,
}

#[derive(Resource)]
struct Driver {
    job: Job,
    /// The beat being rendered: an index into `job.beats`.
    next: usize,
    phase: Phase,
    /// Where this frame's picture goes, if it is written.
    shoot: Option<PathBuf>,
    requested: usize,
    /// Pictures written, and what went wrong writing them.
    written: Arc<Mutex<(usize, Vec<String>)>>,
    rendered: Rendered,
    /// The result, for [`render`] once the app has exited.
    out: Arc<Mutex<Option<Result<Rendered, String>>>>,
}

/// Renders `job` in a window opened as `options` say (a tour, paused at the job's first beat).
pub fn render(mut options: super::Options, job: Job) -> Result<Rendered, String> {
    let first = *job
        .beats
        .first()
        .ok_or_else(|| "no beat to render".to_string())?;
    let Some(open) = options.tour.as_mut() else {
        return Err("a render plays a tour".to_string());
    };
    open.beat = first;
    open.at_end = false;
    options.at_ms = open.tour.beats[first].from_ms;
    options.paused = true;
    let fps = job.fps;
    let mut app = super::window_app_with(options, true);
    let out = Arc::new(Mutex::new(None));
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
        1.0 / f64::from(fps),
    )))
    .insert_resource(Driver {
        job,
        next: 0,
        phase: Phase::Settle(SETTLE_FRAMES),
        shoot: None,
        requested: 0,
        written: Arc::default(),
        rendered: Rendered::default(),
        out: out.clone(),
    })
    .add_systems(
        Update,
        drive
            .in_set(InputSet::Read)
            .run_if(resource_exists::<TourPlay>),
    )
    .add_systems(Last, (shoot, finish).chain());
    let exit = app.run();
    let result = out.lock().map_err(|e| e.to_string())?.take();
    match (result, exit) {
        (Some(result), _) => result,
        (None, AppExit::Success) => Err("the window closed before the render ended".to_string()),
        (None, AppExit::Error(code)) => Err(format!("the window app stopped with error {code}")),
    }
}

fn drive(
    mut driver: ResMut<Driver>,
    mut tour: ResMut<TourPlay>,
    mut playback: ResMut<Playback>,
    mut controls: MessageWriter<Control>,
) {
    let d = &mut *driver;
    let Some(&beat) = d.job.beats.get(d.next) else {
        d.phase = Phase::Done;
        return;
    };
    let TourPlay { tour, place, .. } = &mut *tour;
    let speed = tour.beats[beat].speed;
    let mut go_on = |place: &mut Place, playback: &mut Playback| {
        let c = place.step(tour, Step::Next)?;
        cue(playback, &mut controls, c);
        Some(c.at_ms)
    };
    d.phase = match d.phase {
        Phase::Settle(0) => match go_on(place, &mut playback) {
            Some(from_ms) => Phase::Play { from_ms, k: 0 },
            None => Phase::Done,
        },
        Phase::Settle(n) => Phase::Settle(n - 1),
        Phase::Play { from_ms, k } => match place.stage {
            Stage::Held(_) => Phase::Hold(d.job.hold_frames),
            Stage::Ended | Stage::Finished if d.job.stills => Phase::Still(SETTLE_FRAMES),
            Stage::Ended | Stage::Finished => Phase::Done,
            Stage::Ready | Stage::Playing => Phase::Play { from_ms, k },
        },
        phase => phase,
    };
    match d.phase {
        Phase::Play { from_ms, k } => {
            let k = k + 1;
            playback.frame_target_ms = Some(frame_instant(from_ms, k, d.job.fps, speed));
            d.phase = Phase::Play { from_ms, k };
            d.shoot_frame(beat);
        }
        Phase::Hold(0) => {
            if let Some(from_ms) = go_on(place, &mut playback) {
                playback.frame_target_ms = Some(frame_instant(from_ms, 1, d.job.fps, speed));
                d.phase = Phase::Play { from_ms, k: 1 };
                d.shoot_frame(beat);
            }
        }
        Phase::Hold(n) => {
            d.phase = Phase::Hold(n - 1);
            d.shoot_frame(beat);
        }
        Phase::Still(0) => {
            let path = beat_file(&d.job.out, beat, "png");
            d.beat_frames(beat).still = Some(path.clone());
            d.shoot = Some(path);
            d.phase = Phase::Done;
        }
        Phase::Still(n) => d.phase = Phase::Still(n - 1),
        Phase::Settle(_) | Phase::Done => {}
    }
    // The beat is done: open the next one, paused at its start.
    if d.phase == Phase::Done {
        d.next += 1;
        if let Some(&next) = d.job.beats.get(d.next) {
            *place = Place::open(next, false);
            cue(&mut playback, &mut controls, place.cue(tour));
            d.phase = Phase::Settle(SETTLE_FRAMES);
        }
    }
}

impl Driver {
    fn beat_frames(&mut self, beat: usize) -> &mut BeatFrames {
        if self.rendered.beats.last().is_none_or(|b| b.beat != beat) {
            self.rendered.beats.push(BeatFrames {
                beat,
                frames: Vec::new(),
                still: None,
            });
        }
        self.rendered.beats.last_mut().expect("pushed")
    }

    fn shoot_frame(&mut self, beat: usize) {
        let out = self.job.out.clone();
        let frames = &mut self.beat_frames(beat).frames;
        let path = frame_path(&out, beat, frames.len() + 1);
        frames.push(path.clone());
        self.shoot = Some(path);
    }
}

/// Asks for this frame's picture; it is written when the GPU hands it back, a few frames on.
fn shoot(mut commands: Commands, mut driver: ResMut<Driver>) {
    let Some(path) = driver.shoot.take() else {
        return;
    };
    driver.requested += 1;
    let written = driver.written.clone();
    let mut save = save_to_disk(path.clone());
    commands.spawn(Screenshot::primary_window()).observe(
        move |captured: On<ScreenshotCaptured>| {
            save(captured);
            let mut w = written.lock().expect("one writer at a time");
            w.0 += 1;
            if !path.is_file() {
                w.1.push(format!("{} could not be written", path.display()));
            }
        },
    );
}

/// Exits once every beat is drawn and every picture asked for is written.
fn finish(driver: Res<Driver>, mut exit: MessageWriter<AppExit>) {
    if driver.next < driver.job.beats.len() {
        return;
    }
    let (written, errors) = {
        let w = driver.written.lock().expect("one writer at a time");
        (w.0, w.1.clone())
    };
    if written < driver.requested {
        return;
    }
    let result = if errors.is_empty() {
        Ok(driver.rendered.clone())
    } else {
        Err(errors.join("\n"))
    };
    if let Ok(mut out) = driver.out.lock()
        && out.is_none()
    {
        *out = Some(result);
        exit.write(AppExit::Success);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many frames a stretch of `span_ms` takes at `speed` and `fps`: until a frame reaches
    /// its end (the last one shows it), as `drive` plays it.
    fn stretch_frames(span_ms: u64, fps: u32, speed: f64) -> u64 {
        (1..)
            .find(|&k| frame_instant(0, k, fps, speed) >= span_ms as f64)
            .expect("a frame reaches any span")
    }

    #[test]
    fn a_stretch_takes_a_frame_per_fps_of_its_wall_time() {
        // 10 s of sim time at 1x and 30 fps: 300 frames, the last at the end.
        assert_eq!(stretch_frames(10_000, 30, 1.0), 300);
        assert_eq!(frame_instant(0, 300, 30, 1.0).floor(), 10_000.0);
        assert_eq!(frame_instant(0, 299, 30, 1.0).floor(), 9_966.0);
        // 7 ms at 1/500: 3.5 s of wall time, so 35 frames at 10 fps, 105 at 30.
        assert_eq!(stretch_frames(7, 10, 0.002), 35);
        assert_eq!(stretch_frames(7, 30, 0.002), 105);
        // A part of a frame still takes one.
        assert_eq!(stretch_frames(10, 30, 1.0), 1);
        assert_eq!(stretch_frames(34, 30, 1.0), 2);
    }

    #[test]
    fn frames_are_five_digit_pngs_in_a_folder_per_beat() {
        let out = Path::new("out");
        assert_eq!(frame_path(out, 4, 1), Path::new("out/beat-05/00001.png"));
        assert_eq!(beat_file(out, 4, "png"), Path::new("out/beat-05.png"));
        assert_eq!(beat_file(out, 4, "gif"), Path::new("out/beat-05.gif"));
        assert!(is_frame(Path::new("out/beat-05/00001.png")));
        assert!(!is_frame(Path::new("out/beat-05/notes.png")));
        assert!(!is_frame(Path::new("out/beat-05/00001.txt")));
    }
}
