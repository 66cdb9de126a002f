//! The run inputs form: one row per workflow input, generated from its
//! contract. Single-element inputs get a typed widget (a number box, a
//! checkbox; seeds a dice button); larger tensors a JSON box in the recipe
//! format `{dtype, shape, data}`. Prompt-token inputs get a text box when
//! the package has a tokenizer (loaded on a background thread), showing the
//! ids it encodes to; picture, waveform and media inputs a file picker.
//! Rows start from the chosen recipe, else the declared default; what the
//! user changes is an override, passed to the run over the recipe,
//! remembered per package in the config folder (prompts as text, files as
//! their paths), and saved with the recipe inputs by "Save as recipe".

use super::package_facts::FactsSlot;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use wfstudio_runner::media_input::{InputMedia, input_media};
use wfstudio_runner::text::{PackageTokenizer, takes_prompt_tokens};
use wfstudio_runner::{Data, Tensor};
use wfstudio_schema::types::contract::{Dim, LiteralValue, ScalarValue, TensorContract};
use wfstudio_schema::types::document::Document;
use wfstudio_schema::types::workflow::{InputRole, RuntimeInputRole, ValueRange};
use widgets::{ERROR_COLOR, RANGES, pick_file, range_name, value_widget};

mod widgets;

/// How a row is edited.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Widget {
    Int(i64),
    Float(f64),
    Bool(bool),
    /// The recipe JSON of a tensor.
    Json(String),
    /// Prompt text for the package tokenizer (empty: the recipe's ids).
    Prompt(String),
    /// A picked file, decoded when the run starts.
    File {
        path: PathBuf,
        /// The value range pictures are mapped into.
        range: ValueRange,
        /// What was read, or why it could not be.
        summary: String,
    },
}

/// One input.
#[derive(Clone, Debug)]
pub(super) struct Row {
    /// The input's name.
    pub(super) name: String,
    /// `int64 [1]`, for the hover text.
    pub(super) contract: String,
    /// Its dtype.
    pub(super) dtype: String,
    /// The shape of a single-element input (`[]` or `[1, ...]`).
    scalar_shape: Option<Vec<usize>>,
    /// Whether it is a seed (it gets a dice button).
    pub(super) seed: bool,
    /// The full contract (for prompt shapes and file decoding).
    full_contract: TensorContract,
    /// The kind of file the input can be filled from.
    pub(super) media: Option<InputMedia>,
    /// The ids the prompt text encodes to (or why it does not).
    prompt_ids: Option<Result<Vec<i64>, String>>,
    /// The names of an integer input's values (a voice's name for its
    /// number), from the model it feeds.
    pub(super) labels: Option<Vec<String>>,
    /// The smallest and largest value the model takes, if it says.
    pub(super) range: Option<(f64, f64)>,
    /// Where the starting value came from.
    pub(super) origin: &'static str,
    /// Its editor and value.
    pub(super) widget: Widget,
    /// The value from the recipe or default (what ↺ goes back to).
    start: Widget,
    /// Changed by the user (sent to the run, remembered).
    overridden: bool,
    error: Option<String>,
}

/// The form's state for the open package and recipe.
#[derive(Default)]
pub struct InputsForm {
    loaded_for: Option<(PathBuf, Option<PathBuf>, u64)>,
    /// The recipe's inputs (recipe JSON form), read when the recipe changes.
    recipe_inputs: BTreeMap<String, Value>,
    rows: Vec<Row>,
    facts: FactsSlot,
    /// The config folder (remembered values live under it).
    pub config: Option<PathBuf>,
}

impl InputsForm {
    /// Whether the package's facts are still being read.
    pub fn reading_package(&self) -> bool {
        self.facts.loading()
    }
}

/// The single-element shape of a contract, if it has one.
fn scalar_shape(rank: u64, shape: Option<&[Dim]>) -> Option<Vec<usize>> {
    if rank == 0 {
        return Some(Vec::new());
    }
    shape?
        .iter()
        .map(|d| matches!(d, Dim::Fixed(1)).then_some(1))
        .collect()
}

fn scalar_widget(dtype: &str, value: Option<&Value>) -> Widget {
    match dtype {
        "bool" => Widget::Bool(value.and_then(Value::as_bool).unwrap_or(false)),
        d if d.starts_with("float") || d.starts_with("fp") || d.starts_with("bf") => {
            Widget::Float(value.and_then(Value::as_f64).unwrap_or(0.0))
        }
        _ => Widget::Int(value.and_then(Value::as_i64).unwrap_or(0)),
    }
}

fn literal_json(default: &LiteralValue) -> Value {
    let scalar = |s: &ScalarValue| match s {
        ScalarValue::Bool(b) => json!(b),
        ScalarValue::Int(i) => json!(i),
        ScalarValue::Float(f) => json!(f),
        ScalarValue::Str(s) => json!(s),
    };
    match default {
        LiteralValue::Scalar(s) => scalar(s),
        LiteralValue::List(items) => Value::Array(items.iter().map(scalar).collect()),
    }
}

/// The inputs of the recipe file, in the recipe JSON form (none when there
/// is no recipe or it cannot be read: the run then reports why).
fn recipe_inputs(recipe: Option<&Path>) -> BTreeMap<String, Value> {
    recipe
        .and_then(|r| std::fs::read_to_string(r).ok())
        .and_then(|t| wfstudio_runner::recipe::parse(&t).ok())
        .map(|r| {
            r.inputs
                .into_iter()
                .map(|(k, t)| (k, t.to_json()))
                .collect()
        })
        .unwrap_or_default()
}

impl Row {
    /// What is remembered of the row: a tensor in the recipe JSON form, or
    /// `{"prompt": text}`, or `{"file": path, "range": ...}`.
    fn memory(&self) -> Result<Value, String> {
        let shape = self.scalar_shape.clone().unwrap_or_default();
        let one = |v: Value| json!({"dtype": self.dtype, "shape": shape, "data": [v]});
        Ok(match &self.widget {
            Widget::Int(i) => one(json!(i)),
            Widget::Float(f) => one(json!(f)),
            Widget::Bool(b) => one(json!(b)),
            Widget::Json(text) => {
                serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?
            }
            Widget::Prompt(text) => json!({ "prompt": text }),
            Widget::File { path, range, .. } => {
                json!({ "file": path, "range": range_name(*range) })
            }
        })
    }

    /// The widget a remembered value restores (see [`Row::memory`]).
    fn restore(&self, value: &Value) -> Widget {
        if let Some(text) = value.get("prompt").and_then(Value::as_str) {
            return Widget::Prompt(text.to_string());
        }
        if let Some(path) = value.get("file").and_then(Value::as_str) {
            let range = RANGES
                .into_iter()
                .find(|r| value.get("range").and_then(Value::as_str) == Some(range_name(*r)))
                .unwrap_or(ValueRange::ZeroToOne);
            return self.file_widget(PathBuf::from(path), range);
        }
        match self.scalar_shape {
            Some(_) => scalar_widget(&self.dtype, value["data"].get(0)),
            None => Widget::Json(value.to_string()),
        }
    }

    /// A file widget for `path`, read once to say what it holds.
    pub(super) fn file_widget(&self, path: PathBuf, range: ValueRange) -> Widget {
        let summary = match self.media {
            Some(media) => crate::input_media::read_input(&path, media, &self.full_contract, range)
                .map_or_else(|_| "could not be read".into(), |read| read.summary),
            None => "this input takes no file".into(),
        };
        Widget::File {
            path,
            range,
            summary,
        }
    }

    /// The row's value as a tensor for the run, and the frames a second
    /// of the video file it reads, if so.
    fn tensor(&self, facts: &FactsSlot) -> Result<(Tensor, Option<f64>), String> {
        match &self.widget {
            Widget::Prompt(text) => {
                let tokenizer = facts.prompt_tokenizer()?;
                let ids = tokenizer.encode(text).map_err(|e| e.to_string())?;
                prompt_tensor(ids, &self.full_contract).map(|t| (t, None))
            }
            Widget::File { path, range, .. } => {
                let media = self.media.ok_or("this input takes no file")?;
                crate::input_media::read_input(path, media, &self.full_contract, *range)
                    .map(|read| (read.tensor, read.frame_rate))
                    .map_err(|e| format!("{e:#}"))
            }
            _ => Tensor::from_json(&self.memory()?)
                .map(|t| (t, None))
                .map_err(|e| e.to_string()),
        }
    }

    /// Re-encodes the prompt text for the ids shown under it.
    fn encode_prompt(&mut self, tokenizer: Option<&PackageTokenizer>) {
        self.prompt_ids = match (&self.widget, tokenizer) {
            (Widget::Prompt(text), Some(t)) if !text.is_empty() => {
                Some(t.encode(text).map_err(|e| e.to_string()))
            }
            _ => None,
        };
    }
}

/// Token ids as a prompt input: `[n]` for a rank-1 contract, `[1, n]`
/// (one row) for rank 2, in the contract's integer dtype.
fn prompt_tensor(ids: Vec<i64>, contract: &TensorContract) -> Result<Tensor, String> {
    let n = ids.len();
    let shape = match contract.rank {
        1 => vec![n],
        2 => vec![1, n],
        r => {
            return Err(format!(
                "prompt tokens fill rank 1 or 2 inputs, not rank {r}"
            ));
        }
    };
    let data = match contract.dtype.as_str() {
        "int64" => Data::I64(ids),
        "int32" => Data::I32(
            ids.into_iter()
                .map(|id| {
                    i32::try_from(id).map_err(|_| format!("token id {id} does not fit int32"))
                })
                .collect::<Result<_, _>>()?,
        ),
        other => return Err(format!("prompt tokens are integers, not {other}")),
    };
    Tensor::new(shape, data).map_err(|e| e.0)
}

impl InputsForm {
    /// Rebuilds the rows when the package, its revision or the recipe changed.
    pub fn sync(&mut self, document: &Document, path: &Path, revision: u64, recipe: Option<&Path>) {
        if self.loaded_for.as_ref().is_none_or(|(p, _, _)| p != path) {
            self.facts = FactsSlot::load(document, path);
        }
        if self.facts.poll() {
            // Rebuild the rows: prompt inputs now get their text box,
            // labelled inputs their names.
            self.loaded_for = self.loaded_for.take().map(|(p, r, _)| (p, r, u64::MAX));
        }
        let key = (path.to_path_buf(), recipe.map(Path::to_path_buf), revision);
        if self.loaded_for.as_ref() == Some(&key) {
            return;
        }
        let same_sources = self
            .loaded_for
            .as_ref()
            .is_some_and(|(p, r, _)| p == path && r.as_deref() == recipe);
        let kept: HashMap<String, Row> = if same_sources {
            // Same package and recipe, new revision: keep the user's values.
            self.rows
                .drain(..)
                .filter(|r| r.overridden)
                .map(|r| (r.name.clone(), r))
                .collect()
        } else {
            HashMap::new()
        };
        self.loaded_for = Some(key);
        // The files are read only when the package or recipe changes, not
        // on every edit of the document.
        let remembered = if same_sources {
            HashMap::new()
        } else {
            self.recipe_inputs = recipe_inputs(recipe);
            self.remembered(path)
        };
        let from_recipe = &self.recipe_inputs;
        let has_tokenizer = self.facts.tokenizer().is_some();
        let facts = &self.facts;
        let Some(wf) = document.pipeline.as_ref().map(|p| &p.workflow) else {
            self.rows.clear();
            return;
        };
        self.rows = wf
            .inputs
            .iter()
            .flatten()
            .map(|(name, input)| {
                let c = &input.contract;
                let scalar_shape = scalar_shape(c.rank, c.shape.as_deref());
                let seed = matches!(&input.role, InputRole::Runtime(r) if r.role == RuntimeInputRole::Seed)
                    || name.contains("seed");
                let start: (&'static str, Option<Value>) = match (from_recipe.get(name), &input.default) {
                    (Some(t), _) => ("recipe", Some(t.clone())),
                    (None, Some(d)) => ("default", Some(literal_json(d))),
                    (None, None) if input.is_required() => ("required", None),
                    (None, None) => ("runtime", None),
                };
                let widget = match (&scalar_shape, &start.1) {
                    (Some(_), Some(t)) if t.get("data").is_some() => {
                        scalar_widget(&c.dtype, t["data"].get(0))
                    }
                    (Some(_), value) => scalar_widget(&c.dtype, value.as_ref()),
                    (None, Some(t)) if t.get("data").is_some() => Widget::Json(t.to_string()),
                    (None, _) => Widget::Json(String::new()),
                };
                let widget = if has_tokenizer && takes_prompt_tokens(input) {
                    Widget::Prompt(String::new())
                } else {
                    widget
                };
                let mut row = Row {
                    name: name.clone(),
                    contract: wfstudio_core::contracts::describe(c),
                    dtype: c.dtype.clone(),
                    scalar_shape,
                    seed,
                    full_contract: c.clone(),
                    media: input_media(input),
                    prompt_ids: None,
                    labels: facts.values(name).and_then(|v| v.labels.clone()),
                    range: facts.values(name).and_then(|v| v.range),
                    origin: start.0,
                    start: widget.clone(),
                    widget,
                    overridden: false,
                    error: None,
                };
                if let Some(previous) = kept.get(name) {
                    row.widget = previous.widget.clone();
                    row.overridden = true;
                } else if let Some(value) = remembered.get(name) {
                    row.widget = row.restore(value);
                    row.overridden = true;
                }
                row
            })
            .collect();
        let tokenizer = self.facts.tokenizer();
        for row in &mut self.rows {
            row.encode_prompt(tokenizer);
        }
    }

    /// The user's values, as tensors for the run (over the recipe's): a
    /// picked video also sets the frame-rate input beside it (unless the
    /// user set that too).
    pub fn overrides(&self) -> Result<HashMap<String, Tensor>, String> {
        let mut values = HashMap::new();
        let mut rates = Vec::new();
        for r in self.rows.iter().filter(|r| r.overridden) {
            let (tensor, rate) = r
                .tensor(&self.facts)
                .map_err(|e| format!("input {}: {e}", r.name))?;
            values.insert(r.name.clone(), tensor);
            rates.extend(rate.map(|fps| (wfstudio_core::media::frame_rate_output(&r.name), fps)));
        }
        for (name, fps) in rates {
            if let Some(row) = self.rows.iter().find(|r| r.name == name && !r.overridden) {
                let tensor = crate::input_media::frame_rate_tensor(fps, &row.full_contract)
                    .map_err(|e| format!("input {name}: {e:#}"))?;
                values.insert(name, tensor);
            }
        }
        Ok(values)
    }

    /// Draws the rows.
    pub fn show(&mut self, ui: &mut egui::Ui) {
        let mut changed = false;
        let facts = &self.facts;
        let recipe_inputs = &self.recipe_inputs;
        egui::Grid::new("run_inputs")
            .num_columns(2)
            .striped(true)
            .show(ui, |ui| {
                for row in &mut self.rows {
                    let label = ui.label(&row.name).on_hover_text(format!(
                        "{}\nfrom: {}",
                        row.contract,
                        if row.overridden {
                            "your value"
                        } else {
                            row.origin
                        }
                    ));
                    let before = row.widget.clone();
                    ui.vertical(|ui| {
                        ui.horizontal(|ui| {
                            value_widget(ui, row, label.id, recipe_inputs.get(&row.name));
                            if let Some(media) = row.media {
                                pick_file(ui, row, media);
                            }
                            if row.overridden
                                && ui
                                    .small_button("↺")
                                    .on_hover_text("back to the recipe/default")
                                    .clicked()
                            {
                                row.widget = row.start.clone();
                                row.overridden = false;
                                row.error = None;
                                changed = true;
                            }
                        });
                        if let Widget::Prompt(_) = row.widget {
                            match &row.prompt_ids {
                                Some(Ok(ids)) => {
                                    ui.weak(format!("→ {} ids {ids:?}", ids.len()));
                                }
                                Some(Err(why)) => {
                                    ui.colored_label(ERROR_COLOR, why);
                                }
                                None => {}
                            }
                        }
                    });
                    if row.widget != before {
                        row.encode_prompt(facts.tokenizer());
                        if row.widget != row.start {
                            row.overridden = true;
                            row.error = row.tensor(facts).err();
                            changed = true;
                        }
                    }
                    ui.end_row();
                    if let Some(error) = &row.error {
                        ui.label("");
                        ui.colored_label(ERROR_COLOR, error);
                        ui.end_row();
                    }
                }
            });
        if self.facts.loading() {
            ui.weak("reading the package tokenizer and models…");
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(50));
        }
        if let Some(why) = self.facts.tokenizer_error() {
            ui.colored_label(ERROR_COLOR, why);
        }
        if changed {
            self.remember();
        }
    }

    /// Every input of the recipe and the user's values, as a recipe JSON.
    pub fn recipe_json(&self) -> Result<String, String> {
        let mut inputs = self.recipe_inputs.clone();
        for (name, tensor) in self.overrides()? {
            inputs.insert(name, tensor.to_json());
        }
        serde_json::to_string_pretty(&json!({
            "description": "saved from Workflow Studio's run panel",
            "inputs": inputs,
        }))
        .map(|t| t + "\n")
        .map_err(|e| e.to_string())
    }

    fn memory_file(&self, package: &Path) -> Option<PathBuf> {
        wfstudio_editor::autosave::document_file(self.config.as_deref(), "run-inputs", package)
    }

    fn remembered(&self, package: &Path) -> HashMap<String, Value> {
        self.memory_file(package)
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Writes the overrides of the current package (atomically; failures
    /// only lose the memory, never a run).
    fn remember(&self) {
        let Some((package, _, _)) = &self.loaded_for else {
            return;
        };
        let Some(file) = self.memory_file(package) else {
            return;
        };
        let values: BTreeMap<&str, Value> = self
            .rows
            .iter()
            .filter(|r| r.overridden)
            .filter_map(|r| Some((r.name.as_str(), r.memory().ok()?)))
            .collect();
        if let Some(dir) = file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(text) = serde_json::to_string_pretty(&values) {
            let _ = wfstudio_schema::save::write_atomic(&file, text.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{InputsForm, Widget};
    use std::path::{Path, PathBuf};
    use wfstudio_schema::{Format, Limits, parse_text};

    fn package() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/examples/tiny-denoise")
    }

    fn form(config: &Path) -> InputsForm {
        let path = package().join("inference_metadata.yaml");
        let text = std::fs::read_to_string(&path).expect("fixture");
        let document = parse_text(&text, Format::Yaml, &Limits::default())
            .expect("parses")
            .document;
        let mut form = InputsForm {
            config: Some(config.to_path_buf()),
            ..InputsForm::default()
        };
        form.sync(
            &document,
            &path,
            1,
            Some(&package().join("recipes/smiley.json")),
        );
        form
    }

    #[test]
    fn rows_start_from_the_recipe_and_overrides_are_remembered() {
        let config = std::env::temp_dir().join(format!("wfstudio-inputs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&config);
        let mut first = form(&config);
        let summary: Vec<(&str, &str, &Widget)> = first
            .rows
            .iter()
            .map(|r| (r.name.as_str(), r.origin, &r.widget))
            .collect();
        assert_eq!(summary[0], ("request.latent", "recipe", summary[0].2));
        assert!(matches!(summary[0].2, Widget::Json(t) if t.contains("\"shape\":[1,4,8,8]")));
        assert_eq!(summary[1], ("request.steps", "recipe", &Widget::Int(4)));
        assert_eq!(
            summary[2],
            ("package.continue", "recipe", &Widget::Bool(true))
        );
        assert!(first.overrides().expect("no overrides").is_empty());

        first.rows[1].widget = Widget::Int(2);
        first.rows[1].overridden = true;
        first.remember();
        let overrides = first.overrides().expect("valid");
        assert_eq!(overrides["request.steps"].shape, [1]);
        assert_eq!(overrides["request.steps"].data.get_i64(0), Some(2));
        let recipe: serde_json::Value =
            serde_json::from_str(&first.recipe_json().expect("json")).expect("recipe JSON");
        assert_eq!(
            recipe["inputs"]["request.steps"]["data"],
            serde_json::json!([2])
        );
        assert_eq!(
            recipe["inputs"]["request.latent"]["shape"],
            serde_json::json!([1, 4, 8, 8])
        );

        // A new form (a new session) for the same package remembers it.
        let second = form(&config);
        assert_eq!(second.rows[1].widget, Widget::Int(2));
        assert!(second.rows[1].overridden);

        // A bad tensor text is refused with the input named.
        let mut bad = second;
        bad.rows[0].widget = Widget::Json("{\"dtype\": \"float32\"}".into());
        bad.rows[0].overridden = true;
        assert_eq!(
            bad.overrides().expect_err("refused"),
            "input request.latent: tensor needs a `shape` list"
        );
        let _ = std::fs::remove_dir_all(&config);
    }

    fn open_form(config: &Path, file: &Path, text: &str) -> InputsForm {
        let document = parse_text(text, Format::Yaml, &Limits::default())
            .expect("parses")
            .document;
        let mut form = InputsForm {
            config: Some(config.to_path_buf()),
            ..InputsForm::default()
        };
        // The tokenizer arrives from its thread; the rows are then rebuilt.
        for _ in 0..400 {
            form.sync(&document, file, 1, None);
            if !form.facts.loading() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        form.sync(&document, file, 1, None);
        form
    }

    /// A prompt row encodes its text with the package tokenizer into a
    /// `[1, n]` tensor and is remembered as text.
    #[test]
    fn prompt_rows_encode_text_and_are_remembered_as_text() {
        let config = std::env::temp_dir().join(format!("wfstudio-prompt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&config);
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/examples/tiny-words/inference_metadata.yaml");
        let text = std::fs::read_to_string(&file).expect("fixture");
        let mut form = open_form(&config, &file, &text);
        assert_eq!(form.rows[0].name, "request.input_ids");
        assert_eq!(form.rows[0].widget, Widget::Prompt(String::new()));
        form.rows[0].widget = Widget::Prompt("Hello world".into());
        form.rows[0].overridden = true;
        form.remember();
        let overrides = form.overrides().expect("encodes");
        let ids = &overrides["request.input_ids"];
        assert_eq!(ids.shape, [1, 3]);
        assert_eq!(ids.data, wfstudio_runner::Data::I64(vec![1, 3, 4]));
        let again = open_form(&config, &file, &text);
        assert_eq!(again.rows[0].widget, Widget::Prompt("Hello world".into()));
        assert_eq!(again.rows[0].prompt_ids, Some(Ok(vec![1, 3, 4])));
        let _ = std::fs::remove_dir_all(&config);
    }

    /// An integer input bound to a model input with value labels (a voice)
    /// gets the names from the model file, read on the facts thread.
    #[test]
    fn labelled_inputs_get_the_names_from_the_model_they_feed() {
        use wfstudio_onnx::builder::{Dim, GraphBuilder};
        use wfstudio_onnx::proto::onnx::tensor_proto::DataType;
        let config = std::env::temp_dir().join(format!("wfstudio-labels-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&config);
        std::fs::create_dir_all(config.join("package")).expect("temp");
        let mut g = GraphBuilder::new("pick", "test");
        let voice = g.input("voice", DataType::INT64, &[Dim::Fixed(1)]);
        g.input_metadata(
            "voice",
            wfstudio_onnx::labels::LABELS_KEY,
            r#"["alto","bass","tenor"]"#,
        );
        g.output(&voice, "picked", DataType::INT64, &[Dim::Fixed(1)]);
        std::fs::write(config.join("package/pick.onnx"), g.to_bytes()).expect("model");
        let file = config.join("package/inference_metadata.yaml");
        let text = "schema_version: v1\npipeline:\n  workflow:\n    manifest: {capabilities: [workflow_ssa, typed_emit]}\n    inputs:\n      request.voice:\n        contract: {dtype: int64, rank: 1, shape: [1]}\n        role: {kind: opaque}\n        source: {kind: application, name: voice}\n        required: false\n        default: 1\n    outputs:\n      picked: {contract: {dtype: int64, rank: 1, shape: [1]}, role: tensor, stage: pre_adapter}\n    components:\n      pick:\n        implementation: {kind: onnx, artifact: pick.onnx}\n        ports:\n          inputs: {voice: {dtype: int64, rank: 1, shape: [1]}}\n          outputs: {picked: {dtype: int64, rank: 1, shape: [1]}}\n    steps:\n    - {kind: invoke, component: pick, inputs: {voice: request.voice}, outputs: {picked: v}}\n    - {kind: emit, value: v, output: picked, mode: replace}\n";
        let form = open_form(&config, &file, text);
        let row = &form.rows[0];
        assert_eq!(row.widget, Widget::Int(1));
        assert_eq!(
            row.labels.as_deref(),
            Some(&["alto".to_string(), "bass".into(), "tenor".into()][..])
        );
        let _ = std::fs::remove_dir_all(&config);
    }

    /// A picture input takes a picked PNG, resized to its fixed size and
    /// mapped into the chosen range; the path is remembered, not the pixels.
    #[test]
    fn picture_rows_read_the_picked_file_and_remember_its_path() {
        let config = std::env::temp_dir().join(format!("wfstudio-picture-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&config);
        std::fs::create_dir_all(&config).expect("temp");
        let png = config.join("red.png");
        image::RgbImage::from_pixel(1, 1, image::Rgb([255, 0, 0]))
            .save(&png)
            .expect("png");
        let file = config.join("package/inference_metadata.yaml");
        let text = "schema_version: v1\npipeline:\n  workflow:\n    manifest: {capabilities: [workflow_ssa]}\n    inputs:\n      request.image:\n        contract: {dtype: float32, rank: 4, shape: [1, 3, 2, 2]}\n        role: {kind: opaque}\n        source: {kind: application, name: image}\n        required: true\n    outputs: {}\n    components: {}\n    steps: []\n";
        let mut form = open_form(&config, &file, text);
        let row = &mut form.rows[0];
        assert_eq!(
            row.media,
            Some(wfstudio_runner::media_input::InputMedia::Image {
                channels_first: true
            })
        );
        row.widget = row.file_widget(png.clone(), super::ValueRange::NegativeOneToOne);
        let Widget::File { summary, .. } = &row.widget else {
            panic!("a file widget")
        };
        assert_eq!(summary, "1×1 RGB, resized to 2×2");
        row.overridden = true;
        form.remember();
        let again = open_form(&config, &file, text);
        let image = &again.overrides().expect("reads the file")["request.image"];
        assert_eq!(image.shape, [1, 3, 2, 2]);
        assert_eq!(
            image.data,
            wfstudio_runner::Data::F32([[1.0; 4], [-1.0; 4], [-1.0; 4]].concat())
        );
        let _ = std::fs::remove_dir_all(&config);
    }

    /// A video input takes a picked animated GIF, and the frame-rate
    /// input beside it takes the file's rate unless the user set it.
    #[test]
    fn a_picked_video_sets_its_frame_rate_beside_it() {
        use image::{Delay, Frame, Rgba, RgbaImage};
        use wfstudio_runner::Data;
        use wfstudio_runner::media_input::InputMedia;
        let config =
            std::env::temp_dir().join(format!("wfstudio-video-row-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&config);
        std::fs::create_dir_all(&config).expect("temp");
        let gif = config.join("two.gif");
        let mut encoder =
            image::codecs::gif::GifEncoder::new(std::fs::File::create(&gif).expect("gif"));
        for grey in [0u8, 255] {
            let picture = RgbaImage::from_pixel(4, 2, Rgba([grey, grey, grey, 255]));
            let delay = Delay::from_numer_denom_ms(250, 1);
            encoder
                .encode_frame(Frame::from_parts(picture, 0, 0, delay))
                .expect("frame");
        }
        drop(encoder);
        let file = config.join("package/inference_metadata.yaml");
        let text = "schema_version: v1\npipeline:\n  workflow:\n    manifest: {capabilities: [workflow_ssa]}\n    inputs:\n      request.clip:\n        contract: {dtype: float32, rank: 5, shape: [1, frames, 3, h, w]}\n        role: {kind: runtime, version: '1.0', role: media}\n        source: {kind: request}\n        required: true\n      request.clip_frame_rate:\n        contract: {dtype: float32, rank: 1, shape: [1]}\n        role: {kind: opaque}\n        source: {kind: application, name: clip_frame_rate}\n        required: false\n        default: 24.0\n    outputs: {}\n    components: {}\n    steps: []\n";
        let mut form = open_form(&config, &file, text);
        let row = form
            .rows
            .iter_mut()
            .find(|r| r.name == "request.clip")
            .expect("row");
        assert_eq!(row.media, Some(InputMedia::Video));
        row.widget = row.file_widget(gif.clone(), super::ValueRange::ZeroToOne);
        let Widget::File { summary, .. } = &row.widget else {
            panic!("a file widget")
        };
        assert_eq!(summary, "2 frames of 4×2 RGB, 4.000 fps");
        row.overridden = true;
        let values = form.overrides().expect("reads the file");
        assert_eq!(values["request.clip"].shape, [1, 2, 3, 2, 4]);
        assert_eq!(values["request.clip_frame_rate"].data, Data::F32(vec![4.0]));
        let rate = form
            .rows
            .iter_mut()
            .find(|r| r.name == "request.clip_frame_rate")
            .expect("rate row");
        rate.overridden = true;
        let values = form.overrides().expect("reads the file");
        assert_eq!(
            values["request.clip_frame_rate"].data,
            Data::F32(vec![24.0])
        );
        let _ = std::fs::remove_dir_all(&config);
    }
}
