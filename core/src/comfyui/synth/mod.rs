//! Synthesis of the policy components a lowered ComfyUI graph names
//! (`diffusion_schedule`, `solver_step`, `guidance_combine`, ...): real ONNX
//! models, built in code from the document's port contracts and the
//! parameters the lowering recorded (sampler, scheduler, steps, model
//! sampling family). Stand-in model components (`standin`) are made the
//! same way.

mod adaptive;
mod beta;
pub mod camera;
mod cfgpp;
mod composite;
mod ersde;
mod estimate;
mod frames;
mod graph;
mod guidance_norm;
mod held;
mod marigold;
mod midpoint;
mod model_call;
mod multistep;
mod noise;
mod outpaint;
mod picture_ops;
mod policies;
pub mod prediction;
mod resample;
pub mod sampling;
mod sasolver;
mod schedule;
mod sde;
mod shifted;
mod solver;
mod solver_sigmas;
pub mod spacing;
pub mod standin;
mod steps;
mod stitch;
pub mod tables;
mod three_calls;
mod unipc;
pub mod upscale;
mod vace;

pub use composite::MAX_LATENT_SIDE;
pub use policies::decoded_frames;

use graph::Family;
use serde_json::Value;

/// The policy components the lowering can name, each synthesized here.
pub const POLICIES: &[&str] = &[
    "image_stitch",
    "diffusion_schedule",
    "diffusion_timesteps",
    "solver_sigmas",
    "schedule_lookup",
    "model_input",
    "continue_predicate",
    "latent_row_shape",
    "latent_noise",
    "guidance_combine",
    "dual_guidance_combine",
    "solver_step",
    "denoise_window",
    "step_window",
    "step_offset",
    "empty_latent",
    "add_noise",
    "inpaint_pixels",
    "latent_mask",
    "masked_blend",
    "sdxl_conditioning",
    "control_scale",
    "latent_upscale",
    "image_scale",
    "input_scale",
    "init_scale",
    "source_scale",
    "vision_scale",
    "reference_scale",
    "control_picture",
    "patch_picture",
    "patch_scale",
    "decoded_pixels",
    "latent_composite",
    "solver_midpoint",
    "solver_third_call",
    "solver_first_call",
    "upscale_pixels",
    "upscaled_pixels",
    "video_pixels",
    "batch_frames",
    "join_frames",
    "av_split",
    "av_join",
    "zero_conditioning",
    "zero_latent",
    "audio_loudness",
    "linear_guidance_combine",
    "cfg_norm",
    "no_reference",
    "picture_size",
    "video_frames",
    "join_tokens",
    "grey_video",
    "fit_frames",
    "take_frames",
    "fun_concat",
    "vace_context",
    "trim_latent",
    "outpaint_pad",
    "append_style",
    "frame_pictures",
    "one_frame",
    "start_latent",
    "start_scale",
    "camera_embedding",
    "pixel_decoder",
    "held_frames",
    "held_input",
    "held_estimate",
    "held_scale",
    "even_sides",
];

/// The policies a workflow (or a stage, for a stage's pictures) may hold
/// several of, numbered from the second: `image_scale`, `image_scale_2`,
/// ...
const NUMBERED: &[&str] = &[
    "image_scale",
    "image_stitch",
    "input_scale",
    "source_scale",
    "vision_scale",
    "reference_scale",
    "trim_latent",
    "join_frames",
    "av_split",
    "held_scale",
    "even_sides",
];

/// The policy kind and stage prefix of a component name: a chained
/// sampler's policies are named `stage<k>_<policy>` (k from 2), the first
/// stage's by the policy alone; a [`NUMBERED`] policy may end in `_<n>`.
pub fn policy_kind(component: &str) -> Option<(&str, &str)> {
    let (prefix, kind) = match component.split_once('_') {
        Some((stage, rest))
            if stage.len() > "stage".len()
                && stage.starts_with("stage")
                && stage["stage".len()..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            (&component[..stage.len() + 1], rest)
        }
        _ => ("", component),
    };
    if POLICIES.contains(&kind) {
        return Some((kind, prefix));
    }
    let (base, number) = kind.rsplit_once('_')?;
    // From 2, as the builder numbers them.
    let numbered = NUMBERED.contains(&base)
        && !number.starts_with('0')
        && number.bytes().all(|b| b.is_ascii_digit())
        && number.parse::<u64>().is_ok_and(|n| n >= 2);
    numbered.then_some((base, prefix))
}

/// Why a policy could not be synthesized.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("cannot synthesize policy `{component}`: {reason}")]
pub struct SynthError {
    /// The component.
    pub component: String,
    /// What is missing or unsupported.
    pub reason: String,
}

/// Whether `component` names a policy this module makes.
pub fn is_policy(component: &str) -> bool {
    policy_kind(component).is_some()
}

/// Every policy component of the lowered `document`, by component name,
/// as binary ONNX model bytes.
pub fn policies(document: &Value) -> Result<Vec<(String, Vec<u8>)>, SynthError> {
    let components = document
        .pointer("/pipeline/workflow/components")
        .and_then(Value::as_object)
        .ok_or_else(|| SynthError {
            component: "-".into(),
            reason: "the document has no pipeline.workflow.components".into(),
        })?;
    components
        .iter()
        .filter_map(|(name, component)| Some((name, policy_kind(name)?, component)))
        .map(|(name, (kind, stage), component)| {
            let bytes = match picture_policy(kind, component)? {
                Some(bytes) => bytes,
                None => policy(kind, component, &Family::of(components, stage)?)?,
            };
            Ok((name.clone(), bytes))
        })
        .collect()
}

/// The policies on pictures, which need no sampler stage (a graph of
/// loaded pictures alone has none); `None` for other kinds.
fn picture_policy(kind: &str, component: &Value) -> Result<Option<Vec<u8>>, SynthError> {
    let mut g = graph::PolicyGraph::new(kind, component);
    match kind {
        "image_scale" | "input_scale" | "init_scale" | "source_scale" | "start_scale"
        | "vision_scale" | "reference_scale" | "control_picture" | "patch_picture"
        | "patch_scale" | "held_scale" => upscale::image_scale(&mut g)?,
        "even_sides" => held::even_sides(&mut g)?,
        "picture_size" => upscale::picture_size(&mut g)?,
        "outpaint_pad" => outpaint::outpaint_pad(&mut g)?,
        "image_stitch" => stitch::image_stitch(&mut g)?,
        _ => match policies::pixels_alone(&mut g) {
            Some(built) => built?,
            None => return Ok(None),
        },
    }
    Ok(Some(g.finish()))
}

fn policy(kind: &str, component: &Value, family: &Family) -> Result<Vec<u8>, SynthError> {
    let mut g = graph::PolicyGraph::new(kind, component);
    match kind {
        "diffusion_schedule" => schedule::sigmas(&mut g, family)?,
        "diffusion_timesteps" => schedule::timesteps(&mut g, family)?,
        "solver_sigmas" => solver_sigmas::build(&mut g, family)?,
        "solver_step" => solver::step(&mut g, family)?,
        "solver_midpoint" => midpoint::policy(&mut g, family)?,
        "solver_third_call" => three_calls::policy(&mut g, family)?,
        "solver_first_call" => adaptive::first_call(&mut g, family)?,
        "latent_noise" => noise::latent_noise(&mut g, family)?,
        "add_noise" => noise::add_noise(&mut g, family)?,
        "masked_blend" => noise::masked_blend(&mut g, family)?,
        "latent_upscale" => upscale::latent_upscale(&mut g)?,
        "latent_composite" => composite::latent_composite(&mut g)?,
        "video_frames" => frames::video_frames(&mut g)?,
        "start_latent" => frames::start_latent(&mut g)?,
        "camera_embedding" => camera::camera_embedding(&mut g)?,
        "grey_video" => vace::grey_video(&mut g)?,
        "fit_frames" | "take_frames" => vace::fit_frames(&mut g)?,
        "fun_concat" => frames::fun_concat(&mut g)?,
        "vace_context" => vace::vace_context(&mut g)?,
        "held_frames" => held::held_frames(&mut g)?,
        "held_input" => held::held_input(&mut g)?,
        "held_estimate" => held::held_estimate(&mut g, family)?,
        _ => policies::build(&mut g, family)?,
    }
    Ok(g.finish())
}
