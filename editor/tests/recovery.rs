//! Crash recovery, tested by killing a real process: a child studio (this
//! test binary re-run as `victim`) opens a package, renames a value, waits
//! until the recovery copy is written and is then killed with SIGKILL. A new
//! studio opening the package gets the unsaved edit back (one undo shows the
//! saved file); saving removes the copy.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};
use wfstudio_core::edit::Command;
use wfstudio_editor::Studio;

const PACKAGE: &str = "WFSTUDIO_VICTIM_PACKAGE";
const CONFIG: &str = "WFSTUDIO_VICTIM_CONFIG";

/// Runs frames of `studio` headless until `done` holds (or 20 s pass).
fn frames_until(studio: &mut Studio, ctx: &egui::Context, done: impl Fn(&Studio) -> bool) {
    let start = Instant::now();
    while !done(studio) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out: {:?}",
            studio.status
        );
        let mut output = ctx.run_ui(egui::RawInput::default(), |ui| studio.show(ui));
        output.textures_delta.clear();
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn opened(studio: &Studio) -> bool {
    studio.settled() && studio.doc.is_some()
}

/// The child: edit, wait for the recovery copy, announce, then hang until killed.
#[test]
fn victim() {
    let (Some(package), Some(config)) = (std::env::var_os(PACKAGE), std::env::var_os(CONFIG))
    else {
        return; // only meaningful when started by `unsaved_edits_survive_a_kill`
    };
    let ctx = egui::Context::default();
    let mut studio = Studio::with_config_dir(|| {}, Some(PathBuf::from(config)));
    studio.open(Path::new(&package));
    frames_until(&mut studio, &ctx, opened);
    assert!(studio.apply(&Command::RenameValue {
        from: "decoded".into(),
        to: "survivor".into()
    }));
    frames_until(&mut studio, &ctx, |s| s.autosave_current());
    println!("READY");
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn unsaved_edits_survive_a_kill() {
    let root = std::env::temp_dir().join(format!("wfstudio-recovery-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (package, config) = (root.join("package"), root.join("config"));
    std::fs::create_dir_all(&package).expect("temp package");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/examples/tiny-denoise/inference_metadata.yaml");
    let file = package.join("inference_metadata.yaml");
    std::fs::copy(source, &file).expect("copy fixture");
    let on_disk = std::fs::read_to_string(&file).expect("read");

    let mut child = Process::new(std::env::current_exe().expect("test binary"))
        .args(["victim", "--exact", "--nocapture", "--test-threads=1"])
        .env(PACKAGE, &package)
        .env(CONFIG, &config)
        .stdout(Stdio::piped())
        .spawn()
        .expect("child starts");
    let stdout = child.stdout.take().expect("stdout");
    let ready = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("READY"));
    assert!(ready, "the child studio made its edit");
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("reaped");
    assert!(!status.success(), "killed, not exited: {status:?}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        on_disk,
        "the file itself was not written"
    );

    let ctx = egui::Context::default();
    let mut studio = Studio::with_config_dir(|| {}, Some(config.clone()));
    studio.open(&package);
    frames_until(&mut studio, &ctx, opened);
    let text = |s: &Studio| {
        wfstudio_schema::save::to_yaml(s.doc.as_ref().expect("doc").history.document(), None)
    };
    assert!(
        text(&studio).contains("value: survivor"),
        "{}",
        text(&studio)
    );
    assert!(studio.doc.as_ref().expect("doc").history.is_dirty());
    let status = studio.status.clone().expect("status").text;
    assert!(status.starts_with("Recovered unsaved edits of"), "{status}");

    studio.undo();
    assert!(
        text(&studio).contains("value: decoded"),
        "undo shows the saved file"
    );
    assert!(!studio.doc.as_ref().expect("doc").history.is_dirty());
    studio.redo();
    studio.save(None);
    frames_until(&mut studio, &ctx, |s| s.autosave_current());
    assert!(
        std::fs::read_to_string(&file)
            .expect("read")
            .contains("value: survivor")
    );
    let copies = std::fs::read_dir(config.join("recovery")).map_or(0, |d| d.count());
    assert_eq!(copies, 0, "saving removed the recovery copy");
    let _ = std::fs::remove_dir_all(&root);
}
