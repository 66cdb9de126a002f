//! A model's own sampling, where no `ModelSampling*` node states it.
//! ComfyUI reads it from the checkpoint's weights, which the graph does not
//! hold; the type the text encoder is loaded as names the model family the
//! prompts are encoded for, and with it the family's default sampling
//! (ComfyUI's `supported_models`). Types that serve families with
//! different defaults name none.

use super::super::graph::Graph;
use super::model::{FlowSampling, FlowShift};

/// Flux's default time shift exponent `mu` (ComfyUI's `ModelSamplingFlux`
/// without a node: `shift` 1.15, used as `exp(mu)`).
const FLUX_MU: f64 = 1.15;

/// What a text encoder loader says about the model family.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Family {
    /// The type names a family whose default sampling is this flow.
    Flow(FlowSampling),
    /// The loader states a type that names no single default (or one the
    /// lowering does not know); the type, for the refusal.
    Unsettled(String),
    /// The loader states no type (a checkpoint's own text encoder).
    Unstated,
}

/// The model family that text encoder `loader` (a CLIP loader node) is
/// loaded for.
pub(super) fn family(g: &Graph<'_>, loader: &str) -> Family {
    let clip_type = match g.class(loader) {
        // Its three encoders (CLIP-L, CLIP-G, T5) are SD3's.
        "TripleCLIPLoader" => "sd3",
        "CLIPLoader" | "DualCLIPLoader" => match g.text(loader, "type") {
            Ok(t) => t,
            Err(_) => return Family::Unstated,
        },
        _ => return Family::Unstated,
    };
    let (family, shift, model) = match clip_type {
        "sd3" => (
            "sd3",
            FlowShift::Constant(3.0),
            "SD3's model does (shift 3)",
        ),
        "hunyuan_video" => (
            "sd3",
            FlowShift::Constant(7.0),
            "HunyuanVideo's model does (shift 7)",
        ),
        "wan" => (
            "sd3",
            FlowShift::Constant(8.0),
            "Wan's model does (shift 8)",
        ),
        "chroma" => (
            "flux",
            FlowShift::Constant(FLUX_MU.exp()),
            "Chroma's model does (Flux time shift 1.15, a shift of e^1.15)",
        ),
        // Flux dev and schnell share the text encoders; dev is the one
        // shared graphs mostly run, and the shift stays a run parameter.
        "flux" => (
            "flux",
            FlowShift::Constant(FLUX_MU.exp()),
            "Flux dev's model does (Flux time shift 1.15, a shift of e^1.15), the lowering's assumption: Flux schnell shares the type and takes time shift 1.0, a flow_shift of 2.7183",
        ),
        other => return Family::Unsettled(other.to_string()),
    };
    Family::Flow(FlowSampling {
        node: loader.to_string(),
        shift,
        channels: 16,
        family,
        assumed: Some(match g.class(loader) {
            "TripleCLIPLoader" => format!(
                "node {loader} (TripleCLIPLoader) loads SD3's three text encoders, and the model samples by flow matching as {model}"
            ),
            class => format!(
                "node {loader} ({class}) loads the text encoder as type '{clip_type}', and the model samples by flow matching as {model}"
            ),
        }),
    })
}
