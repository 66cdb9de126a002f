//! The file-system side of writing a package: a staging folder beside the
//! destination (stale ones from interrupted writes cleared), model files
//! copied or hard-linked with their external data, everything flushed to
//! disk before the folder is renamed into place.

use super::PackageError;
use std::path::{Component, Path, PathBuf};

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

/// A fresh folder beside `out` for the package under construction. Staging
/// folders (and set-aside old packages) that an interrupted write of `out`
/// left behind, whose process is gone, are removed first.
pub(super) fn staging_dir(out: &Path) -> Result<PathBuf, PackageError> {
    let parent = parent_of(out);
    std::fs::create_dir_all(&parent).map_err(io(&parent))?;
    let prefix = staging_prefix(out);
    clear_stale(&parent, &prefix);
    for attempt in 0..1000u32 {
        let candidate = parent.join(format!("{prefix}{}-{attempt}", std::process::id()));
        match std::fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&candidate)(e)),
        }
    }
    Err(PackageError::Io {
        path: parent,
        reason: "no free staging folder name".into(),
    })
}

/// Removes `parent`'s entries named `PREFIX<pid>-...` whose process no
/// longer runs (known only where `/proc` lists processes).
fn clear_stale(parent: &Path, prefix: &str) {
    let proc = Path::new("/proc");
    if !proc.is_dir() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(prefix)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !proc.join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Writes `bytes` to `target`, creating its folder.
pub(super) fn write_file(target: &Path, bytes: &[u8]) -> Result<(), PackageError> {
    make_parent(target)?;
    std::fs::write(target, bytes).map_err(io(target))
}

fn make_parent(target: &Path) -> Result<(), PackageError> {
    match target.parent() {
        Some(parent) => std::fs::create_dir_all(parent).map_err(io(parent)),
        None => Ok(()),
    }
}

/// Copies `file` to `target`, or hard-links it when `link` (a symbolic
/// link would point outside the package, which the artifact rules refuse;
/// where a hard link cannot be made, across file systems, it is copied).
/// A symbolic link in the models folder is followed: the package gets the
/// file it points to. Returns whether it was linked.
pub(super) fn place(file: &Path, target: &Path, link: bool) -> Result<bool, PackageError> {
    make_parent(target)?;
    let file = &std::fs::canonicalize(file).map_err(io(file))?;
    if link && std::fs::hard_link(file, target).is_ok() {
        return Ok(true);
    }
    std::fs::copy(file, target).map_err(io(file))?;
    Ok(false)
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

/// Flushes one file or folder to disk.
fn sync(path: &Path) -> Result<(), PackageError> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(io(path))
}

/// Flushes the finished `staging` folder to disk and moves it to `out`. An
/// existing `out` is first moved aside under a name of this write's own;
/// if the new package cannot take its place the old one is put back.
pub(super) fn replace(staging: &Path, out: &Path) -> Result<(), PackageError> {
    sync_tree(staging)?;
    let parent = parent_of(out);
    if !out.exists() {
        std::fs::rename(staging, out).map_err(io(out))?;
        return sync(&parent);
    }
    let mut aside = staging.as_os_str().to_owned();
    aside.push(".replaced");
    let aside = PathBuf::from(aside);
    std::fs::rename(out, &aside).map_err(io(out))?;
    if let Err(e) = std::fs::rename(staging, out) {
        let _ = std::fs::rename(&aside, out);
        return Err(io(out)(e));
    }
    sync(&parent)?;
    // The new package is in place; a leftover old copy is only untidy (and
    // the next write of `out` clears it).
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

    #[test]
    fn staging_folders_of_gone_processes_are_cleared() {
        let root = std::env::temp_dir().join(format!("wfstudio-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let out = root.join("pkg");
        // Process ids are below 2^22 on Linux: 4999999 never runs.
        let stale = root.join(".pkg.wfstudio-4999999-0");
        let stale_aside = root.join(".pkg.wfstudio-4999999-1.replaced");
        let live = root.join(format!(".pkg.wfstudio-{}-7", std::process::id()));
        let other = root.join(".other.wfstudio-4999999-0");
        for dir in [&stale, &stale_aside, &live, &other] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        let fresh = staging_dir(&out).expect("staging");
        if Path::new("/proc").is_dir() {
            assert!(!stale.exists() && !stale_aside.exists());
        }
        assert!(live.exists() && other.exists() && fresh.is_dir());
        let _ = std::fs::remove_dir_all(&root);
    }
}
