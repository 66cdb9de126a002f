//! One sampler stage of a [`Plan`] as document parts: typed inputs for
//! every run parameter (defaults are the graph's values), its components
//! (model components under the names of its checkpoint's), and one
//! diffusion loop whose setup and body grow with the plan (img2img window,
//! a chained stage's upscaled latent, inpaint mask, ControlNet, SDXL
//! conditioning, flow-matching shift). Names are the first stage's; later
//! stages are renamed apart (`super::rename`).

use super::super::parts::{
    Axes, Provenance, Steps, component, contract, hidden, invoke, media, one, opaque_literal,
    parameter, picture, policy, pooled, row, runtime, sdxl_time_ids, tokens,
};
use super::super::recognise::{LatentSource, Origin, Pixels, Plan, Prompt, UpscaleSize, Window};
use super::super::recognise::{SAMPLES_PER_STEP, reference};
use super::super::solver::{Estimates, solver_step};
use super::calls::Calls;
use super::edit;
use super::names::earlier_latent;
use super::pixels::{self, loaded};
use super::prompts::{self, Parts, Prompted};
use super::schedule;
use super::solving;
use super::svd;
use crate::comfyui::synth::sampling::{iterations, sampler as sampler_needs};
use serde_json::{Map, Value, json};

/// One stage's part of the document.
pub(super) struct StageParts {
    pub inputs: Map<String, Value>,
    pub components: Map<String, Value>,
    pub state: Map<String, Value>,
    /// The sampling loop.
    pub step: Value,
    /// Prompt texts by token-id input, with the encoder node of each.
    pub prompts: Vec<Prompted>,
    /// The loop's setup and body steps' nodes, by path under the loop.
    pub provenance: Provenance,
}

/// Builds the parts of `plan`: its model components are named with
/// `models` (its checkpoint's prefix), its text encoders with `encoders`;
/// `decoded` is the value of the pixels it encodes from an earlier
/// stage's decode or through an upscale model, made before it, as is
/// `control_made`, its ControlNet's picture decoded by an earlier stage;
/// `frames_made` says an earlier stage made its Wan video already.
pub(super) fn stage(
    plan: &Plan,
    (models, encoders): (&str, &str),
    (decoded, control_made, frames_made): (Option<&str>, Option<&str>, bool),
) -> StageParts {
    let m = |name: &str| format!("{models}{name}");
    let latent = || plan.axes.latent();
    let s = &plan.sampler;
    // A run from pure noise at the top of the model's schedule starts
    // from the scaled noise; anything else noises its start latent to the
    // schedule's first sigma.
    let windowed = plan.windowed();
    let sdxl = matches!(plan.positive.text, Prompt::Sdxl { .. });
    let step_value = if windowed {
        "diffusion.step"
    } else {
        "loop.iteration"
    };
    let schedule_part = schedule::parts(plan);
    let (prediction, steps) = (schedule_part.prediction, schedule_part.steps);
    let half_log_snr = schedule_part.half_log_snr.clone();
    let mut inputs = Map::new();
    let mut components = Map::new();
    let mut setup = Steps::default();
    let mut body = Steps::default();
    let sampler = &s.node;
    super::outpaint::pad_step(plan, &mut components, &mut setup);

    let video = svd::prompt(plan);
    if prompts::tokenized(plan) {
        inputs.insert("request.input_ids".into(), json!({"contract": tokens(), "role": runtime("prompt_tokens"), "source": {"kind": "request"}, "required": true}));
    }
    // Application-sourced, so the graph's values are used unless the
    // caller passes others (request-sourced defaults are not materialised
    // by every executor).
    inputs.insert(
        "request.max_iterations".into(),
        parameter(
            one("int64"),
            runtime("max_iterations"),
            "max_iterations",
            json!(iterations(&s.sampler_name, steps)),
        ),
    );
    inputs.insert(
        "request.seed".into(),
        parameter(row("int64"), runtime("seed"), "seed", json!(s.seed)),
    );
    inputs.insert(
        "package.rng_offset".into(),
        opaque_literal(row("int64"), json!(0)),
    );
    inputs.insert(
        "package.false".into(),
        opaque_literal(row("bool"), json!(false)),
    );
    inputs.insert(
        "package.loop_0_active".into(),
        opaque_literal(one("bool"), json!(true)),
    );
    if !prompts::reuses_positive(plan) && prompts::tokenized(plan) {
        inputs.insert("request.negative_input_ids".into(), json!({"contract": tokens(), "role": runtime("negative_prompt_tokens"), "source": {"kind": "application", "name": "negative_input_ids"}, "required": true}));
    }
    if plan.middle.is_some() {
        inputs.insert("request.middle_input_ids".into(), json!({"contract": tokens(), "role": {"kind": "opaque"}, "source": {"kind": "application", "name": "middle_input_ids"}, "required": true}));
    }
    inputs.insert(
        "request.guidance_scale".into(),
        parameter(
            row("float32"),
            runtime("guidance_scale"),
            "guidance_scale",
            json!(s.cfg),
        ),
    );

    // The schedule: its length is the step count (folded into the schedule
    // policies' contracts); a flow-matching shift is a typed input.
    let schedule = contract("float32", json!(["schedule_length"]), false);
    inputs.extend(schedule_part.inputs);
    components.extend(schedule_part.components);
    components.insert(
        "continue_predicate".into(),
        policy(
            "continue_predicate",
            json!({"done": row("bool")}),
            json!({"continue": one("bool")}),
            None,
        ),
    );
    // A chained stage samples an earlier stage's latent, resized first
    // where an upscaler sits between them.
    let source = match &plan.latent {
        LatentSource::Stage { stage, upscale } => {
            let earlier = earlier_latent(*stage);
            match upscale {
                Some(up) => {
                    let mut parameters = json!({"method": up.method});
                    match up.size {
                        UpscaleSize::Fixed { width, height } => {
                            parameters["size"] = json!("fixed");
                            parameters["width"] = json!(width);
                            parameters["height"] = json!(height);
                        }
                        UpscaleSize::Scale(scale) => {
                            parameters["size"] = json!("scale");
                            parameters["scale_by"] = json!(scale);
                        }
                    }
                    let upscaled = contract(
                        "float32",
                        json!(["batch", "channels", "upscaled_height", "upscaled_width"]),
                        true,
                    );
                    components.insert("latent_upscale".into(), policy("latent_upscale", json!({"latent": latent()}), json!({"upscaled": upscaled}),
                        Some(json!({"id": "wfstudio.latent-upscale", "version": "1", "parameters": parameters}))));
                    setup.push(
                        invoke(
                            "latent_upscale",
                            json!({"latent": earlier}),
                            json!({"upscaled": "latent.source"}),
                        ),
                        &[&up.node],
                    );
                    "latent.source".to_string()
                }
                None => super::av::upsampled_source(plan, &earlier, &mut components, &mut setup)
                    .unwrap_or(earlier),
            }
        }
        LatentSource::Composite(composite) => {
            let (component, step) = super::composite::composite(composite, latent());
            components.insert("latent_composite".into(), component);
            let nodes: Vec<&String> = composite.pastes.iter().map(|p| &p.node).collect();
            setup.push(step, &nodes);
            "latent.source".to_string()
        }
        _ => "latent.source".to_string(),
    };
    // The pictures an edit encoder shows the text encoder and encodes, and
    // the graph's resize of the loaded picture they share with the stage.
    let vision = super::vision::pictures(plan, &mut components, &mut setup);
    super::frames::encode(
        plan,
        (&m("vae_encoder"), latent()),
        frames_made,
        (&mut inputs, &mut components, &mut setup),
    );
    let made = vision.as_ref().and_then(|v| v.source.as_deref());
    // The picture a `VAEEncode` encodes (see `encoded`); an edit or
    // inpainting node's is the input picture.
    let (picture_value, picture_loader) = match (plan.encoded_picture(), decoded) {
        (_, Some(decoded)) => (decoded.to_string(), None),
        (
            Some(Pixels {
                origin: Origin::Loaded(loader),
                resize,
                ..
            }),
            None,
        ) => loaded(
            (loader, resize.as_ref()),
            (video.is_none(), made),
            &mut components,
            &mut setup,
        ),
        // A loaded edit node's, a sized latent's or a ReferenceLatent's
        // picture, resized or not (not an edit encoder's own); an
        // inpainting node's.
        (None, None) => match reference::encoded_stage_picture(plan) {
            Some((loader, Some(resize))) => loaded(
                (loader, Some(resize)),
                (true, made),
                &mut components,
                &mut setup,
            ),
            _ => ("request.image".to_string(), None),
        },
        (Some(_), None) => ("request.image".to_string(), None),
    };
    // The latent's size: the empty latent's, the encoded picture's, or the
    // earlier stage's; a row of it is one axis shorter than the latent.
    let row_rank = match plan.axes {
        Axes::Image => 3,
        Axes::Video => 4,
        Axes::Audio => 2,
        Axes::AudioVideo => 2,
    };
    let (mut row_shape_parameters, row_shape_inputs, row_shape_binds, latent_node) = match &plan
        .latent
    {
        LatentSource::Empty {
            node,
            width,
            height,
            batch,
            scale,
            frames,
            ..
        } => (
            {
                let mut p = json!({"width": width, "height": height, "batch_size": batch, "channels": plan.channels, "scale": scale});
                if let Some(frames) = frames {
                    p["length"] = json!(frames.length);
                    p["temporal_scale"] = json!(frames.temporal);
                    if frames.leading > 0 {
                        p["leading_frames"] = json!(frames.leading);
                    }
                }
                p
            },
            json!({}),
            json!({}),
            Some(node),
        ),
        LatentSource::Audio {
            node,
            length,
            batch,
        } => (
            json!({"audio_length": length, "batch_size": batch, "channels": plan.channels, "scale": SAMPLES_PER_STEP}),
            json!({}),
            json!({}),
            Some(node),
        ),
        LatentSource::Stage { .. } | LatentSource::Composite(_) => (
            json!({"from": "latent"}),
            json!({"latent": latent()}),
            json!({"latent": source}),
            None,
        ),
        LatentSource::Sized {
            node, scale, batch, ..
        } => (
            json!({"from": "image", "batch_size": batch, "channels": plan.channels, "scale": scale}),
            json!({"image": picture(json!(3))}),
            json!({"image": picture_value}),
            Some(node),
        ),
        _ => (
            json!({"from": "image", "channels": plan.channels, "scale": 8}),
            json!({"image": picture(json!(3))}),
            json!({"image": picture_value}),
            None,
        ),
    };
    super::av::row_shape(plan, &mut row_shape_parameters);
    super::av::declare(plan, &mut components);
    components.insert("latent_row_shape".into(), policy("latent_row_shape", row_shape_inputs, json!({"shape": contract("int64", json!([row_rank]), false)}),
        Some(json!({"id": "wfstudio.latent-shape", "version": "1", "parameters": row_shape_parameters}))));
    components.insert("latent_noise".into(), policy("latent_noise",
        json!({"seed": row("int64"), "offset": row("int64"), "row_shape": contract("int64", json!(["row_rank"]), false)}),
        json!({"noise": latent(), "next_offset": row("int64")}),
        Some(json!({"id": "onnx-genai.counter-rng", "version": "1", "bindings": {"seed": "seed", "offset": "offset", "row_shape": "row_shape", "noise": "noise", "next_offset": "next_offset"},
            "parameters": {"distribution": "normal", "scale": if windowed { "unit" } else { "initial_sigma" }}}))));

    schedule::measure(plan, &mut components, &mut setup);
    setup.push(
        invoke(
            "diffusion_schedule",
            schedule_part.binds.clone(),
            json!({"schedule": "diffusion.schedule"}),
        ),
        &schedule_part.from.iter().collect::<Vec<_>>(),
    );
    let blend_shift = schedule_part.shift.clone();
    setup.push(
        invoke(
            "diffusion_timesteps",
            schedule_part.binds,
            json!({"schedule": "diffusion.timesteps"}),
        ),
        &schedule_part.from.iter().collect::<Vec<_>>(),
    );
    let mut shape_from = vec![];
    if let Some(node) = latent_node {
        shape_from.push(node);
    }
    if let LatentSource::Sized { size, loader, .. } = &plan.latent {
        shape_from.extend([size, loader]);
    }
    setup.push(
        invoke(
            "latent_row_shape",
            row_shape_binds,
            json!({"shape": "diffusion.latent_row_shape"}),
        ),
        &shape_from,
    );
    setup.push(invoke("latent_noise", json!({"seed": "request.seed", "offset": "package.rng_offset", "row_shape": "diffusion.latent_row_shape"}),
        json!({"noise": "diffusion.noise", "next_offset": "diffusion.rng_offset"})), &[sampler]);
    let encoder = (&*m("vae_encoder"), latent());
    super::patch::encode(plan, encoder, &mut inputs, &mut components, &mut setup);

    // Conditioning: one encoder set per prompt.
    let (pooled, time_ids) = (pooled(), sdxl_time_ids());
    let sides = prompts::sides(plan);
    let mut prompts = Vec::new();
    match video {
        Some(video) => svd::encode(
            (&plan.positive.encoder, video),
            &picture_value,
            models,
            &mut inputs,
            &mut components,
            &mut setup,
        ),
        None if super::loaded::encode(plan, &sides, &mut components, &mut setup) => {}
        None => prompts::encode(
            plan,
            &sides,
            encoders,
            &mut Parts {
                inputs: &mut inputs,
                components: &mut components,
                setup: &mut setup,
                prompts: &mut prompts,
                vision: vision.as_ref().map(|v| &v.seen[..]),
            },
        ),
    }

    // The sampling window and the starting latent.
    let mut initializer = "diffusion.noise".to_string();
    let mut max_iterations = "request.max_iterations";
    // A loaded picture is an input; an earlier stage's decode or an
    // upscale model's picture is made before the stage (`decoded`).
    let encodes = match &plan.latent {
        LatentSource::Empty { .. }
        | LatentSource::Sized { .. }
        | LatentSource::Stage { .. }
        | LatentSource::Composite(_)
        | LatentSource::Audio { .. } => false,
        LatentSource::Encoded { .. } | LatentSource::Inpaint { .. } | LatentSource::Edit { .. } => {
            true
        }
    };
    let loaded = match plan.encoded_picture() {
        // An upscale model runs on it before the stage (`top_inputs`).
        Some(image) => matches!(image.origin, Origin::Loaded(_)) && image.upscale.is_none(),
        None => encodes || reference::stage_picture(plan).is_some(),
    };
    if loaded {
        inputs.insert("request.image".into(), media(picture(json!(3))));
        super::pictures::declare_others(plan, &mut inputs);
    }
    // An adaptive sampler's controller ends its loop, within its bound.
    let adaptive = sampler_needs(&s.sampler_name).is_some_and(|k| k.needs.adaptive);
    if windowed && !adaptive {
        max_iterations = "diffusion.iterations";
    }
    let iterations_rule = match s.sampler_name.as_str() {
        "dpm_fast" => "min(floor((steps - start) / 3) + 1, steps - start, max_iterations)",
        _ => "min(steps - start, max_iterations)",
    };
    let window_iterations_rule = match s.sampler_name.as_str() {
        "dpm_fast" => "min(floor((end - start) / 3) + 1, end - start, max_iterations)",
        _ => "min(end - start, max_iterations)",
    };
    if windowed {
        // The schedule's length, which the schedule policies' contracts fix.
        inputs.insert(
            "package.steps".into(),
            opaque_literal(one("int64"), json!(steps)),
        );
        let window_out = json!({"start": one("int64"), "iterations": one("int64")});
        match &s.window {
            Window::Denoise(denoise) => {
                inputs.insert(
                    "request.denoise".into(),
                    parameter(
                        one("float32"),
                        runtime("denoising_strength"),
                        "denoise",
                        json!(denoise),
                    ),
                );
                components.insert("denoise_window".into(), policy("denoise_window", json!({"steps": one("int64"), "denoise": one("float32"), "max_iterations": one("int64")}), window_out,
                    Some(json!({"id": "wfstudio.denoise-window", "version": "1", "parameters": {"start": "steps - round_half_even(steps * denoise)", "iterations": iterations_rule}}))));
                setup.push(invoke("denoise_window", json!({"steps": "package.steps", "denoise": "request.denoise", "max_iterations": "request.max_iterations"}),
                    json!({"start": "diffusion.start_step", "iterations": "diffusion.iterations"})), &[sampler]);
            }
            Window::Steps { start, end, .. } => {
                inputs.insert(
                    "request.start_step".into(),
                    parameter(
                        one("int64"),
                        json!({"kind": "opaque"}),
                        "start_step",
                        json!(start),
                    ),
                );
                inputs.insert(
                    "request.end_step".into(),
                    parameter(
                        one("int64"),
                        json!({"kind": "opaque"}),
                        "end_step",
                        json!(end),
                    ),
                );
                // Output names differ from the inputs' (ONNX graphs need that).
                let window_out = json!({"first_step": one("int64"), "iterations": one("int64"), "last_end": one("int64")});
                components.insert("step_window".into(), policy("step_window", json!({"steps": one("int64"), "start": one("int64"), "end": one("int64"), "max_iterations": one("int64")}), window_out,
                    Some(json!({"id": "wfstudio.step-window", "version": "1", "parameters": {"end": "min(end, steps)", "iterations": window_iterations_rule}}))));
                setup.push(invoke("step_window", json!({"steps": "package.steps", "start": "request.start_step", "end": "request.end_step", "max_iterations": "request.max_iterations"}),
                    json!({"first_step": "diffusion.start_step", "iterations": "diffusion.iterations", "last_end": "diffusion.end_step"})), &[sampler]);
            }
        }
        components.insert(
            "step_offset".into(),
            policy(
                "step_offset",
                json!({"iteration": row("int64"), "start": one("int64")}),
                json!({"step": row("int64")}),
                None,
            ),
        );
        match &plan.latent {
            LatentSource::Empty { node, .. }
            | LatentSource::Sized { node, .. }
            | LatentSource::Audio { node, .. }
            | LatentSource::Edit {
                node,
                inpaint: None,
                ..
            } => {
                components.insert("empty_latent".into(), policy("empty_latent", json!({"row_shape": contract("int64", json!(["row_rank"]), false), "like": latent()}), json!({"latent": latent()}), None));
                setup.push(invoke("empty_latent", json!({"row_shape": "diffusion.latent_row_shape", "like": "diffusion.noise"}), json!({"latent": "latent.source"})), &[node]);
            }
            LatentSource::Encoded { encode, .. } => {
                let from: Vec<&String> = [Some(encode), picture_loader]
                    .into_iter()
                    .flatten()
                    .collect();
                setup.push(
                    invoke(
                        &m("vae_encoder"),
                        json!({"image": picture_value}),
                        json!({"latent": "latent.source"}),
                    ),
                    &from,
                );
            }
            LatentSource::Edit {
                node: encode,
                image,
                inpaint: Some(_),
                ..
            } => {
                setup.push(
                    invoke(
                        &m("vae_encoder"),
                        json!({"image": "request.image"}),
                        json!({"latent": "latent.source"}),
                    ),
                    &[Some(encode), image.loader()]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>(),
                );
            }
            LatentSource::Stage { .. } | LatentSource::Composite(_) => {}
            LatentSource::Inpaint {
                encode,
                image,
                mask,
                ..
            } => {
                components.insert("inpaint_pixels".into(), edit::inpaint_pixels());
                setup.push(
                    invoke(
                        "inpaint_pixels",
                        json!({"image": "request.image", "mask": "request.mask"}),
                        json!({"pixels": "inpaint.pixels"}),
                    ),
                    &[encode, image, &mask.loader],
                );
                setup.push(
                    invoke(
                        &m("vae_encoder"),
                        json!({"image": "inpaint.pixels"}),
                        json!({"latent": "latent.source"}),
                    ),
                    &[encode],
                );
            }
        }
        // The picture the prompts carry, beside the sample.
        edit::edit_latent(
            plan,
            (&m("vae_encoder"), &picture_value),
            &mut inputs,
            &mut components,
            &mut setup,
        );
        if encodes {
            components.insert(
                m("vae_encoder"),
                pixels::vae_encoder(&m("vae_encoder"), latent()),
            );
        }
        let parts = (&mut inputs, &mut components, &mut setup);
        let source = super::held::hold(plan, source, &m("vae_encoder"), parts);
        let add_noise = !matches!(
            s.window,
            Window::Steps {
                add_noise: false,
                ..
            }
        );
        if add_noise {
            components.insert("add_noise".into(), policy("add_noise", json!({"latent": latent(), "noise": latent(), "schedule": schedule, "step": one("int64")}), json!({"noised": latent()}),
                Some(json!({"id": "wfstudio.add-noise", "version": "1", "parameters": {"prediction": prediction}}))));
            setup.push(invoke("add_noise", json!({"latent": source, "noise": "diffusion.noise", "schedule": "diffusion.schedule", "step": "diffusion.start_step"}), json!({"noised": "latent.start"})), &[sampler]);
            initializer = "latent.start".into();
        } else {
            initializer = source.clone();
        }
    }
    let masked = super::mask::latent_mask(plan, latent(), &mut inputs, &mut components, &mut setup);
    // The reference pictures the prompts carry, encoded once.
    let reference = super::reference::latents(
        plan,
        (&m("vae_encoder"), &picture_value),
        vision.as_ref().map_or(&[][..], |v| &v.references[..]),
        &mut components,
        &mut setup,
    );
    if reference.is_some() {
        // MiniMax H3's keyframes beside a packed row: a picture's latent.
        let encoded = match plan.axes {
            Axes::AudioVideo => Axes::Image.latent(),
            _ => latent(),
        };
        let encoder = pixels::vae_encoder(&m("vae_encoder"), encoded);
        components.entry(m("vae_encoder")).or_insert(encoder);
    }
    setup.push(
        invoke(
            "continue_predicate",
            json!({"done": "package.false"}),
            json!({"continue": "setup.continue"}),
        ),
        &[],
    );

    // The loop body: one solver step per iteration.
    if windowed {
        body.push(
            invoke(
                "step_offset",
                json!({"iteration": "loop.iteration", "start": "diffusion.start_step"}),
                json!({"step": "diffusion.step"}),
            ),
            &[sampler],
        );
    }
    let solved = if masked {
        "latent.solved"
    } else {
        "latent.body"
    };
    let estimates = Estimates {
        first: Calls::estimate(""),
        unconditional: Calls::unconditional(""),
        second: Calls::estimate("_2"),
        third: Calls::estimate("_3"),
        second_unconditional: Calls::unconditional("_2"),
    };
    let shift = half_log_snr
        .as_ref()
        .map(|(ports, binds, _)| (ports, binds));
    let mut solver = solver_step(
        s,
        (step_value, &schedule, shift),
        prediction,
        solved,
        &estimates,
        plan.axes,
    );
    if solver.own_sigmas {
        let length = steps + 1;
        let run = (s, windowed);
        solving::solver_sigmas(half_log_snr, run, length, &mut components, &mut setup);
    }
    let (first_input, first_timestep) = solving::first_point(
        &mut solver,
        (step_value, &schedule),
        plan.axes,
        &mut components,
        &mut body,
        sampler,
    );
    let mut denoiser_ports =
        json!({"sample": latent(), "timestep": row("float32"), "encoder_hidden_states": hidden()});
    if sdxl {
        denoiser_ports["text_embeds"] = pooled.clone();
        denoiser_ports["time_ids"] = time_ids.clone();
    }
    let guidance = prompts::guidance_inputs(plan);
    if !guidance.is_empty() {
        denoiser_ports["guidance"] = row("float32");
    }
    if video.is_some() {
        svd::denoiser_ports(&mut denoiser_ports);
    }
    super::lotus::declare(plan, &mut inputs, &mut denoiser_ports);
    if let Some(slots) = super::vision::spliced(plan) {
        denoiser_ports["image_slots"] = slots;
    }
    let seconds = plan.seconds.iter().flat_map(|seconds| {
        [
            ("seconds_start", seconds.start),
            ("seconds_total", seconds.total),
        ]
    });
    let frame_rate = plan
        .frame_rate
        .iter()
        .map(|rate| ("frame_rate", rate.value));
    // The audio model's seconds and the video model's frame rate: inputs
    // the denoiser takes with every prompt.
    for (port, value) in seconds.chain(frame_rate) {
        denoiser_ports[port] = row("float32");
        inputs.insert(
            format!("request.{port}"),
            parameter(
                row("float32"),
                json!({"kind": "opaque"}),
                port,
                json!(value),
            ),
        );
    }
    super::reference::ports(plan, &mut denoiser_ports);
    super::frames::denoiser_ports(plan, &latent(), &mut denoiser_ports);
    super::held::denoiser_ports(plan, &mut denoiser_ports);
    super::patch::denoiser_ports(plan, &latent(), &mut denoiser_ports);
    if plan.edit().is_some() {
        denoiser_ports["concat"] = latent();
        if edit::takes_mask(plan) {
            denoiser_ports["concat_mask"] = picture(json!(1));
        }
    }
    for (input, value) in guidance {
        let name = input.trim_start_matches("request.");
        inputs.insert(
            input.into(),
            parameter(
                row("float32"),
                json!({"kind": "opaque"}),
                name,
                json!(value),
            ),
        );
    }
    let (control_scale, control_picture) = super::control::control(
        plan,
        &m,
        (&schedule, step_value, control_made),
        &mut denoiser_ports,
        &mut inputs,
        &mut components,
        (&mut setup, &mut body),
    );
    let estimates = super::av::denoiser_ports(plan, &mut denoiser_ports)
        .unwrap_or_else(|| json!({"noise_pred": latent()}));
    components.insert(
        m("denoiser"),
        component(
            &format!("{}/model.onnx", m("denoiser")),
            denoiser_ports,
            estimates,
            None,
        ),
    );
    match &s.dual {
        None if plan.model.linear_cfg.is_some() => {
            let min_scale = plan.model.linear_cfg.as_ref().map(|l| l.min_cfg);
            components.insert("linear_guidance_combine".into(), policy("linear_guidance_combine",
                json!({"unconditional": latent(), "conditional": latent(), "scale": row("float32")}), json!({"estimate": latent()}),
                Some(json!({"id": "wfstudio.linear-guidance-combine", "version": "1", "parameters": {"min_scale": min_scale}}))));
        }
        None => {
            components.insert("guidance_combine".into(), policy("guidance_combine",
                json!({"unconditional": latent(), "conditional": latent(), "scale": row("float32")}), json!({"estimate": latent()}),
                Some(json!({"id": "onnx-genai.guidance-combine", "version": "1", "bindings": {"unconditional": "unconditional", "conditional": "conditional", "scale": "scale", "estimate": "estimate"}}))));
        }
        Some(dual) => {
            inputs.insert(
                "request.guidance_scale_2".into(),
                parameter(
                    row("float32"),
                    json!({"kind": "opaque"}),
                    "guidance_scale_2",
                    json!(dual.cfg2),
                ),
            );
            let style = if dual.nested { "nested" } else { "regular" };
            components.insert("dual_guidance_combine".into(), policy("dual_guidance_combine",
                json!({"unconditional": latent(), "middle": latent(), "conditional": latent(), "scale": row("float32"), "scale_2": row("float32")}), json!({"estimate": latent()}),
                Some(json!({"id": "wfstudio.dual-guidance-combine", "version": "1", "parameters": {"style": style}}))));
        }
    }
    super::calls::declare_cfg_norm(plan, &mut inputs, &mut components);
    let calls = Calls {
        plan,
        sides: &sides,
        models,
        control_scale: &control_scale,
        control_picture: &control_picture,
        reference: reference.as_ref(),
    };
    calls.push(&mut body, first_input, first_timestep, "");
    solving::solve(&mut solver, &calls, &mut components, &mut body, sampler);
    let at = super::mask::BlendAt {
        step: step_value,
        // At the sigmas the sampler steps by (dpm_fast's grid).
        sigmas: solver.sigmas,
        sigmas_contract: &schedule,
        first: windowed.then_some("diffusion.start_step"),
        shift: blend_shift.as_ref(),
    };
    super::mask::masked_blend(plan, at, latent(), &mut components, &mut body);
    let (carried, state) =
        solving::carry(solver, (&initializer, plan.axes), &mut inputs, &mut body);
    let step = json!({"kind": "loop", "setup": setup.steps, "steps": body.steps, "continue_when": "loop_0_active", "max_iterations": max_iterations,
        "carried": carried,
        "iteration": {"value": "loop.iteration", "contract": contract("int64", json!(["batch"]), false)}});
    let mut provenance = Provenance::new();
    setup.provenance(".setup", &mut provenance);
    body.provenance(".steps", &mut provenance);
    StageParts {
        inputs,
        components,
        state,
        step,
        prompts,
        provenance,
    }
}
