//! The rule table: every semantic rule's stable code, what it checks and
//! the fix hint shown with its diagnostics. Codes follow the labels of
//! `shared/spec/WORKFLOW_IR.md` (V-…); V-N22 and V-F* are this project's own.

/// One semantic rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable code, e.g. `V-N10`.
    pub code: &'static str,
    /// What the rule requires.
    pub summary: &'static str,
    /// How to fix a violation.
    pub help: &'static str,
}

macro_rules! rules {
    ($($code:literal : $summary:literal => $help:literal;)*) => {
        /// Every rule, in documentation order.
        pub const RULES: &[Rule] = &[$(Rule { code: $code, summary: $summary, help: $help }),*];
    };
}

rules! {
    "V-W00a": "every invoke names a declared component" => "declare the component under pipeline.workflow.components or fix the name";
    "V-W00b": "every carry names a declared state cell" => "declare the cell under pipeline.workflow.state or fix the name";
    "V-W01": "request_expanded batch layouts have factor >= 1" => "set factor to the number of physical rows per request (at least 1)";
    "V-W02": "tensor dtypes come from the format's vocabulary" => "use a tensor dtype such as float32, float16, bfloat16, int64, int32, uint8 or bool";
    "V-W03": "a declared shape has exactly rank entries" => "make the shape list as long as the rank";
    "V-W10": "request-sourced inputs carry a versioned runtime role" => "give the input a role {kind: runtime, version: '1.0', role: ...} or change its source";
    "V-W11": "optional inputs have a literal default or a present_as predicate" => "add `default:` or `present_as:`, or make the input required";
    "V-W12": "present_as is only for optional inputs" => "set `required: false` or remove present_as";
    "V-W13": "present_as and default are exclusive" => "keep either the default or the presence predicate";
    "V-W14": "present_as is only for request or application sources" => "remove present_as or change the source";
    "V-W15": "request inputs use present_as only with media, constraint or session_id roles" => "remove present_as or use an application source";
    "V-W16": "present_as names are non-empty and unique among initial values" => "choose a presence name no input or other presence value uses";
    "V-W17": "optional inputs are read only inside the 'true' case of their presence branch" => "wrap the read in a branch on the present_as value and read it in its 'true' case";
    "V-W18": "audio media contracts are complete and consistent" => "declare media only on audio outputs with sample_rate_hz and channels > 0 and a dtype matching the container and stage";
    "V-W19": "image outputs declare value_range; others do not" => "add value_range to image outputs and remove it elsewhere";
    "V-W20": "component names are non-empty and contain no '.'" => "rename the component without dots";
    "V-W21": "ONNX components name an artifact" => "set implementation.artifact to the package-relative model path";
    "V-W22": "adapter components pin their exact ABI version in the manifest" => "add the ABI and version under pipeline.workflow.manifest.adapter_abis";
    "V-W23": "component contracts have a well-formed id and version" => "write the contract as id: name (no '@', no spaces) and a non-empty version string";
    "V-W24": "contract bindings name declared ports" => "bind each contract role to a port declared under ports";
    "V-W25": "an adapter's contract matches its ABI" => "make contract id@version equal implementation abi@version";
    "V-W26": "known adapter contracts use a supported action" => "set parameters.action to one the contract defines";
    "V-W27": "known adapter contracts bind every required role in the right direction" => "bind the missing role to a declared port of the right direction";
    "V-W28": "application-overridable components have a versioned contract" => "add a contract or set application_overridable: false";
    "V-W29": "application-overridable components are ONNX components" => "set application_overridable: false";
    "V-W31": "session lease settings only on session-scoped cells" => "remove `session:` or set scope: session";
    "V-W32": "session leases use the exclusive policy" => "use policy: exclusive";
    "V-W33": "session leases declare no ttl_seconds" => "remove ttl_seconds";
    "V-W34": "session leases do not ask for optimistic metadata versioning" => "remove optimistic_metadata_version";
    "V-W35": "a cell's varying axis lies within its rank" => "use an axis smaller than the contract's rank";
    "V-W36": "service_group names a declared state-service group" => "declare the group under serving.state_service.groups or fix the name";
    "V-W37": "a group's sequence_axis lies within each bound cell's rank" => "use a sequence_axis smaller than the cell's rank";
    "V-W38": "a bound cell varies on its group's sequence_axis" => "make the recurrence axis equal the group's sequence_axis";
    "V-W39": "a varying bound cell's group declares a sequence_axis" => "declare sequence_axis on the group";
    "V-W3A": "group-bound cells are request-aligned" => "give the cell a request_aligned (or request_expanded) batch_layout";
    "V-W3B": "group-bound growing cells grow by serving.accepted_len" => "use serving.accepted_len as the recurrence increment";
    "V-G01": "group layouts are non-empty" => "name the memory layout, e.g. bnsh";
    "V-G02": "logical_lengths names a rank-1 integer semantic state cell" => "point logical_lengths at a rank-1 integer semantic state cell";
    "V-G03": "total_length names a state cell" => "point total_length at a declared state cell";
    "V-G04": "sequence updates (append, indexed_scatter) declare a sequence_axis" => "declare sequence_axis on the group";
    "V-G05": "replace updates declare no sequence_axis" => "remove sequence_axis from the replace group";
    "V-G06": "cells of replace groups are invariant" => "use recurrence {kind: invariant} for fixed-size state";
    "V-G07": "indexed_scatter updates are complete and consistent" => "declare logical_lengths, an integer rank-1 write_indices cell, an integer scalar capacity and write_indices/kv_length ports for every bound component";
    "V-G08": "several aliases of one role per component declare unique layers" => "give each alias a distinct `layer`";
    "V-G09": "attention groups pair every key layer with a value layer" => "declare one key and one value alias per layer";
    "V-G10": "a sole ONNX decoder in a self-attention group declares a token_ids or inputs_embeds role" => "add ports.roles with token_ids or inputs_embeds";
    "V-G11": "cascade names declared groups" => "cascade only to declared groups";
    "V-G12": "rollback_positions is greater than zero" => "omit rollback_positions to declare that rollback is impossible";
    "V-G13": "group port aliases name declared components, cells and ports" => "alias declared ports of a declared component to cells bound to this group";
    "V-N01": "step lists and sequences are non-empty (except loop setup)" => "add a step or remove the empty list";
    "V-N10": "every SSA value is defined once" => "give the new value a name no visible value has";
    "V-N11": "every read refers to a value defined earlier and in scope" => "define the value before this step, in a scope visible here";
    "V-N20": "invokes bind only declared ports, and every required port" => "bind exactly the component's declared ports";
    "V-N21": "a bound value's contract agrees with its port" => "bind a value whose dtype, rank and fixed dims match the port";
    "V-N22": "port symbols bind consistently within one invoke" => "bind values whose fixed extents agree wherever the ports share a symbol";
    "V-N30": "max_iterations is a visible integer scalar" => "use an integer scalar (rank 0, or rank 1 shape [1]) defined before the loop";
    "V-N31": "the iteration value is int64 rank 0 or 1 and a new name" => "declare {dtype: int64, rank: 0} (or rank 1 with a one-dimension shape) and a fresh name";
    "V-N32": "carries read visible, state-compatible initial and next values" => "make the initializer, initial and next values visible and shaped like the cell";
    "V-N33": "continue_when is a visible bool control read before the body" => "use a bool value defined before the loop or a carried bool cell";
    "V-N40": "branch predicates are visible bool or integer scalars" => "use a bool or integer scalar (rank 0, or rank 1 shape [1])";
    "V-N41": "branches have at least one case" => "add a case";
    "V-N42": "phi outputs map every case (and the default exactly when declared) to compatible values of that case" => "give each phi one source per case, visible in that case";
    "V-N43": "session state carried inside a case leaves through a phi" => "export the carried session cell through a branch output";
    "V-N50": "emit controls are visible (when: bool; valid_length: integer)" => "use a bool `when` and an integer `valid_length`";
    "V-N51": "row-wise emit controls need a request-aligned value" => "give the emitted value a request_aligned layout or use a singleton control";
    "V-N52": "emits target declared outputs" => "declare the output under pipeline.workflow.outputs or fix the name";
    "V-N53": "an emitted value's contract agrees with its output" => "emit a value whose dtype, rank and fixed dims match the output";
    "V-X1": "all emits into one output share one batch layout" => "emit values with the same batch_layout into each output";
    "V-X2": "ragged (guarded or prefix) emits go to request-aligned outputs" => "declare a request_aligned batch_layout on the output";
    "V-X3": "emitted values have the output's batch layout" => "make the value's batch_layout equal the output's";
    "V-X4": "serving workflows publish per-request values with a declared layout" => "declare a batch_layout on the emitted value";
    "V-E1": "component effect domains are declared" => "declare the domain under pipeline.workflow.effects";
    "V-E2": "effect domains have names and rewindable domains a positive max_depth" => "name the domain; use {kind: none} to forbid speculation";
    "V-RS1": "stateful components with request-aligned ports declare row_scope" => "add row_scope with the request axis";
    "V-RS2": "row-scoped ports agree with row_scope.axis" => "make row_scope.axis the request axis of every row-scoped port";
    "V-L1": "published runtime-managed state goes through a checkpoint adapter" => "declare checkpoint on the cell's group or stop publishing the cell";
    "V-L2": "group-bound cells are runtime-managed" => "set management: runtime";
    "V-L3": "runtime or external cells declare a release_boundary" => "add release_boundary";
    "V-L4": "workflow-owned cells declare no release_boundary" => "remove release_boundary";
    "V-L5": "session release boundaries need session scope" => "use scope: session or another release_boundary";
    "V-SV1": "serving state_service declares at least one group" => "declare a group or remove serving";
    "V-SV2": "serving.accepted_len is set when groups exist" => "set serving.accepted_len";
    "V-SV3": "serving active/done/accepted_len are visible, well-typed top-level values" => "name top-level values: bool active/done, integer accepted_len, request-aligned on axis 0";
    "V-C1": "the manifest lists every capability the structure needs" => "add the missing capabilities to pipeline.workflow.manifest.capabilities (wfstudio check --fix does it)";
    "V-C2": "documents with adapters list the adapter capabilities" => "add parameter_adapters and heterogeneous_adapter_batching (wfstudio check --fix does it)";
    "V-A1": "the adapter service contract is well formed" => "use application_capability onnx-genai.adapters@1 and positive cache/selection sizes with non-empty artifacts and targets";
    "V-A2": "adapter selection fields name well-typed workflow inputs" => "point each selection field at a required request/application input with the documented role, dtype and shape";
    "V-A3": "LoRA targets are complete, unique and consistent" => "complete each target and keep ids and slices unique";
    "V-A4": "adapter artifacts are complete, consistent and stay in their folders" => "complete each artifact, keep indexes contiguous from 0 and locations under adapters/<alias>/";
    "V-A5": "parameter-overlay components name a declared LoRA target" => "set parameters component and parameter to a target's component and initializer";
    "V-P1": "preprocessing adapters have their preprocessing program" => "declare the preprocessing program for the adapter's modality";
    "V-P2": "a preprocessing program has exactly one adapter component" => "declare exactly one adapter component with the program's ABI";
    "V-P3": "preprocessing adapters take uint8 rank-1 encoded bytes" => "declare input port `encoded` as {dtype: uint8, rank: 1}";
    "V-P4": "preprocessing adapters are invoked exactly once" => "invoke the preprocessing adapter once";
    "V-P5": "preprocessing outputs match the adapter's ports exactly" => "make each program output a non-optional value produced by the adapter with the port's exact contract";
    "V-O1": "generation overrides name request inputs with runtime roles" => "point the override at a request-sourced input with a runtime role and keep minimum <= maximum";
    "V-R1": "required profiles have a kind this reader can execute" => "use a known kind or mark the profile requirement: ignorable";
    "V-R2": "profile outputs name declared workflow outputs" => "map each profile role to a declared workflow output";
    "V-R3": "profile decoding facts are consistent" => "complete the decoding block (blank_id, distinct axes, lengths among outputs, consistent vocabulary)";
    "V-S1": "speculative decoding names declared proposer and target components" => "declare both components in the workflow";
    "V-S2": "chained proposals bind real proposer and target ports" => "bind the chained proposal to declared ports and read-write aliases";
    "V-S3": "rollback state covers the proposal width" => "name declared cells whose groups roll back at least max_proposal_width positions";
    "V-S4": "every effect in the speculative region tolerates the proposal width" => "declare the domain rewindable with max_depth >= max_proposal_width";
    "V-F1": "every referenced artifact file exists" => "add the file to the package or fix the path (check --no-artifacts skips this for design-level documents)";
    "V-F2": "artifact paths stay inside the package folder" => "use a relative path without '..' that resolves inside the package";
}

/// The rule with `code`.
pub fn rule(code: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique() {
        let mut codes: Vec<_> = RULES.iter().map(|r| r.code).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), RULES.len());
    }
}
