//! The pictures a stage holds as latent frames (see `held`), each made in
//! the setup: its `LoadImage` input through the graph's resizes
//! (`held_scale`, `held_scale_2`, ... numbered across the stage's
//! pictures), `LTXVPreprocess`'s cut to even sides (`even_sides`, ...) and
//! the resize to the latent's size (bilinear, centred), as one frame
//! (`one_frame`) through the video VAE's encoder.

use super::super::parts::{Axes, Steps, contract, invoke, picture, policy};
use super::super::recognise::{HeldFrame, PixelSize, Plan, Resize};
use serde_json::{Map, Value, json};

/// Pixels per latent cell of LTX's video VAEs.
const LATENT_SCALE: i64 = 32;

/// The policies made so far, to number the next ones apart.
#[derive(Default)]
pub(super) struct Made {
    resizes: usize,
    cuts: usize,
    values: usize,
}

/// Declares `frame`'s picture input and policies and the video encoder
/// `encoder`, and pushes the setup steps encoding it at the latent's
/// `(height, width)`; returns the encoded frame's value.
pub(super) fn encode(
    plan: &Plan,
    (frame, (height, width)): (&HeldFrame, (i64, i64)),
    (encoder, made): (&str, &mut Made),
    (inputs, components, setup): (&mut Map<String, Value>, &mut Map<String, Value>, &mut Steps),
) -> String {
    let mut image = super::pictures::input(plan, &frame.loader);
    match image.as_str() {
        "request.image" => {
            inputs
                .entry(image.clone())
                .or_insert_with(|| super::pictures::sized_input("image"));
        }
        _ => super::pictures::declare_others(plan, inputs),
    }
    let fitted = Resize {
        node: frame.node.clone(),
        method: "bilinear".into(),
        size: PixelSize::Fixed {
            width: width * LATENT_SCALE,
            height: height * LATENT_SCALE,
            centre: true,
        },
        then: Vec::new(),
    };
    let mut resize = |resize: &Resize| {
        let name = super::pictures::numbered("held_scale", made.resizes);
        made.resizes += 1;
        let component = super::scales::resize_policy(&name, resize, false);
        (name, component, ("image", "scaled"))
    };
    let mut steps: Vec<(String, Value, (&str, &str))> = Vec::new();
    steps.extend(frame.resizes.iter().map(&mut resize));
    // At CRF 0 `LTXVPreprocess` gives the picture as it is.
    if let Some(pre) = frame.preprocess.as_ref().filter(|pre| pre.compression > 0) {
        let name = super::pictures::numbered("even_sides", made.cuts);
        made.cuts += 1;
        let parameters = json!({"crop": "top left, to even sides", "h264_crf": pre.compression, "compression": "not reproduced"});
        let even = contract(
            "float32",
            json!(["batch", 3, "even_height", "even_width"]),
            true,
        );
        let component = policy(
            &name,
            json!({"image": picture(json!(3))}),
            json!({"even": even}),
            Some(json!({"id": "wfstudio.even-sides", "version": "1", "parameters": parameters})),
        );
        steps.push((name, component, ("image", "even")));
    }
    steps.push(resize(&fitted));
    steps.push((
        "one_frame".into(),
        super::vace::one_frame(),
        ("image", "frames"),
    ));
    let latent = Axes::Video.latent();
    steps.push((
        encoder.to_string(),
        super::pixels::video_encoder(encoder, latent),
        ("image", "latent"),
    ));
    let from = frame.nodes();
    for (name, component, (input, output)) in steps {
        // The stage's encoder, where it has one already, is this one.
        components.entry(name.clone()).or_insert(component);
        made.values += 1;
        let value = format!("held.picture_{}", made.values);
        setup.push(
            invoke(&name, json!({ input: image }), json!({ output: value })),
            &from,
        );
        image = value;
    }
    image
}
