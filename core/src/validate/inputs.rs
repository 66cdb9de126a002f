//! Tensor contracts (V-W01..V-W03) and workflow inputs and outputs
//! (V-W10..V-W16, V-W18, V-W19).

use super::{Ctx, workflow_path};
use crate::contracts::{FLOAT_DTYPES, TENSOR_DTYPES};
use std::collections::HashSet;
use wfstudio_schema::DocPath;
use wfstudio_schema::types::contract::{BatchLayout, TensorContract};
use wfstudio_schema::types::workflow::{
    InputRole, InputSource, MediaContainer, OutputRole, OutputStage, RuntimeInputRole, WorkflowSpec,
};

/// V-W01..V-W03 for one contract. The path and the owner's name are built
/// only when a rule fails (this runs for every port of every component).
pub(super) fn check_contract(
    ctx: &mut Ctx<'_>,
    path: impl Fn() -> DocPath,
    owner: impl Fn() -> String,
    c: &TensorContract,
) {
    if let Some(BatchLayout::RequestExpanded(layout)) = &c.batch_layout
        && layout.factor < 1
    {
        let (path, owner) = (path(), owner());
        ctx.report(
            "V-W01",
            path.key("batch_layout").key("factor"),
            format!(
                "{owner} declares request_expanded.factor {}: expansion factor must be at least 1",
                layout.factor
            ),
        );
    }
    if !TENSOR_DTYPES.contains(&c.dtype.as_str()) {
        let (path, owner) = (path(), owner());
        ctx.report(
            "V-W02",
            path.key("dtype"),
            format!(
                "{owner} uses dtype '{}', which is not a tensor dtype this format can name",
                c.dtype
            ),
        );
    }
    if let Some(shape) = &c.shape
        && shape.len() as u64 != c.rank
    {
        let (path, owner) = (path(), owner());
        ctx.report(
            "V-W03",
            path.key("shape"),
            format!(
                "{owner} declares rank {} but has {} shape dimensions",
                c.rank,
                shape.len()
            ),
        );
    }
}

pub(super) fn check(ctx: &mut Ctx<'_>, wf: &WorkflowSpec) {
    let inputs_path = workflow_path().key("inputs");
    let names: HashSet<&str> = wf
        .inputs
        .iter()
        .flatten()
        .map(|(n, _)| n.as_str())
        .collect();
    let mut presence_names: HashSet<&str> = HashSet::new();
    for (name, input) in wf.inputs.iter().flatten() {
        let at = inputs_path.key(name.as_str());
        let owner = format!("workflow input '{name}'");
        check_contract(
            ctx,
            || at.key("contract"),
            || owner.clone(),
            &input.contract,
        );
        let runtime_role = match &input.role {
            InputRole::Runtime(r) => Some(r.role),
            InputRole::Opaque => None,
        };
        if matches!(input.source, InputSource::Request) && runtime_role.is_none() {
            ctx.report(
                "V-W10",
                at.key("role"),
                format!("workflow request input '{name}' must declare one versioned runtime role"),
            );
        }
        let required = input.is_required();
        if !required && input.default.is_none() && input.present_as.is_none() {
            ctx.report(
                "V-W11",
                at.key("required"),
                format!(
                    "{owner} cannot be optional without a literal default or present_as predicate"
                ),
            );
        }
        let Some(presence) = &input.present_as else {
            continue;
        };
        let p = at.key("present_as");
        if required {
            ctx.report(
                "V-W12",
                p.clone(),
                format!("{owner} uses present_as but is required"),
            );
        }
        if input.default.is_some() {
            ctx.report(
                "V-W13",
                p.clone(),
                format!("{owner} cannot combine present_as with a literal default"),
            );
        }
        match &input.source {
            InputSource::Request => {
                let allowed = matches!(
                    runtime_role,
                    Some(
                        RuntimeInputRole::Media
                            | RuntimeInputRole::Constraint
                            | RuntimeInputRole::SessionId
                    )
                );
                if !allowed {
                    ctx.report(
                        "V-W15",
                        p.clone(),
                        format!("{owner} can use present_as only with media, constraint, or session_id roles"),
                    );
                }
            }
            InputSource::Application(_) => {}
            InputSource::Literal | InputSource::Artifact(_) => ctx.report(
                "V-W14",
                p.clone(),
                format!("{owner} can use present_as only with request or application sources"),
            ),
        }
        if presence.is_empty() {
            ctx.report("V-W16", p, format!("{owner} has an empty present_as value"));
        } else if names.contains(presence.as_str()) || !presence_names.insert(presence) {
            ctx.report(
                "V-W16",
                p,
                format!(
                    "{owner} present_as value '{presence}' collides with another initial SSA value"
                ),
            );
        }
    }
    let outputs_path = workflow_path().key("outputs");
    for (name, output) in wf.outputs.iter().flatten() {
        let at = outputs_path.key(name.as_str());
        let owner = format!("workflow output '{name}'");
        check_contract(
            ctx,
            || at.key("contract"),
            || owner.clone(),
            &output.contract,
        );
        match (output.role, &output.value_range) {
            (OutputRole::Image, None) => ctx.report(
                "V-W19",
                at.key("role"),
                format!("workflow image output '{name}' must declare value_range"),
            ),
            (role, Some(_)) if role != OutputRole::Image => ctx.report(
                "V-W19",
                at.key("value_range"),
                format!("non-image output '{name}' cannot declare image value_range"),
            ),
            _ => {}
        }
        let Some(media) = &output.media else {
            continue;
        };
        let m = at.key("media");
        if output.role != OutputRole::Audio {
            ctx.report(
                "V-W18",
                m.clone(),
                format!("{owner} declares a media contract but its role is not audio"),
            );
        }
        match media.sample_rate_hz {
            None => ctx.report(
                "V-W18",
                m.clone(),
                format!("{owner} media must declare sample_rate_hz"),
            ),
            Some(0) => ctx.report(
                "V-W18",
                m.key("sample_rate_hz"),
                format!("{owner} media sample_rate_hz must be greater than zero"),
            ),
            _ => {}
        }
        match media.channels {
            None => ctx.report(
                "V-W18",
                m.clone(),
                format!("{owner} media must declare channels"),
            ),
            Some(0) => ctx.report(
                "V-W18",
                m.key("channels"),
                format!("{owner} media channels must be greater than zero"),
            ),
            _ => {}
        }
        if media.source_sample_rate_hz == Some(0) {
            ctx.report(
                "V-W18",
                m.key("source_sample_rate_hz"),
                format!("{owner} media source_sample_rate_hz must be greater than zero"),
            );
        }
        if media.container == MediaContainer::Wav {
            let dtype = output.contract.dtype.as_str();
            match output.stage {
                OutputStage::PostAdapter if dtype != "uint8" => ctx.report(
                    "V-W18",
                    at.key("contract").key("dtype"),
                    format!("{owner} is a post-adapter WAV container and must use dtype uint8"),
                ),
                OutputStage::PreAdapter if !FLOAT_DTYPES.contains(&dtype) => ctx.report(
                    "V-W18",
                    at.key("contract").key("dtype"),
                    format!("{owner} is pre-adapter WAV audio and must use a float dtype"),
                ),
                _ => {}
            }
        }
    }
}
