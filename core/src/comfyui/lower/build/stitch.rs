//! A sink's stitched pictures (`recognise::Stitch`): both pictures in
//! 0..1 through an `image_stitch` policy (one per distinct setting,
//! `image_stitch`, `image_stitch_2`, ...) that `synth::stitch` builds.

use super::super::parts::{Steps, contract, declared_once, invoke, picture, policy};
use super::super::recognise::Stitch;
use serde_json::{Map, Value, json};

/// The value of `stitch` of the pictures `first` and `second` (0..1).
pub(super) fn stitched(
    stitch: &Stitch,
    (first, second): (&str, &str),
    (components, after): (&mut Map<String, Value>, &mut Steps),
) -> String {
    let parameters = json!({
        "direction": stitch.direction,
        "match_size": stitch.match_size,
        "spacing": stitch.spacing,
        "colour": stitch.colour,
    });
    let sized = |h: &str, w: &str| contract("float32", json!(["batch", 3, h, w]), true);
    let declare = |name: &str| {
        policy(
            name,
            json!({"image1": picture(json!(3)), "image2": sized("second_height", "second_width")}),
            json!({"stitched": sized("stitched_height", "stitched_width")}),
            Some(json!({"id": "wfstudio.image-stitch", "version": "1", "parameters": parameters})),
        )
    };
    let name = declared_once(components, "image_stitch", declare);
    let value = format!("stitched.{}", stitch.node);
    after.push(
        invoke(
            &name,
            json!({"image1": first, "image2": second}),
            json!({"stitched": value}),
        ),
        &[&stitch.node],
    );
    value
}
