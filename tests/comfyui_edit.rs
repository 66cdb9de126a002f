//! `InstructPixToPixConditioning`: an edit model's picture rides on the
//! prompts. The lowering encodes the picture once, binds its latent to
//! the denoiser's `concat` input on the prompts that carry it (zeros of its
//! size on a prompt that does not, as ComfyUI fills them), starts sampling
//! from zeros the picture's latent size, and refuses what it cannot pair.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, package_and_run, pattern, s, scratch, workflow,
};
use wfstudio_core::comfyui::lower::Target;

/// The edit pattern: CosXL-edit style, both prompts through node 4, the
/// sampler starting from node 4's latent.
fn graph() -> Value {
    pattern("edit")
}

/// The `concat` each denoiser call of the loop binds, by the value it
/// writes (`denoiser.conditional`, `denoiser.unconditional`).
fn concat_bindings(w: &Value) -> Vec<(String, Value)> {
    w["steps"][0]["steps"]
        .as_array()
        .expect("loop body")
        .iter()
        .filter(|s| s["component"] == "denoiser")
        .map(|s| {
            (
                s["outputs"]["noise_pred"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                s["inputs"]["concat"].clone(),
            )
        })
        .collect()
}

#[test]
fn the_edit_picture_is_encoded_once_and_taken_beside_the_sample() {
    let l = lowered(&graph(), &Target::default());
    let w = workflow(&l);
    assert_eq!(
        w["components"]["denoiser"]["ports"]["inputs"]["concat"]["shape"],
        json!(["batch", "channels", "latent_height", "latent_width"])
    );
    // The picture's latent once, for the prompts; the start latent is
    // zeros of its size (the latent shape comes from the picture).
    let setup = &w["steps"][0]["setup"];
    let encodes: Vec<&Value> = setup
        .as_array()
        .expect("setup")
        .iter()
        .filter(|s| s["component"] == "vae_encoder")
        .collect();
    assert_eq!(encodes.len(), 1);
    assert_eq!(encodes[0]["inputs"], json!({"image": "request.image"}));
    assert_eq!(encodes[0]["outputs"], json!({"latent": "edit.latent"}));
    let empty = setup.as_array().expect("setup").iter();
    assert_eq!(
        empty.filter(|s| s["component"] == "empty_latent").count(),
        1
    );
    assert_eq!(
        w["components"]["latent_row_shape"]["contract"]["parameters"]["from"],
        "image"
    );
    assert_eq!(
        concat_bindings(w),
        [
            ("denoiser.unconditional".to_string(), json!("edit.latent")),
            ("denoiser.conditional".to_string(), json!("edit.latent")),
        ]
    );
    assert_eq!(
        l.notes,
        [
            "node 4 (InstructPixToPixConditioning) attaches its picture (request.image) to both prompts: the denoiser takes the picture's latent as input `concat` beside the sample, so export it with those channels appended to its input"
        ]
    );

    // A negative prompt that bypasses the node takes zeros in its place:
    // the start latent, which is zeros of the picture latent's size.
    let mut plain_negative = graph();
    plain_negative["5"]["inputs"]["negative"] = json!(["3", 0]);
    let l = lowered(&plain_negative, &Target::default());
    assert_eq!(
        concat_bindings(workflow(&l)),
        [
            ("denoiser.unconditional".to_string(), json!("latent.source")),
            ("denoiser.conditional".to_string(), json!("edit.latent")),
        ]
    );
    assert!(l.notes[0].ends_with("to the positive prompt (the negative takes zeros in its place): the denoiser takes the picture's latent as input `concat` beside the sample, so export it with those channels appended to its input"));
}

#[test]
fn an_edit_package_runs_and_its_result_follows_the_picture() {
    if !support::runtime_available() {
        return;
    }
    let root = scratch("edit");
    let (dir, out) = package_and_run(&root, "edit", &graph());
    let (shape, first) = npy(&out.join("latent.npy"));
    assert_eq!(shape, [1, 4, 8, 8]);
    assert!(first.iter().all(|v| v.is_finite()));
    // The same picture again gives the same latent; another picture,
    // another latent (the denoiser reads it at every call).
    let rerun = |picture: Option<f32>, name: &str| {
        let out = root.join(name);
        let mut recipe: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("recipes/default.json")).expect("recipe"),
        )
        .expect("JSON");
        if let Some(grey) = picture {
            recipe["inputs"]["request.image"]["data"] = json!(vec![grey; 3 * 64 * 64]);
        }
        let file = root.join(format!("{name}.json"));
        std::fs::write(&file, recipe.to_string()).expect("recipe");
        let args = ["run", s(&dir), "--recipe", s(&file), "--out", s(&out)];
        let (code, stdout, stderr) = support::run_wfstudio(&args);
        assert_eq!(code, 0, "{stdout}{stderr}");
        npy(&out.join("latent.npy")).1
    };
    assert_eq!(rerun(None, "again"), first);
    let grey = rerun(Some(0.5), "grey");
    let dark = rerun(Some(0.1), "dark");
    assert_ne!(grey, first);
    assert_ne!(grey, dark);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn edits_the_lowering_cannot_pair_are_refused_by_name() {
    // The prompts carry node 4's picture, but sampling starts elsewhere:
    // the picture's latent would not match the sample.
    let mut empty_start = graph();
    empty_start["9"] = json!({"class_type": "EmptyLatentImage", "inputs": {"width": 64, "height": 64, "batch_size": 1}});
    empty_start["5"]["inputs"]["latent_image"] = json!(["9", 0]);
    assert_refused(
        &empty_start,
        (
            "4",
            "InstructPixToPixConditioning",
            None,
            "attaches its picture to the prompts of a sampler that does not start from its latent",
        ),
    );
    // Two pictures on one sampler's prompts.
    let mut second = graph();
    second["10"] = second["4"].clone();
    second["5"]["inputs"]["negative"] = json!(["10", 1]);
    assert_refused(
        &second,
        (
            "10",
            "InstructPixToPixConditioning",
            None,
            "attaches a second picture to the sampler's prompts, beside node 4's",
        ),
    );
    // Outputs read as the wrong kind.
    let mut latent_as_prompt = graph();
    latent_as_prompt["5"]["inputs"]["positive"] = json!(["4", 2]);
    assert_refused(
        &latent_as_prompt,
        (
            "5",
            "KSampler",
            Some("positive"),
            "reads output 2 of node 4, its latent, as a conditioning",
        ),
    );
    let mut prompt_as_latent = graph();
    prompt_as_latent["5"]["inputs"]["latent_image"] = json!(["4", 0]);
    assert_refused(
        &prompt_as_latent,
        (
            "5",
            "KSampler",
            Some("latent_image"),
            "reads output 0 of node 4, a conditioning, as its latent",
        ),
    );
}
