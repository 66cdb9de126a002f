//! The recent-files list, kept in the user's config folder
//! (`$WFSTUDIO_CONFIG_DIR`, else `$XDG_CONFIG_HOME/wfstudio`, else
//! `~/.config/wfstudio`), which also holds crash-recovery copies.

use std::path::{Path, PathBuf};

/// How many entries the list keeps.
pub const MAX_RECENT: usize = 12;

/// The studio's default config folder, when one is known.
pub fn config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("WFSTUDIO_CONFIG_DIR") {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("wfstudio"))
}

/// The file that stores the list in `config`.
fn recent_file(config: Option<&Path>) -> Option<PathBuf> {
    Some(config?.join("recent.json"))
}

/// The list stored in `config`, newest first (missing or unreadable: empty).
pub fn load(config: Option<&Path>) -> Vec<PathBuf> {
    recent_file(config)
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Puts `path` first in `list` (once) and stores the list in `config`.
pub fn remember(
    config: Option<&Path>,
    list: &mut Vec<PathBuf>,
    path: &Path,
) -> std::io::Result<()> {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    list.retain(|p| p != &path);
    list.insert(0, path);
    list.truncate(MAX_RECENT);
    let Some(file) = recent_file(config) else {
        return Ok(());
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(list).map_err(std::io::Error::other)?;
    wfstudio_schema::save::write_atomic(&file, text.as_bytes())
}
