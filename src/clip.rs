//! Clips of a render's PNG frames: an animated GIF through the `gif` crate, and an MP4 through
//! `ffmpeg` when it is installed.
//!
//! A GIF frame keeps only the rectangle that changed since the frame before (the rest of a beat
//! mostly stands still), and an unchanged frame lengthens the one before it, so a clip of a
//! 1080p beat stays small enough to put in a README.

use std::path::Path;
use std::process::Command;

/// NeuQuant's sampling, 1 (best) to 30 (fastest): the gif crate's suggested compromise.
const QUANTISE_SPEED: i32 = 10;

/// Writes `frames` (PNG files of one size, in order) as a GIF that loops, at `fps`.
pub fn write_gif(frames: &[impl AsRef<Path>], fps: u32, out: &Path) -> Result<(), String> {
    let read = |path: &Path| {
        image::open(path)
            .map(|i| i.to_rgba8())
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    let Some(first) = frames.first() else {
        return Err("no frames to make a GIF of".to_string());
    };
    let first = read(first.as_ref())?;
    let (width, height) = first.dimensions();
    let side = |v: u32| {
        u16::try_from(v).map_err(|_| format!("a GIF is at most 65535 pixels a side, not {v}"))
    };
    let (w, h) = (side(width)?, side(height)?);
    let file = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let fail = |e: gif::EncodingError| format!("{}: {e}", out.display());
    let mut encoder = gif::Encoder::new(std::io::BufWriter::new(file), w, h, &[]).map_err(fail)?;
    encoder.set_repeat(gif::Repeat::Infinite).map_err(fail)?;
    let mut before: Option<image::RgbaImage> = None;
    let mut pending: Option<gif::Frame<'static>> = None;
    for (k, path) in frames.iter().enumerate() {
        let frame = if k == 0 {
            first.clone()
        } else {
            read(path.as_ref())?
        };
        if frame.dimensions() != (width, height) {
            return Err(format!(
                "{}: {}x{}, not {width}x{height} as the first frame",
                path.as_ref().display(),
                frame.width(),
                frame.height()
            ));
        }
        let delay = frame_delay(k, fps);
        match changed(before.as_ref(), &frame) {
            None => {
                if let Some(p) = pending.as_mut() {
                    p.delay = p.delay.saturating_add(delay);
                }
            }
            Some(rect) => {
                if let Some(p) = pending.take() {
                    encoder.write_frame(&p).map_err(fail)?;
                }
                let mut f = gif_frame(before.as_ref(), &frame, rect);
                f.delay = delay;
                pending = Some(f);
            }
        }
        before = Some(frame);
    }
    if let Some(p) = pending.take() {
        encoder.write_frame(&p).map_err(fail)?;
    }
    Ok(())
}

/// The palette index of a pixel that shows the frame before through.
const SEE_THROUGH: u8 = 255;

/// The `rect` of `now` as a GIF frame drawn over the one before: the pixels that changed in
/// their colours (at most 255, quantised when there are more), the rest see-through, so that
/// a frame's unchanged runs compress to almost nothing.
fn gif_frame(
    before: Option<&image::RgbaImage>,
    now: &image::RgbaImage,
    (x, y, w, h): (u32, u32, u32, u32),
) -> gif::Frame<'static> {
    let mut pixels: Vec<Option<[u8; 4]>> = Vec::with_capacity((w * h) as usize);
    for py in y..y + h {
        for px in x..x + w {
            let p = *now.get_pixel(px, py);
            let same = before.is_some_and(|b| *b.get_pixel(px, py) == p);
            pixels.push((!same).then_some([p[0], p[1], p[2], 255]));
        }
    }
    // The colours in the order they first appear (the same palette every time), while they fit.
    let mut exact = Some((Vec::<[u8; 4]>::new(), std::collections::HashMap::new()));
    for p in pixels.iter().flatten() {
        let Some((colours, index)) = exact.as_mut() else {
            break;
        };
        if !index.contains_key(p) {
            if colours.len() == usize::from(SEE_THROUGH) {
                exact = None;
                break;
            }
            index.insert(*p, colours.len() as u8);
            colours.push(*p);
        }
    }
    let (mut palette, buffer): (Vec<u8>, Vec<u8>) = match exact {
        Some((colours, index)) => (
            colours.iter().flat_map(|c| [c[0], c[1], c[2]]).collect(),
            pixels
                .iter()
                .map(|p| p.map_or(SEE_THROUGH, |p| index[&p]))
                .collect(),
        ),
        None => {
            let changed: Vec<u8> = pixels.iter().flatten().flatten().copied().collect();
            let quant =
                color_quant::NeuQuant::new(QUANTISE_SPEED, usize::from(SEE_THROUGH), &changed);
            let buffer = pixels
                .iter()
                .map(|p| p.map_or(SEE_THROUGH, |p| quant.index_of(&p) as u8))
                .collect();
            (quant.color_map_rgb(), buffer)
        }
    };
    palette.resize(256 * 3, 0);
    gif::Frame {
        width: w as u16,
        height: h as u16,
        left: x as u16,
        top: y as u16,
        buffer: std::borrow::Cow::Owned(buffer),
        palette: Some(palette),
        transparent: Some(SEE_THROUGH),
        dispose: gif::DisposalMethod::Keep,
        ..gif::Frame::default()
    }
}

/// Frame `k`'s delay in the hundredths of a second GIF counts in: rounded so that the frames
/// keep to `fps` on average (30 fps alternates 3 and 4).
fn frame_delay(k: usize, fps: u32) -> u16 {
    let at = |k: usize| (k as u64 * 100 + u64::from(fps) / 2) / u64::from(fps);
    (at(k + 1) - at(k)) as u16
}

/// The rectangle (x, y, width, height) of `now` that differs from `before`; all of it when there
/// is no frame before, `None` when nothing changed.
fn changed(
    before: Option<&image::RgbaImage>,
    now: &image::RgbaImage,
) -> Option<(u32, u32, u32, u32)> {
    let Some(before) = before else {
        return Some((0, 0, now.width(), now.height()));
    };
    let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
    for (x, y, p) in now.enumerate_pixels() {
        if before.get_pixel(x, y) != p {
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
    }
    (x0 != u32::MAX).then(|| (x0, y0, x1 - x0 + 1, y1 - y0 + 1))
}

/// Says whether `ffmpeg` can be run, and if not, what to install.
pub fn check_ffmpeg() -> Result<(), String> {
    match Command::new("ffmpeg").arg("-version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err(
            "--mp4 needs ffmpeg on the PATH: install it (Debian and Ubuntu: apt install \
                  ffmpeg; macOS: brew install ffmpeg; Windows: winget install ffmpeg), or \
                  leave out --mp4 and use the PNG frames"
                .to_string(),
        ),
    }
}

/// Encodes the frames in `folder` (`00001.png` on) as an H.264 MP4 at `fps`, playable anywhere
/// (yuv420p, sides rounded up to even).
pub fn write_mp4(folder: &Path, fps: u32, out: &Path) -> Result<(), String> {
    let output = Command::new("ffmpeg")
        .args([
            "-y",
            "-loglevel",
            "error",
            "-framerate",
            &fps.to_string(),
            "-i",
        ])
        .arg(folder.join("%05d.png"))
        .args([
            "-vf",
            "pad=ceil(iw/2)*2:ceil(ih/2)*2",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-movflags",
            "+faststart",
        ])
        .arg(out)
        .output()
        .map_err(|e| format!("running ffmpeg: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "ffmpeg could not write {}: {}",
            out.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gif_delays_keep_to_the_frame_rate() {
        // 30 fps in hundredths: 3, 4, 3, ... one second is 100 hundredths.
        let second: u32 = (0..30).map(|k| u32::from(frame_delay(k, 30))).sum();
        assert_eq!(second, 100);
        assert_eq!(frame_delay(0, 10), 10);
        let second: u32 = (0..24).map(|k| u32::from(frame_delay(k, 24))).sum();
        assert_eq!(second, 100);
    }

    #[test]
    fn only_the_changed_rectangle_is_kept() {
        let a = image::RgbaImage::from_pixel(8, 6, image::Rgba([0, 0, 0, 255]));
        assert_eq!(changed(None, &a), Some((0, 0, 8, 6)));
        assert_eq!(changed(Some(&a), &a), None);
        let mut b = a.clone();
        b.put_pixel(2, 1, image::Rgba([255, 0, 0, 255]));
        b.put_pixel(5, 4, image::Rgba([0, 255, 0, 255]));
        assert_eq!(changed(Some(&a), &b), Some((2, 1, 4, 4)));
    }

    #[test]
    fn a_gif_of_frames_decodes_to_their_pictures() {
        let dir = std::env::temp_dir().join(format!("kafkascope-gif-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut paths = Vec::new();
        for k in 0..4u8 {
            let mut img = image::RgbaImage::from_pixel(16, 8, image::Rgba([20, 30, 40, 255]));
            // A square that moves, and a frame (the third) that repeats the second.
            let x = u32::from(k.min(2)) * 4;
            for dx in 0..4 {
                img.put_pixel(x + dx, 2, image::Rgba([250, 200, 10, 255]));
            }
            let p = dir.join(format!("{:05}.png", k + 1));
            img.save(&p).unwrap();
            paths.push(p);
        }
        let out = dir.join("clip.gif");
        write_gif(&paths, 10, &out).unwrap();
        let mut options = gif::DecodeOptions::new();
        options.set_color_output(gif::ColorOutput::RGBA);
        let mut decoder = options
            .read_info(std::fs::File::open(&out).unwrap())
            .unwrap();
        let mut delays = Vec::new();
        let mut rects = Vec::new();
        // Each frame drawn over the ones before, as a viewer does, shows its picture exactly
        // (these have few colours, so none is quantised away).
        let mut canvas = image::RgbaImage::new(16, 8);
        let shown = [0, 1, 2];
        while let Some(f) = decoder.read_next_frame().unwrap() {
            delays.push(f.delay);
            rects.push((f.left, f.top, f.width, f.height));
            for (i, px) in f.buffer.chunks_exact(4).enumerate() {
                if px[3] != 0 {
                    let x = u32::from(f.left) + i as u32 % u32::from(f.width);
                    let y = u32::from(f.top) + i as u32 / u32::from(f.width);
                    canvas.put_pixel(x, y, image::Rgba([px[0], px[1], px[2], px[3]]));
                }
            }
            let want = image::open(&paths[shown[rects.len() - 1]])
                .unwrap()
                .to_rgba8();
            assert!(canvas == want, "frame {} differs", rects.len());
        }
        // Three frames: the whole first, then only what moved; the repeat lengthens the last.
        assert_eq!(delays, [10, 10, 20]);
        assert_eq!(rects[0], (0, 0, 16, 8));
        assert_eq!(rects[1], (0, 2, 8, 1));
        assert_eq!(rects[2], (4, 2, 8, 1));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
