//! ComfyUI's official workflow templates as the README's set-up installs
//! them (the pinned `comfyui-workflow-templates-json` wheel's templates,
//! unpacked into a folder): the catalogue its `index.json` lists, by
//! category, and what importing each one gives.

use super::lower::{Cause, Target};
use super::{NodeDefs, import};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The largest template file read (the official ones are under 1 MB).
const MAX_TEMPLATE_BYTES: u64 = 64 << 20;

/// One template of the catalogue.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    /// File stem: the workflow is `<name>.json` in the folder.
    pub name: String,
    /// Title shown to users.
    pub title: String,
    /// What it makes, in the catalogue's words.
    pub description: String,
    /// The models it names.
    pub models: Vec<String>,
}

impl Template {
    /// Whether it runs on a provider's service (ComfyUI's `api_*`
    /// templates).
    pub fn is_cloud(&self) -> bool {
        self.name.starts_with("api_")
    }
}

/// One category and its templates, in the catalogue's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Category {
    /// Its title (Image, Video, ...).
    pub title: String,
    /// Its templates, in the catalogue's order.
    pub templates: Vec<Template>,
}

/// The installed templates.
#[derive(Clone, Debug, PartialEq)]
pub struct Catalogue {
    /// The folder holding `index.json` and the workflows.
    pub dir: PathBuf,
    /// The categories, in the catalogue's order.
    pub categories: Vec<Category>,
}

/// Why the catalogue cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TemplatesError {
    /// No installed templates were found.
    #[error(
        "the ComfyUI templates are not installed (run scripts/templates.sh fetch, or point WFSTUDIO_TEMPLATES at their folder)"
    )]
    NotInstalled,
    /// The index could not be read.
    #[error("reading {path}: {why}")]
    Unreadable { path: PathBuf, why: String },
}

/// What importing a template gives.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// It lowers into a workflow document.
    Lowers,
    /// It is refused: why, and the refusal's sentence.
    Refused { cause: Cause, sentence: String },
    /// The file could not be read as a ComfyUI graph.
    Unreadable(String),
}

impl Catalogue {
    /// The installed templates' folder: `$WFSTUDIO_TEMPLATES`, else
    /// `.cache/comfyui-templates` in the working folder or in a folder
    /// above the program (a checkout's), where set-up puts them.
    pub fn find() -> Option<PathBuf> {
        let installed = |dir: PathBuf| dir.join("index.json").is_file().then_some(dir);
        if let Some(dir) = std::env::var_os("WFSTUDIO_TEMPLATES").filter(|v| !v.is_empty()) {
            return installed(PathBuf::from(dir));
        }
        let here = std::env::current_dir().ok();
        let exe = std::env::current_exe().ok();
        let roots = here
            .iter()
            .chain(exe.iter())
            .flat_map(|p| p.ancestors())
            .map(|p| p.join(".cache/comfyui-templates"));
        roots.into_iter().find_map(installed)
    }

    /// Reads the catalogue of the templates in `dir`.
    pub fn read(dir: &Path) -> Result<Catalogue, TemplatesError> {
        let path = dir.join("index.json");
        let unreadable = |why: String| TemplatesError::Unreadable {
            path: path.clone(),
            why,
        };
        let text = std::fs::read_to_string(&path).map_err(|e| unreadable(e.to_string()))?;
        let index: Value =
            serde_json::from_str(&text).map_err(|e| unreadable(format!("not JSON: {e}")))?;
        let list = index
            .as_array()
            .ok_or_else(|| unreadable("not a list of categories".into()))?;
        let text_of = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_string();
        let categories = list
            .iter()
            .map(|category| Category {
                title: text_of(category, "title"),
                templates: category["templates"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|t| t["name"].as_str().is_some_and(safe_name))
                    .map(|t| Template {
                        name: text_of(t, "name"),
                        title: text_of(t, "title"),
                        description: text_of(t, "description"),
                        models: t["models"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|m| m.as_str().map(str::to_string))
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        Ok(Catalogue {
            dir: dir.to_path_buf(),
            categories,
        })
    }

    /// The workflow file of `template`.
    pub fn file(&self, template: &Template) -> PathBuf {
        self.dir.join(format!("{}.json", template.name))
    }

    /// What importing `template` gives, with the bundled node definitions.
    pub fn outcome(&self, template: &Template, defs: &NodeDefs) -> Outcome {
        let file = self.file(template);
        match std::fs::metadata(&file) {
            Ok(m) if m.len() > MAX_TEMPLATE_BYTES => {
                return Outcome::Unreadable(format!(
                    "it is {} bytes; templates over {MAX_TEMPLATE_BYTES} bytes are not read",
                    m.len()
                ));
            }
            Err(e) => return Outcome::Unreadable(e.to_string()),
            Ok(_) => {}
        }
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) => return Outcome::Unreadable(e.to_string()),
        };
        match import(&bytes, Some(defs), &Target::default()) {
            Err(e) => Outcome::Unreadable(e.to_string()),
            Ok(imported) => match imported.outcome {
                Ok(_) => Outcome::Lowers,
                Err(refusals) => match refusals.first() {
                    Some(r) => Outcome::Refused {
                        cause: r.cause(),
                        sentence: r.sentence(),
                    },
                    None => Outcome::Unreadable("refused without a reason".into()),
                },
            },
        }
    }
}

/// A name that stays a file in the folder (no separators, no `..`).
fn safe_name(name: &str) -> bool {
    !name.is_empty() && name != ".." && !name.contains(['/', '\\']) && !name.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("wfstudio-templates-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn the_index_lists_templates_by_category_and_each_has_an_outcome() {
        let dir = folder("index");
        let index = serde_json::json!([
            {"title": "Image", "templates": [
                {"name": "cloud", "title": "Cloud", "description": "d", "models": ["Nano Banana"], "mediaType": "image"},
                {"name": "../escape", "title": "Escape"},
                {"name": "missing", "title": "Missing"}
            ]}
        ]);
        std::fs::write(dir.join("index.json"), index.to_string()).expect("index");
        let graph = serde_json::json!({
            "1": {"class_type": "LoadImage", "inputs": {"image": "a.png"}},
            "2": {"class_type": "GeminiImage2Node", "inputs": {"images": ["1", 0]}},
            "3": {"class_type": "SaveImage", "inputs": {"images": ["2", 0]}}
        });
        std::fs::write(dir.join("cloud.json"), graph.to_string()).expect("graph");
        let catalogue = Catalogue::read(&dir).expect("read");
        let names: Vec<&str> = catalogue.categories[0]
            .templates
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(
            names,
            ["cloud", "missing"],
            "a name leaving the folder is dropped"
        );
        let defs = NodeDefs::builtin();
        let templates = &catalogue.categories[0].templates;
        match catalogue.outcome(&templates[0], &defs) {
            Outcome::Refused { cause, sentence } => {
                assert_eq!(cause, Cause::Cloud("Google Gemini"));
                assert!(sentence.starts_with("node 2 (GeminiImage2Node) is a cloud node"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            catalogue.outcome(&templates[1], &defs),
            Outcome::Unreadable(_)
        ));
        std::fs::write(dir.join("index.json"), "{").expect("broken index");
        assert!(matches!(
            Catalogue::read(&dir),
            Err(TemplatesError::Unreadable { .. })
        ));
    }
}
