//! A stage that starts from a `LatentComposite`: one `latent_composite`
//! policy takes the base stage's latent (`to`) and each pasted stage's
//! (`from_1`, `from_2`, ...) and pastes them in turn; its contract
//! parameters (scalars) carry the base's extents, the number of pastes
//! and each paste's offset, feather and extents in latent cells (`x_1`,
//! `y_1`, `feather_1`, `height_1`, `width_1`, ...), from which the policy
//! builds its masks.

use super::super::parts::{contract, invoke, policy};
use super::super::recognise::Composite;
use super::names::earlier_latent;
use serde_json::{Map, Value, json};

/// The `latent_composite` component of `composite` and the step that
/// invokes it into `latent.source`.
pub(super) fn composite(composite: &Composite, latent: Value) -> (Value, Value) {
    let Composite {
        base,
        extents: (height, width),
        pastes,
    } = composite;
    let mut ports = Map::new();
    let mut binds = Map::new();
    ports.insert("to".into(), latent.clone());
    binds.insert("to".into(), json!(earlier_latent(*base)));
    let mut parameters = json!({"height": height, "width": width, "pastes": pastes.len()});
    for (k, paste) in pastes.iter().enumerate() {
        let port = format!("from_{}", k + 1);
        let shape = json!([
            "batch",
            "channels",
            format!("pasted_height_{}", k + 1),
            format!("pasted_width_{}", k + 1)
        ]);
        ports.insert(port.clone(), contract("float32", shape, true));
        binds.insert(port, json!(earlier_latent(paste.stage)));
        for (key, value) in [
            ("x", paste.x),
            ("y", paste.y),
            ("feather", paste.feather),
            ("height", paste.extents.0),
            ("width", paste.extents.1),
        ] {
            parameters[format!("{key}_{}", k + 1)] = json!(value);
        }
    }
    let component = policy(
        "latent_composite",
        Value::Object(ports),
        json!({"latent": latent}),
        Some(json!({"id": "wfstudio.latent-composite", "version": "1", "parameters": parameters})),
    );
    let step = invoke(
        "latent_composite",
        Value::Object(binds),
        json!({"latent": "latent.source"}),
    );
    (component, step)
}
