//! `help`: the command list (the same commands as simple_switch_CLI, laid
//! out by Python's `cmd` module rules) and one usage line per command, from the
//! command table ([`super::commands`]).

use crate::py;

/// The help text of a command (None if it is not a command; Some(None) if
/// it is an undocumented one).
pub(super) fn doc(name: &str) -> Option<Option<String>> {
    super::commands::find(name).map(|c| {
        c.doc.map(|d| match c.replaced_by {
            Some(s) => format!("[DEPRECATED!] {d}\nUse '{s}' instead"),
            None => d.to_string(),
        })
    })
}

fn print_topics(out: &mut String, header: &str, cmds: &[&str]) {
    if cmds.is_empty() {
        return;
    }
    out.push_str(header);
    out.push('\n');
    out.push_str(&"=".repeat(header.len()));
    out.push('\n');
    out.push_str(&py::columnize(cmds, 79));
    out.push('\n');
}

/// `help [command]`.
pub(super) fn help(out: &mut String, arg: &str) {
    if !arg.is_empty() {
        match doc(arg) {
            Some(Some(d)) => {
                out.push_str(&d);
                out.push('\n');
            }
            _ => {
                out.push_str(&format!("*** No help on {arg}\n"));
            }
        }
        return;
    }
    let names = super::commands::names();
    let documented: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| matches!(doc(n), Some(Some(_))))
        .collect();
    let undocumented: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| matches!(doc(n), Some(None)))
        .collect();
    out.push('\n');
    print_topics(out, "Documented commands (type help <topic>):", &documented);
    print_topics(out, "Undocumented commands:", &undocumented);
}
