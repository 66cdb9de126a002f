//! The real Kokoro-82M text-to-speech package (`fixtures/real/kokoro-tts`,
//! installed by `scripts/real_models.sh`): `wfstudio run` speaks exactly
//! what onnxruntime fed directly says (tests/reference/kokoro_reference.py),
//! writes a 24 kHz 16-bit WAV, speaks plain text through espeak-ng, and
//! refuses bad requests before the model runs, each by name.

mod support;

use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wfstudio-kokoro-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// `wfstudio run` on the package with `--prompt` and `--input` flags.
fn speak(package: &Path, phonemes: &str, extra: &[&str], out: &Path) -> (i32, String) {
    let mut args = vec!["run", s(package), "--prompt", phonemes, "--out", s(out)];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = support::run_wfstudio(&args);
    (code, format!("{stdout}{stderr}"))
}

#[test]
fn the_package_speaks_what_onnxruntime_fed_directly_says() {
    let (Some(package), Some(python)) = (support::kokoro(), support::python()) else {
        return;
    };
    let reference = support::workspace().join("tests/reference/kokoro_reference.py");
    let root = scratch("speak");
    let utterances = [
        ("koɲɲiʨiβa.", "jf_alpha", "1.0", Some(42_000)),
        ("aɾiɡatoː.", "jf_nezumi", "1.25", None),
        ("ohajoː ɡozaimasɯ.", "jm_kumo", "0.8", None),
    ];
    for (i, (phonemes, voice, speed, expected_samples)) in utterances.into_iter().enumerate() {
        let out = root.join(format!("run-{i}"));
        let voice_flag = format!("request.voice={voice}");
        let speed_flag = format!("request.speed={speed}");
        let (code, log) = speak(
            &package,
            phonemes,
            &["--input", &voice_flag, "--input", &speed_flag],
            &out,
        );
        assert_eq!(code, 0, "{phonemes}: {log}");
        let direct = root.join(format!("reference-{i}.npy"));
        support::python_stdout(
            &python,
            &[
                s(&reference),
                s(&package),
                phonemes,
                voice,
                speed,
                s(&direct),
            ],
        );
        let compare = "import numpy as np, sys\na, b = np.load(sys.argv[1]), np.load(sys.argv[2])\nassert a.shape == b.shape, (a.shape, b.shape)\nprint(a.size, float(np.abs(a - b).max()))";
        let report = support::python_stdout(
            &python,
            &["-c", compare, s(&out.join("audio.npy")), s(&direct)],
        );
        let (samples, worst) = report.trim().split_once(' ').expect("two numbers");
        let samples: usize = samples.parse().expect("count");
        let worst: f64 = worst.parse().expect("difference");
        eprintln!(
            "{phonemes} ({voice}, speed {speed}): {samples} samples, largest difference {worst:e}"
        );
        assert!(worst <= 1e-6, "{phonemes}: largest difference {worst}");
        assert_eq!(samples % 600, 0, "{phonemes}: {samples} samples");
        if let Some(expected) = expected_samples {
            assert_eq!(samples, expected, "{phonemes}");
        }
        let wav = hound::WavReader::open(out.join("audio.wav")).expect("a WAV file");
        let spec = wav.spec();
        assert_eq!(
            (spec.sample_rate, spec.bits_per_sample, spec.channels),
            (24_000, 16, 1)
        );
        assert_eq!(wav.len() as usize, samples);
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn plain_text_speaks_through_espeak_phonemes() {
    let Some(package) = support::kokoro() else {
        return;
    };
    let installed = std::process::Command::new("espeak-ng")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "espeak-ng is missing; scripts/setup.sh installs it"
        );
        eprintln!("skipping: espeak-ng is not installed");
        return;
    }
    let out = scratch("espeak");
    let (code, log) = speak(&package, "Hello world", &["--espeak", "en-us"], &out);
    assert_eq!(code, 0, "{log}");
    // The phonemes espeak-ng gives (their spelling varies with its
    // version) are shown, and spoken.
    assert!(
        log.contains("phonemes: \"Hello world\" -> \"") && log.contains("(espeak-ng -v en-us)"),
        "{log}"
    );
    let wav = hound::WavReader::open(out.join("audio.wav")).expect("a WAV file");
    assert!(wav.len() > 12_000, "{} samples", wav.len());
    let (code, log) = speak(&package, "Hello", &["--espeak", "no-such-voice"], &out);
    assert_ne!(code, 0);
    assert!(log.contains("espeak-ng -v no-such-voice"), "{log}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bad_requests_are_refused_by_name_before_the_model_runs() {
    let Some(package) = support::kokoro() else {
        return;
    };
    let out = scratch("refused");
    let too_long = "a".repeat(511);
    let cases: [(&str, &[&str], &str); 5] = [
        ("", &[], "--prompt is empty: give the text to encode"),
        (
            "kaX",
            &[],
            "tokenizer: characters outside the vocabulary: 'X' (U+0058)",
        ),
        (
            &too_long,
            &[],
            "input 'request.input_ids' has 513 tokens, more than the 512 the model takes (model.max_sequence_length)",
        ),
        (
            "ka",
            &["--input", "request.voice=7"],
            "input 'request.voice' is 7, not one of its 5 values: 0 jf_alpha, 1 jf_gongitsune, 2 jf_nezumi, 3 jf_tebukuro, 4 jm_kumo",
        ),
        (
            "ka",
            &["--input", "request.voice=af_heart"],
            "\"af_heart\" is not one of its values: jf_alpha, jf_gongitsune, jf_nezumi, jf_tebukuro, jm_kumo",
        ),
    ];
    for (phonemes, extra, message) in cases {
        let (code, log) = speak(&package, phonemes, extra, &out);
        assert_ne!(code, 0, "{phonemes:?} {extra:?} ran");
        assert!(log.contains(message), "{phonemes:?} {extra:?}: {log}");
        assert!(
            !out.join("audio.wav").exists(),
            "a refused request wrote audio"
        );
    }
    // Token ids without a phoneme (the pads alone), from any source.
    let (code, stdout, stderr) = support::run_wfstudio(&[
        "run",
        s(&package),
        "--prompt-tokens",
        "0,0",
        "--out",
        s(&out),
    ]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("input 'request.input_ids' is 2 long, outside 3..=512"),
        "{stdout}{stderr}"
    );
    // The longest utterance the model takes still speaks.
    let (code, log) = speak(&package, &"a".repeat(510), &["--threads", "2"], &out);
    assert_eq!(code, 0, "510 phonemes: {log}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_nan_speed_is_refused_through_the_library_too() {
    let Some(package) = support::kokoro() else {
        return;
    };
    if !support::runtime_available() {
        return;
    }
    use wfstudio_runner::{Data, LoadOptions, RunControl, Runner, Tensor};
    let mut runner = Runner::load(&package, &LoadOptions::default()).expect("loads");
    assert_eq!(
        runner.input_labels("request.voice").map(<[String]>::len),
        Some(5)
    );
    let ids = Tensor::new(vec![1, 4], Data::I64(vec![0, 53, 43, 0])).expect("ids");
    let speed = Tensor::new(vec![1], Data::F32(vec![f32::NAN])).expect("speed");
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let error = runner
        .run(
            [("request.input_ids", ids), ("request.speed", speed)],
            RunControl {
                observer: None,
                cancel: &cancel,
                keep_bytes: 0,
                reuse: None,
            },
        )
        .expect_err("refused");
    assert!(
        error
            .to_string()
            .contains("input 'request.speed' holds NaN (element 0)"),
        "{error}"
    );
}

#[test]
fn a_missing_or_truncated_model_is_a_clear_error() {
    let Some(package) = support::kokoro() else {
        return;
    };
    let root = scratch("broken");
    std::fs::create_dir_all(&root).expect("mkdir");
    for entry in [
        "inference_metadata.yaml",
        "tokenizer.json",
        "policies",
        "recipes",
    ] {
        let (from, to) = (package.join(entry), root.join(entry));
        if from.is_dir() {
            std::fs::create_dir_all(&to).expect("mkdir");
            for file in std::fs::read_dir(&from).expect("read_dir") {
                let file = file.expect("entry").path();
                std::fs::copy(&file, to.join(file.file_name().expect("name"))).expect("copy");
            }
        } else {
            std::fs::copy(&from, &to).expect("copy");
        }
    }
    let out = root.join("out");
    let (code, log) = speak(&root, "ka", &[], &out);
    assert_ne!(code, 0);
    assert!(
        log.contains("model/kokoro-v1.0.int8.onnx"),
        "the missing model is not named: {log}"
    );
    std::fs::create_dir_all(root.join("model")).expect("mkdir");
    let model = std::fs::read(package.join("model/kokoro-v1.0.int8.onnx")).expect("model");
    std::fs::write(
        root.join("model/kokoro-v1.0.int8.onnx"),
        &model[..model.len() / 2],
    )
    .expect("truncated");
    let (code, log) = speak(&root, "ka", &[], &out);
    assert_ne!(code, 0);
    assert!(
        log.contains("kokoro-v1.0.int8.onnx") && log.contains("ONNX Runtime refused the model"),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_studio_runs_it_and_shows_the_waveform_voice_and_timing() {
    let Some(package) = support::kokoro() else {
        return;
    };
    if support::xvfb_run().is_none() {
        return;
    }
    let png = scratch("studio").with_extension("png");
    support::screenshot_after_run(&package, &[], &png, "1400x900");
    let image = image::open(&png).expect("a PNG").to_rgba8();
    // The waveform, drawn in the preview's light blue.
    let wave = image
        .pixels()
        .filter(|p| p.0[..3] == [192, 222, 255])
        .count();
    assert!(wave > 1500, "waveform pixels: {wave}");
    let Some(text) = support::ocr(&png) else {
        return;
    };
    // The waveform's caption and the timing of the slowest steps
    // (`957.14 ms × 1`), and the voice by name (OCR reads `jf_alpha` with
    // or without its underscore).
    for expected in ["24000 Hz", "Slowest steps", "ms x 1"] {
        assert!(text.contains(expected), "{expected:?} not read in:\n{text}");
    }
    let letters: String = text.chars().filter(char::is_ascii_alphanumeric).collect();
    assert!(
        letters.contains("alpha"),
        "the voice's name not read in:\n{text}"
    );
    let _ = std::fs::remove_file(&png);
}
