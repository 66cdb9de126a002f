//! The file-system side of writing a package: a staging folder beside the
//! destination (stale ones from interrupted writes cleared), model files
//! copied or hard-linked with their external data, everything flushed to
//! disk before the folder is renamed into place.

use super::PackageError;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// Maps an I/O error on `path` to a [`PackageError`].
fn io(path: &Path) -> impl Fn(std::io::Error) -> PackageError + '_ {
    move |e| PackageError::Io {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

/// Whether `path` is a folder with nothing in it.
pub(super) fn is_empty_dir(path: &Path) -> Result<bool, PackageError> {
    if !path.is_dir() {
        return Ok(false);
    }
    Ok(std::fs::read_dir(path).map_err(io(path))?.next().is_none())
}

/// Whether `relative` stays inside the folder it is joined to: relative,
/// with plain names only (no `..`, no root).
pub(super) fn stays_inside(relative: &str) -> bool {
    let path = Path::new(relative);
    !relative.is_empty()
        && !path.is_absolute()
        && path.components().all(|c| matches!(c, Component::Normal(_)))
}

/// The prefix of the staging folders made for `out` (`.NAME.wfstudio-`).
fn staging_prefix(out: &Path) -> String {
    let stem = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{stem}.wfstudio-")
}

fn parent_of(out: &Path) -> PathBuf {
    match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A package under construction: a fresh folder beside its destination
/// and the package paths written into it so far (each once: nothing is
/// ever written onto an existing entry, which could be a hard link into
/// the user's models folder).
pub(super) struct Staging {
    /// The folder.
    pub dir: PathBuf,
    /// Package path -> the source file placed there (`None`: bytes written).
    taken: BTreeMap<String, Option<PathBuf>>,
}

/// Staging folders and set-aside packages of a gone process are cleared
/// only once they are this old (a process id can hide in another pid
/// namespace).
const STALE_AFTER: Duration = Duration::from_secs(3600);

impl Staging {
    /// A fresh staging folder beside `out`. What an interrupted write of
    /// `out` left behind is tidied first: an old package set aside while
    /// `out` is missing is put back; staging folders and set-aside copies of
    /// a gone process older than an hour are removed.
    pub fn new(out: &Path) -> Result<Staging, PackageError> {
        let parent = parent_of(out);
        std::fs::create_dir_all(&parent).map_err(io(&parent))?;
        let prefix = staging_prefix(out);
        tidy(&parent, &prefix, out);
        for attempt in 0..1000u32 {
            let candidate = parent.join(format!("{prefix}{}-{attempt}", std::process::id()));
            match std::fs::create_dir(&candidate) {
                Ok(()) => {
                    return Ok(Staging {
                        dir: candidate,
                        taken: BTreeMap::new(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(&candidate)(e)),
            }
        }
        Err(PackageError::Io {
            path: parent,
            reason: "no free staging folder name".into(),
        })
    }

    /// Claims `relative` for `source`: false when the same source is
    /// already there, an error when something else is.
    fn claim(&mut self, relative: &str, source: Option<PathBuf>) -> Result<bool, PackageError> {
        match self.taken.get(relative) {
            Some(Some(earlier)) if source.as_ref() == Some(earlier) => Ok(false),
            Some(_) => Err(PackageError::Io {
                path: PathBuf::from(relative),
                reason: "two different files would go to this path of the package".into(),
            }),
            None => {
                self.taken.insert(relative.to_string(), source);
                Ok(true)
            }
        }
    }

    /// Writes `bytes` as the new file `relative`.
    pub fn write(&mut self, relative: &str, bytes: &[u8]) -> Result<(), PackageError> {
        self.claim(relative, None)?;
        let target = self.dir.join(relative);
        make_parent(&target)?;
        let mut file = create_new(&target)?;
        file.write_all(bytes).map_err(io(&target))
    }

    /// Copies `file` to `relative`, or hard-links it when `link` (a symbolic
    /// link would point outside the package, which the artifact rules
    /// refuse; where a hard link cannot be made, across file systems, it is
    /// copied). A symbolic link in the models folder is followed: the
    /// package gets the file it points to. Returns whether it was linked;
    /// the same file placed twice at one path is placed once.
    pub fn place(&mut self, relative: &str, file: &Path, link: bool) -> Result<bool, PackageError> {
        let file = std::fs::canonicalize(file).map_err(io(file))?;
        if !self.claim(relative, Some(file.clone()))? {
            return Ok(false);
        }
        let target = self.dir.join(relative);
        make_parent(&target)?;
        if link && std::fs::hard_link(&file, &target).is_ok() {
            return Ok(true);
        }
        let mut source = std::fs::File::open(&file).map_err(io(&file))?;
        let mut copy = create_new(&target)?;
        std::io::copy(&mut source, &mut copy).map_err(io(&file))?;
        Ok(false)
    }

    /// Flushes the package to disk and moves it to `out` ([`replace`]).
    pub fn finish(&self, out: &Path) -> Result<(), PackageError> {
        replace(&self.dir, out)
    }
}

fn make_parent(target: &Path) -> Result<(), PackageError> {
    match target.parent() {
        Some(parent) => std::fs::create_dir_all(parent).map_err(io(parent)),
        None => Ok(()),
    }
}

/// A new file at `target`; an existing entry is an error, never opened.
fn create_new(target: &Path) -> Result<std::fs::File, PackageError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(target)
        .map_err(io(target))
}

/// The process id of a staging entry named `PREFIX<pid>-<n>[.replaced]`,
/// and whether it is a set-aside old package.
fn staging_entry(name: &str, prefix: &str) -> Option<(u32, bool)> {
    let rest = name.strip_prefix(prefix)?;
    let (rest, aside) = match rest.strip_suffix(".replaced") {
        Some(rest) => (rest, true),
        None => (rest, false),
    };
    let (pid, attempt) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(pid) && digits(attempt)).then_some((pid.parse().ok()?, aside))
}

/// Tidies what interrupted writes of `out` left in `parent` (see
/// [`Staging::new`]); where `/proc` does not list processes, only the
/// set-aside package is put back.
fn tidy(parent: &Path, prefix: &str, out: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let proc = Path::new("/proc");
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((pid, aside)) = staging_entry(&name, prefix) else {
            continue;
        };
        let gone = proc.is_dir() && !proc.join(pid.to_string()).exists();
        if !gone {
            continue;
        }
        if aside && !out.exists() {
            let _ = std::fs::rename(entry.path(), out);
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Flushes every file and folder under `dir` (and `dir` itself) to disk.
fn sync_tree(dir: &Path) -> Result<(), PackageError> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            sync_tree(&path)?;
        } else {
            sync(&path)?;
        }
    }
    sync(dir)
}

/// Flushes one file or folder to disk (folders only where the system can:
/// Unix).
fn sync(path: &Path) -> Result<(), PackageError> {
    if !cfg!(unix) && path.is_dir() {
        return Ok(());
    }
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(io(path))
}

/// Flushes the finished `staging` folder to disk and moves it to `out`. An
/// existing `out` is first moved aside under a name of this write's own;
/// if the new package cannot take its place the old one is put back (and
/// where even that fails, [`Staging::new`] puts it back on the next write).
/// Once the package is in place, flushing the rename itself is best effort.
fn replace(staging: &Path, out: &Path) -> Result<(), PackageError> {
    sync_tree(staging)?;
    let parent = parent_of(out);
    if !out.exists() {
        std::fs::rename(staging, out).map_err(io(out))?;
        let _ = sync(&parent);
        return Ok(());
    }
    let mut aside = staging.as_os_str().to_owned();
    aside.push(".replaced");
    let aside = PathBuf::from(aside);
    std::fs::rename(out, &aside).map_err(io(out))?;
    if let Err(e) = std::fs::rename(staging, out) {
        let _ = std::fs::rename(&aside, out);
        return Err(io(out)(e));
    }
    let _ = sync(&parent);
    // The new package is in place; a leftover old copy is only untidy (and
    // a later write of `out` clears it).
    let _ = std::fs::remove_dir_all(&aside);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_names_stay_inside() {
        for inside in ["model.onnx.data", "weights/part.bin"] {
            assert!(stays_inside(inside), "{inside}");
        }
        for outside in ["", "../x.bin", "/etc/passwd", "a/../../b", "./a"] {
            assert!(!stays_inside(outside), "{outside}");
        }
    }

    fn age(dir: &Path, seconds: u64) {
        let then = std::time::SystemTime::now() - Duration::from_secs(seconds);
        std::fs::File::open(dir)
            .and_then(|f| f.set_modified(then))
            .expect("set the folder's time");
    }

    #[test]
    fn interrupted_writes_are_tidied_and_a_set_aside_package_is_put_back() {
        if !Path::new("/proc").is_dir() {
            return;
        }
        let root = std::env::temp_dir().join(format!("wfstudio-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let out = root.join("pkg");
        // Process ids are below 2^22 on Linux: 4999999 never runs.
        let old_gone = root.join(".pkg.wfstudio-4999999-0");
        let fresh_gone = root.join(".pkg.wfstudio-4999999-1");
        let aside = root.join(".pkg.wfstudio-4999999-2.replaced");
        let live = root.join(format!(".pkg.wfstudio-{}-7", std::process::id()));
        let unlike = root.join(".pkg.wfstudio-4999999-x");
        let other = root.join(".other.wfstudio-4999999-0");
        for dir in [&old_gone, &fresh_gone, &aside, &live, &unlike, &other] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::fs::write(aside.join("inference_metadata.yaml"), "kept").expect("write");
        for dir in [&old_gone, &live, &unlike, &other] {
            age(dir, 2 * STALE_AFTER.as_secs());
        }
        let staging = Staging::new(&out).expect("staging");
        assert!(
            !old_gone.exists(),
            "an old staging folder of a gone process stays"
        );
        assert_eq!(
            std::fs::read_to_string(out.join("inference_metadata.yaml")).expect("put back"),
            "kept"
        );
        for kept in [&fresh_gone, &live, &unlike, &other, &staging.dir] {
            assert!(kept.is_dir(), "{} was removed", kept.display());
        }
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn nothing_is_written_onto_an_earlier_entry_or_through_a_link() {
        let root = std::env::temp_dir().join(format!("wfstudio-claims-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("mkdir");
        let (weights, other) = (root.join("weights.bin"), root.join("other.bin"));
        std::fs::write(&weights, "weights").expect("write");
        std::fs::write(&other, "other").expect("write");
        let mut staging = Staging::new(&root.join("pkg")).expect("staging");
        staging
            .place("m/weights.bin", &weights, true)
            .expect("linked");
        assert!(
            !staging
                .place("m/weights.bin", &weights, true)
                .expect("again")
        );
        assert!(staging.place("m/weights.bin", &other, true).is_err());
        assert!(staging.write("m/weights.bin", b"clobbered").is_err());
        assert_eq!(std::fs::read_to_string(&weights).expect("read"), "weights");
        staging
            .write("recipes/default.json", b"{}")
            .expect("written");
        assert!(
            staging
                .place("recipes/default.json", &other, false)
                .is_err()
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
