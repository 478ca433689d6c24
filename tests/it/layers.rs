//! One way down: the layers `src/lib.rs` states, bottom to top, are the ones the code keeps.
//! Every `crate::<module>` a production file of `src/` names must sit in a layer below its own
//! module's, so no import circle of any length can form between the crate's modules. Test code
//! (`tests.rs`, `mod tests { … }` at a file's end, modules declared under `#[cfg(test)]`) is
//! left out: it may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The layers as `lib.rs` states them: the line after `Layers, bottom to top` holds them,
/// `<` between layers and `,` between the modules of one.
fn stated_layers() -> BTreeMap<String, usize> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let mut lines = lib
        .lines()
        .skip_while(|l| !l.contains("Layers, bottom to top"));
    lines.next().expect("lib.rs states its layers");
    let mut stated = String::new();
    for line in lines.map_while(|l| l.strip_prefix("//!")) {
        if line.trim().is_empty() {
            break;
        }
        stated.push_str(line);
        stated.push(' ');
    }
    let mut layers = BTreeMap::new();
    for (i, layer) in stated.split('<').enumerate() {
        for name in layer.split(',') {
            let name = name.trim().trim_matches('`').trim_end_matches('.');
            assert!(!name.is_empty(), "an empty name in {stated:?}");
            assert!(
                layers.insert(name.to_owned(), i).is_none(),
                "{name} is stated twice"
            );
        }
    }
    layers
}

/// Every `.rs` file under `dir`, with its path.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `file` is test code: a `tests.rs`, a file under a `tests/` folder, or a module its
/// parent declares under `#[cfg(test)]` (and so everything below it).
fn is_test(file: &Path) -> bool {
    let root = src();
    let rel = file.strip_prefix(&root).expect("under src");
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.iter().any(|p| p == "tests") {
        return true;
    }
    // Each module on the way down, declared in its parent's file.
    for depth in 1..parts.len() + 1 {
        let name = &parts[depth - 1];
        if name == "mod" {
            continue;
        }
        let parent_dir = root.join(parts[..depth - 1].join("/"));
        let declaring = match depth {
            1 => root.join("lib.rs"),
            _ => {
                let own = parent_dir.join("mod.rs");
                if own.exists() {
                    own
                } else {
                    parent_dir.with_extension("rs")
                }
            }
        };
        let Ok(text) = std::fs::read_to_string(&declaring) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            let declares = line
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub(super) ")
                .trim_start_matches("pub ")
                .strip_prefix("mod ")
                .is_some_and(|rest| rest.trim_end_matches(';') == name);
            if declares && i > 0 && lines[i - 1] == "#[cfg(test)]" {
                return true;
            }
        }
    }
    false
}

/// The production text of a file: comments and a trailing `mod tests { … }` left out.
fn production(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every top-level module each top-level module names: `crate::<module>`.
fn imports() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let root = src();
    let mut all = Vec::new();
    files(&root, &mut all);
    let modules: BTreeSet<String> = all
        .iter()
        .filter_map(|f| f.strip_prefix(&root).ok())
        .filter_map(|rel| rel.iter().next())
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in all.iter().filter(|f| !is_test(f)) {
        let rel = file.strip_prefix(&root).expect("under src");
        let own = rel.iter().next().expect("a part");
        let own = own.to_string_lossy().trim_end_matches(".rs").to_owned();
        if !modules.contains(&own) {
            continue;
        }
        let text = production(&std::fs::read_to_string(file).expect("read"));
        for (at, _) in text.match_indices("crate::") {
            let name: String = text[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name != own && modules.contains(&name) {
                edges
                    .entry(own.clone())
                    .or_default()
                    .entry(name)
                    .or_default()
                    .insert(rel.display().to_string());
            }
        }
    }
    edges
}

#[test]
fn every_import_goes_down_the_layers_lib_rs_states() {
    let layers = stated_layers();
    let edges = imports();
    let root = src();
    let mut all = Vec::new();
    files(&root, &mut all);
    let mut unstated: BTreeSet<String> = BTreeSet::new();
    // Test support (a module declared under `#[cfg(test)]`) may reach anywhere: it has no layer.
    for file in all.iter().filter(|f| !is_test(f)) {
        let first = file.strip_prefix(&root).expect("under src").iter().next();
        let name = first.expect("a part").to_string_lossy();
        let name = name.trim_end_matches(".rs");
        if name != "lib" && name != "main" && !layers.contains_key(name) {
            unstated.insert(name.to_owned());
        }
    }
    assert!(
        unstated.is_empty(),
        "modules lib.rs does not place: {unstated:?}"
    );
    let mut up = Vec::new();
    for (from, tos) in &edges {
        for (to, wheres) in tos {
            if layers[to] >= layers[from] {
                up.push(format!("{from} -> {to} ({wheres:?})"));
            }
        }
    }
    assert!(
        up.is_empty(),
        "imports that do not go down the stated layers:\n{}",
        up.join("\n")
    );
}

/// The check sees what it must: an import upward in a file is found, test code is not.
#[test]
fn the_layer_check_reads_imports_and_leaves_test_code_out() {
    let edges = imports();
    // `flow` reads GitHub: a real edge.
    assert!(edges["flow"].contains_key("github"), "{:?}", edges["flow"]);
    assert!(
        production("use crate::a;\n// crate::b\n#[cfg(test)]\nmod tests {\nuse crate::c;\n}")
            .contains("crate::a")
    );
    assert!(!production("x // crate::b").contains("crate::b"));
    assert!(!production("#[cfg(test)]\nmod tests {\nuse crate::c;\n}").contains("crate::c"));
    assert!(is_test(&src().join("testing/fake_model/mod.rs")));
    assert!(is_test(&src().join("testing/mod.rs")));
    assert!(!is_test(&src().join("lens/api.rs")));
}
