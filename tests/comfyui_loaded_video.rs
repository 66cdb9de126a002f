//! Loaded videos: `LoadVideo` taken apart by `GetVideoComponents` is a
//! video input (`[1, frames, 3, height, width]` in 0..1) with its frame
//! rate beside it, its frames a batch of pictures that an upscale model
//! runs on, shown by `CreateVideo` into `SaveVideo` at the loaded rate;
//! the sound track it would add is dropped with a note. A run reads an
//! animated GIF into the input and its frame rate beside it. What the
//! lowering cannot make of a loaded video is refused by name.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    Expected, assert_refused, lowered, npy, pattern, s, scratch, stand_in_package, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// The pattern: `LoadVideo` through `GetVideoComponents`, each frame
/// upscaled by a model, into `CreateVideo` at the video's own frame rate
/// with its sound track, into `SaveVideo`.
fn loaded() -> Value {
    pattern("loaded-video")
}

#[test]
fn a_loaded_video_is_an_input_whose_frames_are_upscaled_at_its_own_rate() {
    let l = lowered(&loaded(), &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["inputs"]["request.loaded_video"]["contract"]["shape"],
        json!([
            1,
            "loaded_video_frames",
            3,
            "loaded_video_height",
            "loaded_video_width"
        ])
    );
    assert_eq!(w["inputs"]["request.loaded_video"]["role"]["role"], "media");
    let rate = &w["inputs"]["request.loaded_video_frame_rate"];
    assert_eq!(rate["default"], 24.0);
    assert_eq!(rate["source"]["name"], "loaded_video_frame_rate");
    let steps: Vec<(&str, &Value)> = w["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            let what = s.get("component").or(s.get("output")).expect("named");
            (s["kind"].as_str().expect("kind"), what)
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("invoke", &json!("frame_pictures")),
            ("invoke", &json!("upscaler")),
            ("invoke", &json!("upscaled_pixels")),
            ("invoke", &json!("batch_frames")),
            ("emit", &json!("video")),
            ("emit", &json!("video_frame_rate")),
        ]
    );
    assert_eq!(w["steps"][0]["inputs"]["video"], "request.loaded_video");
    assert_eq!(w["steps"][5]["value"], "request.loaded_video_frame_rate");
    assert_eq!(
        l.notes,
        [
            "node 6 (SaveVideo) saves the video with the sound track of node 1's video (LoadVideo), which the package does not carry (it reads a video's frames only): its video comes out silent, so add the sound track to the saved video afterwards"
        ]
    );
    // No sound track, no note; a written frame rate is the sink's own.
    let mut silent = loaded();
    silent["5"]["inputs"] = json!({"fps": 12.0, "images": ["4", 0]});
    let l = lowered(&silent, &Target::default());
    assert!(l.notes.is_empty(), "{:?}", l.notes);
    assert_eq!(
        workflow(&l)["inputs"]["request.video_frame_rate"]["default"],
        12.0
    );
}

/// A GIF of `frames` frames, 8×6, each a flat colour, 100 ms apiece.
fn gif(path: &std::path::Path, frames: usize) -> Vec<[u8; 3]> {
    use image::codecs::gif::GifEncoder;
    use image::{Delay, Frame, Rgba, RgbaImage};
    let colours: Vec<[u8; 3]> = (0..frames)
        .map(|i| [(40 * i) as u8, 255 - (40 * i) as u8, 100])
        .collect();
    let mut encoder = GifEncoder::new(std::fs::File::create(path).expect("gif"));
    for [r, g, b] in &colours {
        let picture = RgbaImage::from_pixel(8, 6, Rgba([*r, *g, *b, 255]));
        let delay = Delay::from_numer_denom_ms(100, 1);
        encoder
            .encode_frame(Frame::from_parts(picture, 0, 0, delay))
            .expect("frame");
    }
    colours
}

#[test]
fn a_run_shows_a_picked_gif_s_frames_at_its_frame_rate() {
    if !support::runtime_available() {
        return;
    }
    // The frames straight into the video: the output is the file's.
    let mut graph = loaded();
    graph["5"]["inputs"]["images"] = json!(["2", 0]);
    let root = scratch("loaded-video");
    let dir = stand_in_package(&root, "package", &graph);
    let clip = root.join("clip.gif");
    let colours = gif(&clip, 3);
    let out = root.join("out");
    let input = format!("request.loaded_video=@{}", s(&clip));
    let (code, stdout, stderr) =
        support::run_wfstudio(&["run", s(&dir), "--out", s(&out), "--input", &input]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stderr.contains("note: request.loaded_video_frame_rate <- 10.000 (the video's frame rate)"),
        "{stderr}"
    );
    let (shape, frames) = npy(&out.join("video.npy"));
    assert_eq!(shape, [1, 3, 3, 6, 8]);
    for (f, colour) in colours.iter().enumerate() {
        for (c, byte) in colour.iter().enumerate() {
            let plane = &frames[(f * 3 + c) * 48..(f * 3 + c + 1) * 48];
            let want = f32::from(*byte) / 255.0;
            assert!(
                plane.iter().all(|v| (v - want).abs() < 1e-6),
                "frame {f} channel {c}: {} for {want}",
                plane[0]
            );
        }
    }
    let (_, rate) = npy(&out.join("video_frame_rate.npy"));
    assert_eq!(rate, [10.0]);
    // The default recipe's generated video runs too.
    let (code, stdout, stderr) =
        support::run_wfstudio(&["run", s(&dir), "--out", s(&root.join("recipe-out"))]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (shape, _) = npy(&root.join("recipe-out/video.npy"));
    assert_eq!(shape, [1, 5, 3, 64, 64]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn what_the_lowering_cannot_make_of_a_loaded_video_is_refused_by_name() {
    let cases: Vec<(Value, Expected)> = vec![
        (
            {
                let mut g = loaded();
                g["5"]["inputs"]["fps"] = json!(["2", 1]);
                g
            },
            (
                "5",
                "CreateVideo",
                Some("fps"),
                "reads output 1 of node 2 (GetVideoComponents: the video's sound track) as its frame rate",
            ),
        ),
        (
            {
                let mut g = loaded();
                g["7"] = json!({"class_type": "LoadVideo", "inputs": {"file": "other.mp4"}});
                g["8"] = json!({"class_type": "GetVideoComponents", "inputs": {"video": ["7", 0]}});
                g["5"]["inputs"]["fps"] = json!(["8", 2]);
                g
            },
            (
                "5",
                "CreateVideo",
                None,
                "shows the frames of node 1's video at the frame rate of node 7's; the lowering keeps a loaded video's frame rate with its frames",
            ),
        ),
        (
            {
                let mut g = loaded();
                g["6"] = json!({"class_type": "SaveImage", "inputs": {"filename_prefix": "frames", "images": ["2", 0]}});
                g
            },
            (
                "1",
                "LoadVideo",
                None,
                "gives the video frames that picture sink 6 shows; the lowering shows a loaded video's frames as a video",
            ),
        ),
        (
            {
                let mut g = loaded();
                g["2"]["inputs"]["video"] = json!(["9", 0]);
                g["9"] = json!({"class_type": "CreateVideo", "inputs": {"fps": 8.0, "images": ["10", 0]}});
                g["10"] = json!({"class_type": "LoadImage", "inputs": {"image": "a.png"}});
                g
            },
            (
                "9",
                "CreateVideo",
                None,
                "feeds `video` of node 2 as its video, which the importer supports only from LoadVideo",
            ),
        ),
        (
            {
                let mut g = pattern("img2img");
                g["4"]["inputs"]["pixels"] = json!(["21", 0]);
                g["20"] = json!({"class_type": "LoadVideo", "inputs": {"file": "clip.mp4"}});
                g["21"] =
                    json!({"class_type": "GetVideoComponents", "inputs": {"video": ["20", 0]}});
                g
            },
            (
                "20",
                "LoadVideo",
                None,
                "gives the video frames that node 4 reads as a picture; the lowering shows a loaded video's frames in a video sink only",
            ),
        ),
    ];
    // Sampled frames, joined or not, at a loaded video's frame rate.
    let sampled = |joined: bool| {
        let mut g = pattern("video");
        g["20"] = json!({"class_type": "LoadVideo", "inputs": {"file": "clip.mp4"}});
        g["21"] = json!({"class_type": "GetVideoComponents", "inputs": {"video": ["20", 0]}});
        g["7"]["inputs"]["fps"] = json!(["21", 2]);
        if joined {
            g["30"] = json!({"class_type": "BatchImagesNode", "inputs": {"images.image0": ["6", 0], "images.image1": ["6", 0]}});
            g["7"]["inputs"]["images"] = json!(["30", 0]);
        }
        g
    };
    let cases = cases.into_iter().chain([false, true].map(|joined| {
        (
            sampled(joined),
            (
                "20",
                "LoadVideo",
                None,
                "gives the frame rate video sink 8 shows, but the package does not read its video; the lowering takes a loaded video's frame rate where its frames are shown or are a control video",
            ),
        )
    }));
    for (graph, expected) in cases {
        assert_refused(&graph, expected);
    }
}
