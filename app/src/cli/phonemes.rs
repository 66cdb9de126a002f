//! Plain text to IPA phonemes with espeak-ng (a Debian package the set-up
//! installs), for packages whose tokenizer takes phoneme strings, such as
//! Kokoro's: `wfstudio run --espeak VOICE --prompt TEXT`. The phonemes are
//! then encoded like any prompt, so a character outside the vocabulary is
//! named, not dropped.

use anyhow::{Context, bail};
use std::io::Write;
use std::process::{Command, Stdio};

/// The IPA phonemes espeak-ng gives `text` in `voice` (e.g. `en-us`); its
/// clauses, one a line, joined by spaces.
pub fn espeak_ipa(text: &str, voice: &str) -> anyhow::Result<String> {
    // espeak-ng speaks an unknown voice in its default one, saying nothing.
    if !known_voice(voice)? {
        bail!("espeak-ng -v {voice}: no such voice (`espeak-ng --voices` lists them)");
    }
    let mut child = Command::new("espeak-ng")
        .args(["-q", "--ipa", "-v", voice, "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running espeak-ng (install the Debian package espeak-ng)")?;
    // The text goes in from a thread while the phonemes are read, so a long
    // text cannot fill both pipes and stall.
    let writer = child.stdin.take().map(|mut stdin| {
        let text = text.to_string();
        std::thread::spawn(move || stdin.write_all(text.as_bytes()))
    });
    let output = child.wait_with_output().context("running espeak-ng")?;
    if let Some(writer) = writer {
        writer
            .join()
            .map_err(|_| anyhow::anyhow!("writing to espeak-ng panicked"))?
            .context("writing to espeak-ng")?;
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() || !stderr.trim().is_empty() {
        bail!("espeak-ng -v {voice}: {}", stderr.trim());
    }
    let ipa = String::from_utf8(output.stdout).context("espeak-ng wrote other than UTF-8")?;
    let phonemes: Vec<&str> = ipa
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if phonemes.is_empty() {
        bail!("espeak-ng -v {voice} made no phonemes of {text:?}");
    }
    Ok(phonemes.join(" "))
}

/// Whether espeak-ng has `voice`: a language (`en-us`), a voice name or a
/// voice file of `espeak-ng --voices`, in any case.
fn known_voice(voice: &str) -> anyhow::Result<bool> {
    let output = Command::new("espeak-ng")
        .arg("--voices")
        .output()
        .context("running espeak-ng (install the Debian package espeak-ng)")?;
    let listing = String::from_utf8_lossy(&output.stdout);
    let wanted = voice.to_ascii_lowercase();
    Ok(listing.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let file = fields.get(4).and_then(|f| f.rsplit('/').next());
        [fields.get(1).copied(), fields.get(3).copied(), file]
            .into_iter()
            .flatten()
            .any(|name| name.to_ascii_lowercase() == wanted)
    }))
}
