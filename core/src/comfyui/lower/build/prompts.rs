//! A stage's prompts: the token-id inputs, the text encoders (CLIP, or
//! SDXL's two with the size conditioning) and the conditioning values the
//! denoiser reads, one set per prompt side; a side behind
//! `ConditioningZeroOut` is its encoder's output zeroed (the positive's,
//! with no token input, when it zeroes the positive's encoder).

use super::super::parts::{
    Steps, component, contract, hidden, invoke, one_of, parameter, policy, pooled, runtime,
    sdxl_time_ids, tokens,
};
use super::super::recognise::{Plan, Prompt, Reference, Style, Vision};
use super::pictures::{Key, key};
use serde_json::{Map, Value, json};

/// Which prompt a set of conditioning values belongs to.
pub(super) struct PromptSide<'a> {
    /// `conditional`, `unconditional` or (`DualCFGGuider`'s) `middle`.
    pub name: &'static str,
    pub encoder: &'a String,
    text: &'a Prompt,
    /// Input names of the token ids (main encoder, then the CLIP-L one).
    ids: (&'static str, &'static str),
    role: &'static str,
    alias: &'static str,
    size_input: &'static str,
    /// The `ConditioningZeroOut` that zeroes this side, if one does.
    zeroed: Option<&'a String>,
    pub controlled: bool,
    /// The input its `FluxGuidance` value comes in by, when the plan has
    /// one (a side without takes the positive's, which only cfg 1 allows).
    pub guidance: Option<&'static str>,
    /// Whether the side carries the plan's edit picture (the others take
    /// zeros in its place).
    pub edit: bool,
    /// The reference pictures the side carries.
    pub references: &'a [Reference],
    /// The pictures the side shows the text encoder.
    vision: &'a [Vision],
    /// The style tokens its conditioning takes after its own.
    styles: &'a [Style],
    /// `CLIPTextEncodeFlux`'s CLIP-L text, passed by `ids.1`.
    clip_text: Option<&'a String>,
}

/// A prompt text, the token-id input it is passed in and its encoder node.
pub(super) struct Prompted {
    pub input: String,
    pub text: String,
    pub encoder: String,
}

/// What a stage's builder is adding to.
pub(super) struct Parts<'p> {
    pub inputs: &'p mut Map<String, Value>,
    pub components: &'p mut Map<String, Value>,
    pub setup: &'p mut Steps,
    pub prompts: &'p mut Vec<Prompted>,
    /// The pictures the calls show the text encoder (Qwen's edit
    /// encoders), by picture, as its inputs `image`, `image_2`, ...
    pub vision: Option<&'p [(Key, String)]>,
}

/// Whether the negative prompt is the positive encoder's conditioning
/// zeroed (`ConditioningZeroOut` of the positive's encoder): it takes the
/// positive's value, with no token input of its own.
pub(super) fn reuses_positive(plan: &Plan) -> bool {
    plan.negative.zeroed.is_some()
        && plan.positive.zeroed.is_none()
        && plan.negative.encoder == plan.positive.encoder
        && matches!(plan.negative.text, Prompt::Single(_))
}

/// The positive prompt's `FluxGuidance` input, and the negative's own
/// where its node is another: (input, value).
pub(super) fn guidance_inputs(plan: &Plan) -> Vec<(&'static str, f64)> {
    let (p, n) = (&plan.positive.guidance, &plan.negative.guidance);
    let mut out = Vec::new();
    if let Some(p) = p.as_ref().or(n.as_ref()) {
        out.push(("request.flux_guidance", p.value));
    }
    if let (Some(p), Some(n)) = (p, n)
        && p.node != n.node
    {
        out.push(("request.negative_flux_guidance", n.value));
    }
    out
}

/// The positive and negative side of `plan`, and a `DualCFGGuider`'s
/// middle one.
pub(super) fn sides(plan: &Plan) -> Vec<PromptSide<'_>> {
    let guidance = guidance_inputs(plan);
    let positive_guidance = guidance.first().map(|(input, _)| *input);
    let negative_guidance = guidance.last().map(|(input, _)| *input);
    [
        PromptSide {
            name: "conditional",
            encoder: &plan.positive.encoder,
            text: &plan.positive.text,
            ids: ("request.input_ids", "request.input_ids_l"),
            role: "prompt_tokens",
            alias: "input_ids_l",
            size_input: "request.positive_size",
            zeroed: plan.positive.zeroed.as_ref(),
            controlled: plan.control.as_ref().is_some_and(|c| c.positive),
            guidance: positive_guidance,
            edit: plan.positive.edit.is_some(),
            references: &plan.positive.references.latents,
            vision: &plan.positive.vision,
            styles: &plan.positive.styles,
            clip_text: plan.positive.clip_text.as_ref(),
        },
        PromptSide {
            name: "unconditional",
            encoder: &plan.negative.encoder,
            text: &plan.negative.text,
            ids: ("request.negative_input_ids", "request.negative_input_ids_l"),
            role: "negative_prompt_tokens",
            alias: "negative_input_ids_l",
            size_input: "request.negative_size",
            zeroed: plan.negative.zeroed.as_ref(),
            controlled: plan.control.as_ref().is_some_and(|c| c.negative),
            guidance: negative_guidance,
            edit: plan.negative.edit.is_some(),
            references: &plan.negative.references.latents,
            vision: &plan.negative.vision,
            styles: &plan.negative.styles,
            clip_text: plan.negative.clip_text.as_ref(),
        },
    ]
    .into_iter()
    .chain(plan.middle.as_ref().map(|middle| PromptSide {
        name: "middle",
        encoder: &middle.encoder,
        text: &middle.text,
        ids: ("request.middle_input_ids", "request.middle_input_ids_l"),
        role: "middle_prompt_tokens",
        alias: "middle_input_ids_l",
        size_input: "request.middle_size",
        zeroed: middle.zeroed.as_ref(),
        controlled: false,
        guidance: None,
        edit: middle.edit.is_some(),
        references: &middle.references.latents,
        vision: &middle.vision,
        styles: &middle.styles,
        clip_text: middle.clip_text.as_ref(),
    }))
    .collect()
}

/// Policy `kind` making zeros shaped like its input `port` of `contract`
/// (`zero_conditioning`, `zero_latent`).
pub(super) fn zero_policy(kind: &str, port: &str, contract: Value) -> Value {
    policy(
        kind,
        json!({port: contract.clone()}),
        json!({"zeroed": contract}),
        None,
    )
}

/// Whether the stage's prompts are texts, passed as token ids (not SVD's
/// picture embedding or Lotus' fixed prompt).
pub(super) fn tokenized(plan: &Plan) -> bool {
    matches!(plan.positive.text, Prompt::Single(_) | Prompt::Sdxl { .. })
}

/// Declares the encoders of `sides` (named with the text encoders' prefix
/// `models`) and adds their token inputs and setup steps; a stage whose
/// prompts are not texts has none.
pub(super) fn encode(plan: &Plan, sides: &[PromptSide<'_>], models: &str, parts: &mut Parts<'_>) {
    if !tokenized(plan) {
        return;
    }
    let m = |name: &str| format!("{models}{name}");
    let loader = &plan.model.loader;
    let sdxl = matches!(plan.positive.text, Prompt::Sdxl { .. });
    let mut encoder_out = json!({"encoder_hidden_states": hidden()});
    let spliced = super::vision::spliced(plan);
    if let Some(slots) = &spliced {
        encoder_out["image_slots"] = slots.clone();
    }
    let mut encoder_in = json!({"input_ids": tokens()});
    // Where a prompt gives CLIP-L a text of its own, the encoder takes its
    // ids apart (the other prompts' ids are the same text's).
    let clip_ids = sides.iter().any(|s| s.clip_text.is_some());
    if clip_ids {
        encoder_in["input_ids_l"] = tokens();
    }
    let shown = sides.iter().map(|s| s.vision.len()).max().unwrap_or(0);
    for n in 0..shown {
        encoder_in[super::vision::port_name(n)] = super::vision::port(n);
    }
    parts.components.insert(
        m("text_encoder"),
        component(
            &format!("{}/model.onnx", m("text_encoder")),
            encoder_in,
            encoder_out,
            None,
        ),
    );
    let (pooled, time_ids) = (pooled(), sdxl_time_ids());
    if sdxl {
        parts.components.insert(
            m("text_encoder_2"),
            component(
                &format!("{}/model.onnx", m("text_encoder_2")),
                json!({"input_ids": tokens()}),
                json!({"encoder_hidden_states": hidden(), "text_embeds": pooled.clone()}),
                None,
            ),
        );
        parts.components.insert("sdxl_conditioning".into(), policy("sdxl_conditioning",
            // The two encoders' widths differ (768 and 1280 in SDXL); the
            // output is their concatenation, the denoiser's context width.
            json!({"hidden_l": contract("float32", json!(["batch", "prompt_sequence", "hidden_l"]), true),
                "hidden_g": contract("float32", json!(["batch", "prompt_sequence", "hidden_g"]), true),
                "pooled": pooled.clone(), "size": one_of(6)}),
            json!({"encoder_hidden_states": hidden(), "text_embeds": pooled.clone(), "time_ids": time_ids.clone()}), None));
    }
    super::style::declare(plan, (parts.inputs, parts.components, parts.setup));
    if sides.iter().any(|s| s.zeroed.is_some()) {
        parts.components.insert(
            "zero_conditioning".into(),
            zero_policy("zero_conditioning", "conditioning", hidden()),
        );
    }
    for side in sides {
        let value = format!("conditioning.{}", side.name);
        match side.text {
            Prompt::Single(_) if side.name == "unconditional" && reuses_positive(plan) => {
                let zero = side.zeroed.into_iter().collect::<Vec<_>>();
                // ComfyUI zeroes the encoder's output, without the
                // positive's style tokens.
                let positive = match plan.positive.styles.is_empty() {
                    true => "conditioning.conditional",
                    false => "conditioning.conditional_text",
                };
                parts.setup.push(
                    invoke(
                        "zero_conditioning",
                        json!({"conditioning": positive}),
                        json!({"zeroed": value}),
                    ),
                    &zero,
                );
            }
            Prompt::Single(text) => {
                parts.prompts.push(Prompted {
                    input: side.ids.0.to_string(),
                    text: text.clone(),
                    encoder: side.encoder.clone(),
                });
                let encoded = match (side.zeroed, side.styles.is_empty()) {
                    (Some(_), _) => format!("{value}_encoded"),
                    (None, false) => format!("{value}_text"),
                    (None, true) => value.clone(),
                };
                let mut binds = json!({"input_ids": side.ids.0});
                if let Some(text) = side.clip_text {
                    parts.prompts.push(Prompted {
                        input: side.ids.1.to_string(),
                        text: text.clone(),
                        encoder: side.encoder.clone(),
                    });
                    declare_l_ids(side, parts.inputs);
                }
                if clip_ids {
                    binds["input_ids_l"] = json!(match side.clip_text {
                        Some(_) => side.ids.1,
                        None => side.ids.0,
                    });
                }
                let seen = parts.vision.unwrap_or_default();
                for (n, v) in side.vision.iter().enumerate() {
                    let picture = key(&v.loader, v.resize.as_ref());
                    if let Some((_, value)) = seen.iter().find(|(k, _)| *k == picture) {
                        binds[super::vision::port_name(n)] = json!(value);
                    }
                }
                let mut outputs = json!({"encoder_hidden_states": encoded});
                if spliced.is_some() {
                    outputs["image_slots"] =
                        json!(super::vision::slots_of(side.name, reuses_positive(plan)));
                }
                parts.setup.push(
                    invoke(&m("text_encoder"), binds, outputs),
                    &[side.encoder, loader],
                );
                if let Some(zero) = side.zeroed {
                    parts.setup.push(
                        invoke(
                            "zero_conditioning",
                            json!({"conditioning": encoded}),
                            json!({"zeroed": value}),
                        ),
                        &[zero],
                    );
                } else if !side.styles.is_empty() {
                    super::style::append(plan, side.styles, (&encoded, &value), parts.setup);
                }
            }
            // Made by `svd::encode`, or Lotus' fixed prompt (`lotus`).
            Prompt::Video(_) | Prompt::Lotus | Prompt::Loaded(_) => {}
            Prompt::Sdxl {
                text_g,
                text_l,
                size,
            } => {
                for (input, text) in [(side.ids.0, text_g), (side.ids.1, text_l)] {
                    parts.prompts.push(Prompted {
                        input: input.to_string(),
                        text: text.clone(),
                        encoder: side.encoder.clone(),
                    });
                }
                declare_l_ids(side, parts.inputs);
                parts.inputs.insert(
                    side.size_input.into(),
                    parameter(
                        one_of(6),
                        json!({"kind": "opaque"}),
                        &side.size_input["request.".len()..],
                        json!(size),
                    ),
                );
                let (l, g, p) = (
                    format!("{value}_l"),
                    format!("{value}_g"),
                    format!("{value}_pooled"),
                );
                parts.setup.push(
                    invoke(
                        &m("text_encoder"),
                        json!({"input_ids": side.ids.1}),
                        json!({"encoder_hidden_states": l}),
                    ),
                    &[side.encoder, loader],
                );
                parts.setup.push(
                    invoke(
                        &m("text_encoder_2"),
                        json!({"input_ids": side.ids.0}),
                        json!({"encoder_hidden_states": g, "text_embeds": p}),
                    ),
                    &[side.encoder, loader],
                );
                parts.setup.push(invoke("sdxl_conditioning", json!({"hidden_l": l, "hidden_g": g, "pooled": p, "size": side.size_input}),
                    json!({"encoder_hidden_states": value, "text_embeds": format!("{value}_text_embeds"), "time_ids": format!("{value}_time_ids")})), &[side.encoder]);
            }
        }
    }
}

/// Declares the input of `side`'s second token ids (SDXL's CLIP-L prompt,
/// `CLIPTextEncodeFlux`'s `clip_l`).
fn declare_l_ids(side: &PromptSide<'_>, inputs: &mut Map<String, Value>) {
    inputs.insert(side.ids.1.into(), json!({"contract": tokens(), "role": runtime(side.role), "source": {"kind": "application", "name": side.alias}, "required": true}));
}

/// What a prompt giving CLIP-L its own text (`CLIPTextEncodeFlux`) asks
/// of the package's tokenizer.
pub(in crate::comfyui::lower) fn clip_text_note(plan: &Plan) -> Option<String> {
    let node = plan
        .conditionings()
        .find(|c| c.clip_text.is_some())
        .map(|c| &c.encoder)?;
    Some(format!(
        "node {node} (CLIPTextEncodeFlux) gives CLIP-L a text of its own, whose ids the text encoder takes as `input_ids_l` (T5's text as `input_ids`): the package's one tokenizer makes both, where ComfyUI tokenizes each with its encoder's own"
    ))
}
