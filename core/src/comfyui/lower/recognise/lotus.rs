//! Lotus (dense prediction by a Stable Diffusion 2 UNet, ComfyUI's
//! `LotusD`): its prompt is `LotusConditioning`, a fixed embedding of the
//! frozen encoder's empty prompt fed straight to the guider, and its model
//! predicts the picture of the noisy latent taken unscaled (`IMG_TO_IMG`)
//! on SD's discrete table. ComfyUI knows the model by its weights; the
//! lowering knows it by the `UNETLoader`'s file name.

use super::super::graph::Graph;
use super::model::{ModelChain, TableSampling};
use super::{Conditioning, Prompt};
use crate::comfyui::lower::Refusal;
use crate::comfyui::synth::prediction::{Prediction, PredictionKind};
use crate::comfyui::synth::tables::Table;

/// ComfyUI's node giving Lotus' prompt.
pub(super) const CONDITIONING: &str = "LotusConditioning";

/// The conditioning `LotusConditioning` node `node` gives the prompt
/// input it feeds straight (output `slot`, read by input `from`).
pub(super) fn conditioning(
    g: &Graph<'_>,
    node: &str,
    slot: i64,
    from: (&str, &str),
) -> Result<Conditioning, Refusal> {
    g.first_output(from, node, slot)?;
    // No text encoder: the node is its own source.
    Ok(Conditioning::unencoded(node, Prompt::Lotus, node))
}

/// Settles the sampling of a stage whose prompts are Lotus' (`prompts`,
/// positive first): both must be, and the model must be Lotus' by its
/// file, which samples as `IMG_TO_IMG` on SD's table unless a node states
/// another sampling; Lotus' model conditioned with text is refused.
pub(super) fn sampling(
    g: &Graph<'_>,
    prompts: [&Conditioning; 2],
    model: &mut ModelChain,
) -> Result<(), Refusal> {
    let lotus = |c: &Conditioning| c.text == Prompt::Lotus;
    let file = match g.class(&model.loader) {
        "UNETLoader" => g.text(&model.loader, "unet_name").unwrap_or_default(),
        _ => "",
    };
    let name = file.rsplit(['/', '\\']).next().unwrap_or_default();
    let lotus_model = name.to_lowercase().contains("lotus");
    let [p, n] = prompts;
    match (lotus(p), lotus(n)) {
        (true, true) => {}
        (false, false) if lotus_model => {
            return Err(g.refuse(
                &model.loader,
                None,
                format!(
                    "loads Lotus' model ('{name}'), which node {}'s text conditions; ComfyUI samples it with its own task, and the lowering gives it only its own prompt (LotusConditioning)",
                    p.encoder
                ),
                "condition the Lotus model with LotusConditioning at a BasicGuider",
            ));
        }
        (false, false) => return Ok(()),
        _ => {
            let (fixed, text) = if lotus(p) { (p, n) } else { (n, p) };
            return Err(g.refuse(
                &fixed.encoder,
                None,
                format!(
                    "gives one prompt Lotus' fixed embedding while node {} encodes the other; Lotus takes its own prompt on both sides",
                    text.encoder
                ),
                "use BasicGuider with the LotusConditioning",
            ));
        }
    }
    if !lotus_model {
        return Err(g.refuse(
            &prompts[0].encoder,
            None,
            format!(
                "conditions node {}'s model, which is not Lotus' by its file name (a UNETLoader's holding 'lotus'), and the lowering knows Lotus' sampling only so",
                model.loader
            ),
            "load the Lotus model with a UNETLoader, keeping 'lotus' in its file name",
        ));
    }
    if model.table.is_none() && model.flow.is_none() {
        model.table = Some(TableSampling {
            node: model.loader.clone(),
            prediction: Prediction {
                kind: PredictionKind::ImgToImg,
                sigma_data: 1.0,
            },
            table: Table::Discrete {
                zero_terminal_snr: false,
            },
        });
    }
    Ok(())
}
