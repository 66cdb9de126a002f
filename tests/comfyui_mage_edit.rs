//! Mage-Flow's edits (`TextEncodeMageFlowEdit` with a picture): the text
//! encoder sees the picture with its longer side cut to 384, the node
//! appends its latent at its sides floored to whole 16s, and the latent
//! takes that size.

mod support;

use serde_json::{Value, json};
use support::lowering::{
    assert_refused, lowered, npy, package_and_run, pattern, run_policy_alone, scratch, workflow,
};
use wfstudio_core::comfyui::lower::{Lowered, Target};

/// Mage-Flow's edit template, small: the `mage` pattern given a picture,
/// its output sized by a `GetImageSize` of that picture, the sampler
/// starting from the node's latent.
fn edit() -> Value {
    let mut g = pattern("mage");
    g["8"] = json!({"class_type": "LoadImage", "inputs": {"image": "calm.png", "upload": "image"}});
    g["9"] = json!({"class_type": "GetImageSize", "inputs": {"image": ["8", 0]}});
    let inputs = &mut g["4"]["inputs"];
    inputs["images.image_1"] = json!(["8", 0]);
    inputs["width"] = json!(["9", 0]);
    inputs["height"] = json!(["9", 1]);
    g
}

/// The contract parameters of the node's own resizes, by their size.
fn own_resize(l: &Lowered, size: &str) -> (String, Value) {
    workflow(l)["components"]
        .as_object()
        .expect("components")
        .iter()
        .filter_map(|(name, c)| Some((name.clone(), c.pointer("/contract/parameters")?.clone())))
        .find(|(_, p)| p["size"] == size)
        .unwrap_or_else(|| panic!("a {size} resize"))
}

#[test]
fn mage_flow_shows_and_appends_its_picture() {
    let l = lowered(&edit(), &Target::default());
    let components = &workflow(&l)["components"];
    let (_, seen) = own_resize(&l, "longer_down");
    assert_eq!(
        (&seen["side"], &seen["method"], &seen["unless_same"]),
        (&json!(384), &json!("bicubic"), &json!(true))
    );
    let (_, encoded) = own_resize(&l, "floor_steps");
    assert_eq!(
        (&encoded["step"], &encoded["method"]),
        (&json!(16), &json!("bicubic"))
    );
    let encoder = &components["text_encoder"]["ports"];
    assert!(encoder["inputs"].get("image").is_some(), "{encoder}");
    assert!(encoder["outputs"].get("image_slots").is_none());
    let denoiser = &components["denoiser"]["ports"]["inputs"];
    assert!(denoiser.get("reference_latent").is_some(), "{denoiser}");
    let shape = &components["latent_row_shape"]["contract"]["parameters"];
    assert_eq!(
        (&shape["from"], &shape["channels"], &shape["scale"]),
        (&json!("image"), &json!(128), &json!(16))
    );
    assert!(
        l.notes.iter().any(|n| n.contains("`Image N: `")),
        "{:#?}",
        l.notes
    );
    // Width and height of 0 are the picture's own size too.
    let mut zero = edit();
    zero["4"]["inputs"]["width"] = json!(0);
    zero["4"]["inputs"]["height"] = json!(0);
    lowered(&zero, &Target::default());
    // Its batch size is the latent's rows.
    let mut batched = edit();
    batched["4"]["inputs"]["batch_size"] = json!(2);
    let l = lowered(&batched, &Target::default());
    let shape = &workflow(&l)["components"]["latent_row_shape"]["contract"]["parameters"];
    assert_eq!(shape["batch_size"], 2);
    if !support::runtime_available() {
        return;
    }
    let root = scratch("mage-edit");
    let (_, out) = package_and_run(&root, "edit", &edit());
    assert_eq!(npy(&out.join("latent.npy")).0, [1, 128, 4, 4]);
    assert_eq!(npy(&out.join("image.npy")).0, [1, 3, 64, 64]);
    // A picture made 70 x 50 before the node: encoded at 64 x 48, the
    // latent 4 x 3 cells.
    let mut odd = edit();
    odd["10"] = json!({"class_type": "ImageScale", "inputs": {"upscale_method": "nearest-exact", "width": 70, "height": 50, "crop": "disabled", "image": ["8", 0]}});
    odd["4"]["inputs"]["images.image_1"] = json!(["10", 0]);
    odd["9"]["inputs"]["image"] = json!(["10", 0]);
    let (_, out) = package_and_run(&root, "odd", &odd);
    assert_eq!(npy(&out.join("latent.npy")).0, [1, 128, 3, 4]);
    assert_eq!(npy(&out.join("image.npy")).0, [1, 3, 48, 64]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn mage_flow_s_resizes_are_the_node_s() {
    if !support::runtime_available() {
        return;
    }
    let l = lowered(&edit(), &Target::default());
    let root = scratch("mage-resizes");
    let picture = |shape: [usize; 4]| {
        let (data, _) = support::lowering::tensor(shape, 7);
        let data: Vec<f32> = data.iter().map(|v| (v + 2.0) / 4.2).collect();
        let text = json!({"dtype": "float32", "shape": shape, "data": data}).to_string();
        (data, text)
    };
    let cases = [
        // Longer side 400 above 384: a factor of 0.96, 100 becomes 96.
        ("longer_down", [1, 3, 400, 100], [1, 3, 384, 96], false),
        // 768 wide: a factor of 0.5, 501 high is 250.5, rounded to even.
        ("longer_down", [1, 3, 501, 768], [1, 3, 250, 384], false),
        // At most 384: kept as it is.
        ("longer_down", [1, 3, 64, 64], [1, 3, 64, 64], true),
        // Floored to whole 16s.
        ("floor_steps", [1, 3, 70, 50], [1, 3, 64, 48], false),
        ("floor_steps", [1, 3, 64, 48], [1, 3, 64, 48], true),
    ];
    for (n, (size, shape, expected, kept)) in cases.into_iter().enumerate() {
        let (name, _) = own_resize(&l, size);
        let (data, text) = picture(shape);
        let out = run_policy_alone(
            &root,
            &format!("case{n}"),
            &l.document,
            &name,
            &[("image", text)],
        );
        let (out_shape, values) = npy(&out.join("scaled.npy"));
        assert_eq!(out_shape, expected, "{size} {shape:?}");
        if kept {
            assert_eq!(values, data, "{size} {shape:?} is kept as it is");
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn what_mage_flow_edits_cannot_take_is_refused() {
    let mut two = edit();
    two["10"] =
        json!({"class_type": "LoadImage", "inputs": {"image": "second.png", "upload": "image"}});
    two["4"]["inputs"]["images.image_2"] = json!(["10", 0]);
    assert_refused(
        &two,
        (
            "4",
            "TextEncodeMageFlowEdit",
            Some("images.image_2"),
            "gives Mage-Flow a second picture, which the node stretches to the first one's size; the lowering takes one",
        ),
    );
    // A GetImageSize of another picture.
    let mut other = edit();
    other["10"] =
        json!({"class_type": "LoadImage", "inputs": {"image": "other.png", "upload": "image"}});
    other["9"]["inputs"]["image"] = json!(["10", 0]);
    assert_refused(
        &other,
        (
            "4",
            "TextEncodeMageFlowEdit",
            Some("width"),
            "sizes its output other than as its picture's own size (width and height both 0, or both read from one GetImageSize of the picture it is given), and the node stretches the picture to that size; the lowering takes the picture's own size",
        ),
    );
    let mut sized = edit();
    sized["4"]["inputs"]["width"] = json!(512);
    sized["4"]["inputs"]["height"] = json!(512);
    assert_refused(
        &sized,
        (
            "4",
            "TextEncodeMageFlowEdit",
            Some("width"),
            "sizes its output other than as its picture's own size (width and height both 0, or both read from one GetImageSize of the picture it is given), and the node stretches the picture to that size; the lowering takes the picture's own size",
        ),
    );
}
