//! `kafkascope shot`: render the scene at a sim time, write it to a PNG and exit. The app is the
//! same; it opens paused at the instant asked for and waits a few frames for the GPU to have
//! everything (pipelines, glyphs) before it takes the picture.

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};

use super::Options;

/// Frames drawn before the picture: pipelines and glyph atlases are ready by then.
const SETTLE_FRAMES: u32 = 20;

pub(super) fn plugin(app: &mut App) {
    app.add_systems(Last, take_shot);
}

fn take_shot(mut commands: Commands, options: Res<Options>, mut frames: Local<u32>) {
    let Some(path) = options.shot.clone() else {
        return;
    };
    *frames += 1;
    if *frames != SETTLE_FRAMES {
        return;
    }
    let mut save = save_to_disk(path.clone());
    commands.spawn(Screenshot::primary_window()).observe(
        move |captured: On<ScreenshotCaptured>, mut exit: MessageWriter<AppExit>| {
            save(captured);
            if path.is_file() {
                exit.write(AppExit::Success);
            } else {
                error!("the screenshot could not be written to {}", path.display());
                exit.write(AppExit::from_code(1));
            }
        },
    );
}
