//! The programs campaigns run: every `NAME/NAME.json` of a corpus directory with its
//! `NAME.commands` and the frames of its STF tests.

use std::path::Path;

use p4jet_diff::generate::stf_seeds;
use p4jet_diff::model::ProgramInfo;

/// A corpus program.
#[derive(Debug, Clone)]
pub struct CorpusProgram {
    /// Name.
    pub name: String,
    /// The bmv2 JSON text.
    pub json: String,
    /// Its simple_switch_CLI commands (may be empty).
    pub commands: Vec<String>,
    /// Frames of its STF tests.
    pub seeds: Vec<Vec<u8>>,
    /// What the generators need.
    pub info: ProgramInfo,
    /// Its P4Info in protobuf text format (`NAME.p4info.txtpb`), if it has one.
    pub p4info: Option<String>,
}

/// Loads every program of `dir` (sorted by name); `only` restricts by name.
pub fn load(dir: &Path, only: &[String]) -> Result<Vec<CorpusProgram>, String> {
    let mut out = vec![];
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut dirs: Vec<_> = rd.flatten().map(|d| d.path()).collect();
    dirs.sort();
    for d in dirs {
        let Some(name) = d.file_name().map(|n| n.to_string_lossy().to_string()) else {
            continue;
        };
        if !only.is_empty() && !only.contains(&name) {
            continue;
        }
        let Ok(json) = std::fs::read_to_string(d.join(format!("{name}.json"))) else {
            continue;
        };
        let commands = std::fs::read_to_string(d.join(format!("{name}.commands")))
            .map(|t| {
                t.lines()
                    .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
                    .filter(|l| !l.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let parsed = p4jet_json::parse(&json).map_err(|e| format!("{name}: {e}"))?;
        let info = ProgramInfo::new(&parsed);
        let p4info = std::fs::read_to_string(d.join(format!("{name}.p4info.txtpb"))).ok();
        out.push(CorpusProgram {
            name,
            json,
            commands,
            seeds: stf_seeds(&d.join("tests")),
            info,
            p4info,
        });
    }
    if out.is_empty() {
        return Err(format!("no program in {}", dir.display()));
    }
    Ok(out)
}
