//! AnimateDiff graphs (AnimateDiff-Evolved's Gen1 loaders): the motion
//! module is merged into the denoiser the package gets, which sees the
//! latent batch's pictures as one video's frames; the loader's beta
//! schedule is the table the sampler runs on (checked against the numpy
//! reference); `ADE_AnimateDiffCombine`, like every video sink, shows a
//! batch of pictures as one video; what the lowering cannot make is
//! refused by name.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    Expected, assert_refused, lowered, npy, package_and_run, pattern, scratch, workflow,
};
use wfstudio_core::comfyui::lower::{self, Target};

fn animatediff() -> Value {
    pattern("animatediff")
}

#[test]
fn the_motion_module_joins_the_denoiser_and_the_batch_becomes_one_video() {
    let l = lowered(&animatediff(), &Target::default());
    let w = workflow(&l);
    let parameters = &w["components"]["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(parameters["beta_schedule"], "sqrt_linear");
    assert_eq!(parameters["linear_end"], 0.012);
    assert_eq!(
        w["outputs"]["video"]["contract"]["shape"],
        json!([1, "frames", 3, "height", "width"])
    );
    assert_eq!(w["outputs"]["video"]["role"], "video");
    // The frames are the decode moved to 0..1, then stacked.
    let frames = w["steps"]
        .as_array()
        .and_then(|steps| steps.iter().find(|s| s["component"] == "batch_frames"))
        .expect("batch_frames");
    assert_eq!(frames["inputs"]["image"], "vae.image.pixels");
    assert_eq!(w["inputs"]["request.video_frame_rate"]["default"], 8.0);
    let note = l
        .notes
        .iter()
        .find(|n| n.contains("motion module"))
        .expect("a note on the motion module");
    assert_eq!(
        note,
        "`denoiser` is node 32's weights with AnimateDiff motion module 'mm_sd_v15_v2.ckpt' (node 27) at motion scale 1, injected as AnimateDiff-Evolved does (the checkpoint's GroupNorm layers normalising over all frames for v1 motion models), so that it sees a run's rows as one video's frames (run them together, neither split nor merged with another run's): export it with these merged"
    );
    // The loader is among the nodes the sampling loop comes from.
    assert!(
        l.provenance
            .iter()
            .any(|(path, nodes)| path.starts_with("pipeline.workflow.steps[")
                && nodes.contains(&"27".to_string())),
        "{:?}",
        l.provenance
    );
}

#[test]
fn an_animatediff_package_runs_its_frames_on_the_loaders_schedule() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("animatediff");
    let (dir, out) = package_and_run(&root, "animatediff", &animatediff());
    assert_eq!(npy(&out.join("latent.npy")).0, [8, 4, 6, 4]);
    let (shape, frames) = npy(&out.join("video.npy"));
    assert_eq!(shape, [1, 8, 3, 48, 32]);
    assert!(frames.iter().all(|v| (0.0..=1.0).contains(v)));
    let gif = std::fs::read(out.join("video.gif")).expect("gif");
    let decoded = image::AnimationDecoder::into_frames(
        image::codecs::gif::GifDecoder::new(std::io::Cursor::new(gif)).expect("a GIF"),
    )
    .collect_frames()
    .expect("frames");
    assert_eq!(decoded.len(), 8);
    // The run's latent against the numpy reference on AnimateDiff's
    // sqrt_linear table (betas evenly spaced from 0.00085 to 0.012).
    if let Some(python) = support::python() {
        let worst = support::lowering::numpy_disagreement(&python, &dir, &out, ("euler", "normal"));
        assert!(worst <= 1e-5, "worst |a - b| / (1 + |b|) = {worst}");
        // The video is the decode's pictures, in order, moved to 0..1.
        let check = "import numpy as np, onnxruntime as ort, sys
pkg, out = sys.argv[1], sys.argv[2]
s = ort.InferenceSession(pkg + '/vae_decoder/model.onnx', providers=['CPUExecutionProvider'])
x = s.run(None, {'latent': np.load(out + '/latent.npy')})[0]
want = np.clip((x + 1) / 2, 0, 1)[None]
got = np.load(out + '/video.npy')
assert got.shape == want.shape, (got.shape, want.shape)
print(float(np.max(np.abs(got - want))))";
        let worst: f64 = support::python_stdout(
            &python,
            &[
                "-c",
                check,
                support::lowering::s(&dir),
                support::lowering::s(&out),
            ],
        )
        .trim()
        .parse()
        .expect("a number");
        assert!(worst <= 1e-6, "frames vs (decode + 1) / 2: {worst}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn autoselect_is_taken_as_sqrt_linear_with_a_note() {
    let mut g = animatediff();
    g["27"]["inputs"]["beta_schedule"] = json!("autoselect");
    let l = lowered(&g, &Target::default());
    let parameters = &workflow(&l)["components"]["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(parameters["beta_schedule"], "sqrt_linear");
    assert!(
        l.notes.iter().any(|n| n.starts_with(
            "node 27 samples with beta_schedule 'autoselect', taken as sqrt_linear (AnimateDiff)"
        )),
        "{:?}",
        l.notes
    );
    // `use existing` keeps the checkpoint's own table; `linear
    // (AnimateDiff-SDXL)` ends its betas at 0.020.
    g["27"]["inputs"]["beta_schedule"] = json!("use existing");
    let l = lowered(&g, &Target::default());
    let parameters = &workflow(&l)["components"]["diffusion_schedule"]["contract"]["parameters"];
    assert!(parameters.get("beta_schedule").is_none(), "{parameters}");
    g["27"]["inputs"]["beta_schedule"] = json!("linear (AnimateDiff-SDXL)");
    let l = lowered(&g, &Target::default());
    let parameters = &workflow(&l)["components"]["diffusion_schedule"]["contract"]["parameters"];
    assert_eq!(
        (&parameters["beta_schedule"], &parameters["linear_end"]),
        (&json!("linear"), &json!(0.02))
    );
}

#[test]
fn the_gen1_loader_and_hotshot_schedule_lower_and_its_unbuilt_inputs_are_refused() {
    let mut g = animatediff();
    g["27"] = json!({"class_type": "ADE_AnimateDiffLoaderGen1", "inputs": {"model_name": "mm_sd_v15_v2.ckpt", "beta_schedule": "linear (HotshotXL/default)", "model": ["32", 0]}});
    let l = lowered(&g, &Target::default());
    let parameters = &workflow(&l)["components"]["diffusion_schedule"]["contract"]["parameters"];
    // HotshotXL's schedule is SD's own table.
    assert!(parameters.get("beta_schedule").is_none(), "{parameters}");
    assert_eq!(parameters["model_sampling"], "discrete");
    assert!(l.notes.iter().any(|n| n.contains("(node 27) at motion scale 1, injected as AnimateDiff-Evolved does (the checkpoint's GroupNorm layers normalising over all frames for v1 motion models)")), "{:?}", l.notes);
    g["27"]["inputs"]["scale_multival"] = json!(["51", 0]);
    g["51"] = json!({"class_type": "ADE_MultivalDynamic", "inputs": {"float_val": 1.1}});
    assert_refused(
        &g,
        (
            "27",
            "ADE_AnimateDiffLoaderGen1",
            Some("scale_multival"),
            "scales the motion module per frame or area, which the lowering does not build",
        ),
    );
}

#[test]
fn a_batch_of_pictures_in_any_video_sink_is_one_video() {
    let mut g = animatediff();
    g["27"] = json!(null);
    let g: serde_json::Map<String, Value> = g
        .as_object()
        .expect("graph")
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut g = Value::Object(g);
    g["7"]["inputs"]["model"] = json!(["32", 0]);
    g["44"] = json!({"class_type": "SaveAnimatedWEBP", "inputs": {"filename_prefix": "batch", "fps": 6.0, "lossless": false, "quality": 80, "method": "default", "images": ["10", 0]}});
    let l = lowered(&g, &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["outputs"]["video"]["contract"]["shape"],
        json!([1, "frames", 3, "height", "width"])
    );
    assert_eq!(w["inputs"]["request.video_frame_rate"]["default"], 6.0);
    assert!(!l.notes.iter().any(|n| n.contains("motion")));
}

#[test]
fn what_animatediff_graphs_the_lowering_cannot_make_are_refused_by_name() {
    let cases: Vec<(Value, Expected)> = vec![
        (
            {
                let mut g = animatediff();
                g["27"]["inputs"]["context_options"] = json!(["50", 0]);
                g["50"] = json!({"class_type": "ADE_StandardUniformContextOptions", "inputs": {"context_length": 16, "context_stride": 1, "context_overlap": 4}});
                g
            },
            (
                "27",
                "ADE_AnimateDiffLoaderWithContext",
                Some("context_options"),
                "slides context windows over the frames, sampling each window apart and blending them, which the lowering does not build",
            ),
        ),
        (
            {
                let mut g = animatediff();
                g["27"]["inputs"]["beta_schedule"] = json!("lcm >> sqrt_linear");
                g
            },
            (
                "27",
                "ADE_AnimateDiffLoaderWithContext",
                Some("beta_schedule"),
                "is 'lcm >> sqrt_linear', a schedule the lowering does not build",
            ),
        ),
        (
            {
                let mut g = animatediff();
                g["27"]["inputs"]["beta_schedule"] = json!("autoselect");
                g["27"]["inputs"]["model_name"] = json!("AnimateLCM_sd15_t2v.ckpt");
                g
            },
            (
                "27",
                "ADE_AnimateDiffLoaderWithContext",
                Some("beta_schedule"),
                "picks AnimateLCM's distilled schedule for this motion model, which the lowering does not take from an AnimateDiff loader",
            ),
        ),
        (
            {
                let mut g = animatediff();
                g["27"]["inputs"]["beta_schedule"] = json!("autoselect");
                g["27"]["inputs"]["model_name"] = json!("hsxl_temporal_layers.f16.safetensors");
                g
            },
            (
                "27",
                "ADE_AnimateDiffLoaderWithContext",
                Some("beta_schedule"),
                "picks HotshotXL's or AnimateDiff-SDXL's schedule by the motion model's weights, which the lowering cannot read",
            ),
        ),
        (
            {
                let mut g = animatediff();
                // A primitive would fold into the input; a node computing
                // it from a picture the run loads does not.
                g["27"]["inputs"]["motion_scale"] = json!(["52", 0]);
                g["53"] = json!({"class_type": "LoadImage", "inputs": {"image": "a.png"}});
                g["52"] = json!({"class_type": "GetImageSize", "inputs": {"image": ["53", 0]}});
                g
            },
            (
                "27",
                "ADE_AnimateDiffLoaderWithContext",
                Some("motion_scale"),
                "is driven by another node, but it is a run parameter the workflow takes as an input",
            ),
        ),
        (
            {
                let mut g = animatediff();
                g["44"]["inputs"]["pingpong"] = json!(true);
                g
            },
            (
                "44",
                "ADE_AnimateDiffCombine",
                Some("pingpong"),
                "plays the frames forth and back, which the lowering's video output does not",
            ),
        ),
        (
            {
                let mut g = animatediff();
                g["28"] = json!({"class_type": "ModelSamplingDiscrete", "inputs": {"sampling": "eps", "zsnr": false, "model": ["27", 0]}});
                g["7"]["inputs"]["model"] = json!(["28", 0]);
                g
            },
            (
                "27",
                "ADE_AnimateDiffLoaderWithContext",
                Some("beta_schedule"),
                "sets the model's sampling under another model-sampling override on the model path",
            ),
        ),
    ];
    for (graph, expected) in cases {
        assert_refused(&graph, expected);
    }
    // Into a package whose models exist, the motion module cannot be
    // merged.
    let refusals =
        lower::lower_for(&animatediff(), &support::lowering::lora_target()).expect_err("refused");
    assert_eq!(
        refusals[0].message,
        "injects a motion module into the denoiser, but the target package's models exist and are not the patched weights"
    );
}

#[test]
fn autoselect_under_sdxl_prompts_is_refused() {
    let mut g = pattern("sdxl");
    g["27"] = json!({"class_type": "ADE_AnimateDiffLoaderGen1", "inputs": {"model_name": "mm_sdxl_v10_beta.ckpt", "beta_schedule": "autoselect", "model": ["1", 0]}});
    g["5"]["inputs"]["model"] = json!(["27", 0]);
    // A name that does not give the kind away: the prompts do.
    g["27"]["inputs"]["model_name"] = json!("temporal.ckpt");
    assert_refused(
        &g,
        (
            "27",
            "ADE_AnimateDiffLoaderGen1",
            Some("beta_schedule"),
            "picks HotshotXL's or AnimateDiff-SDXL's schedule by the motion model's weights, which the lowering cannot read",
        ),
    );
}
