//! Saving a file without overwriting one: the sandbox's scenarios and a talk's tour.

use std::path::{Path, PathBuf};

/// Writes `text` to `wanted`, or, when a file of that name exists, to the first free
/// `stem-N.ext` beside it: saving never overwrites what the user has. Returns the path written.
pub fn save_new(wanted: &Path, text: &str) -> std::io::Result<PathBuf> {
    use std::io::Write;
    let stem = wanted
        .file_stem()
        .map_or("saved".into(), |s| s.to_string_lossy());
    let ext = wanted
        .extension()
        .map_or("ron".into(), |e| e.to_string_lossy());
    for n in 0..1000 {
        let candidate = if n == 0 {
            wanted.to_path_buf()
        } else {
            wanted.with_file_name(format!("{stem}-{n}.{ext}"))
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(mut file) => {
                file.write_all(text.as_bytes())?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("a thousand files of that name exist"))
}

#[cfg(test)]
mod tests {
    use super::save_new;

    #[test]
    fn saving_never_overwrites_a_file() {
        let dir = std::env::temp_dir().join(format!("kafkascope-save-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let wanted = dir.join("run.ron");
        std::fs::write(&wanted, "mine").unwrap();
        let first = save_new(&wanted, "(name: \"a\")").unwrap();
        let second = save_new(&wanted, "(name: \"b\")").unwrap();
        assert!(first.ends_with("run-1.ron"), "{}", first.display());
        assert!(second.ends_with("run-2.ron"), "{}", second.display());
        assert_eq!(std::fs::read_to_string(&wanted).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "(name: \"a\")");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
