//! The P4Info of every corpus program joins its JSON by name.
//!
//! The P4Info text files are read with a small protobuf text-format reader (nested
//! blocks and scalar fields: enough for `p4info.txtpb`).
#![allow(clippy::unwrap_used)]

use p4jet_runtime::Schema;
use p4jet_runtime::p4info::{P4InfoField, P4InfoKind, P4InfoObject, join};

/// A text-format message: fields in order, each a scalar or a nested message.
#[derive(Debug, Default)]
struct Msg(Vec<(String, Val)>);

#[derive(Debug)]
enum Val {
    Scalar(String),
    Msg(Msg),
}

impl Msg {
    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find_map(|(n, v)| match v {
            Val::Scalar(s) if n == k => Some(s.as_str()),
            _ => None,
        })
    }

    fn num(&self, k: &str) -> u64 {
        self.get(k).and_then(|s| s.parse().ok()).unwrap_or(0)
    }

    fn msgs<'a>(&'a self, k: &'a str) -> impl Iterator<Item = &'a Msg> + 'a {
        self.0.iter().filter_map(move |(n, v)| match v {
            Val::Msg(m) if n == k => Some(m),
            _ => None,
        })
    }

    fn msg<'a>(&'a self, k: &'a str) -> Option<&'a Msg> {
        self.msgs(k).next()
    }
}

fn tokens(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '#' => {
                for c in it.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '{' | '}' | ':' => out.push(c.to_string()),
            '"' => {
                let mut s = String::from("\"");
                while let Some(c) = it.next() {
                    if c == '\\' {
                        if let Some(n) = it.next() {
                            s.push(n);
                        }
                    } else if c == '"' {
                        break;
                    } else {
                        s.push(c);
                    }
                }
                out.push(s);
            }
            c if c.is_whitespace() => {}
            c => {
                let mut s = c.to_string();
                while let Some(&n) = it.peek() {
                    if n.is_whitespace() || "{}:\"#".contains(n) {
                        break;
                    }
                    s.push(n);
                    it.next();
                }
                out.push(s);
            }
        }
    }
    out
}

fn parse(toks: &[String], at: &mut usize) -> Msg {
    let mut m = Msg::default();
    while *at < toks.len() {
        let name = toks[*at].clone();
        *at += 1;
        if name == "}" {
            break;
        }
        if toks.get(*at).map(String::as_str) == Some(":") {
            *at += 1;
        }
        if toks.get(*at).map(String::as_str) == Some("{") {
            *at += 1;
            m.0.push((name, Val::Msg(parse(toks, at))));
        } else {
            let v = toks[*at].trim_start_matches('"').to_string();
            *at += 1;
            m.0.push((name, Val::Scalar(v)));
        }
    }
    m
}

fn objects(p4info: &Msg) -> Vec<P4InfoObject> {
    let kinds = [
        ("tables", P4InfoKind::Table, "match_fields"),
        ("actions", P4InfoKind::Action, "params"),
        ("action_profiles", P4InfoKind::ActionProfile, ""),
        ("counters", P4InfoKind::Counter, ""),
        ("direct_counters", P4InfoKind::DirectCounter, ""),
        ("meters", P4InfoKind::Meter, ""),
        ("direct_meters", P4InfoKind::DirectMeter, ""),
        ("registers", P4InfoKind::Register, ""),
        ("digests", P4InfoKind::Digest, ""),
        ("value_sets", P4InfoKind::ValueSet, ""),
    ];
    let mut out = vec![];
    for (section, kind, fields) in kinds {
        for o in p4info.msgs(section) {
            let pre = o.msg("preamble").unwrap();
            let mut obj = P4InfoObject::new(kind, pre.num("id") as u32, pre.get("name").unwrap());
            obj.alias = pre.get("alias").unwrap_or_default().to_string();
            obj.size = o.num("size");
            if !fields.is_empty() {
                obj.fields = o
                    .msgs(fields)
                    .map(|f| P4InfoField {
                        id: f.num("id") as u32,
                        name: f.get("name").unwrap().to_string(),
                        bitwidth: f.num("bitwidth") as u32,
                    })
                    .collect();
            }
            if kind == P4InfoKind::Register {
                obj.bitwidth = o
                    .msg("type_spec")
                    .and_then(|t| t.msg("bitstring"))
                    .and_then(|b| b.msg("bit"))
                    .map_or(0, |b| b.num("bitwidth") as u32);
            }
            out.push(obj);
        }
    }
    out
}

fn corpus_pairs() -> Vec<(String, String, String)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus");
    let mut out = vec![];
    let mut dirs: Vec<_> = std::fs::read_dir(root).unwrap().flatten().collect();
    dirs.sort_by_key(|d| d.path());
    for d in dirs {
        let p = d.path();
        if !p.is_dir() {
            continue;
        }
        let mut files: Vec<_> = std::fs::read_dir(&p).unwrap().flatten().collect();
        files.sort_by_key(|f| f.path());
        for f in files {
            let fp = f.path();
            let name = fp.file_name().unwrap().to_string_lossy().to_string();
            if let Some(stem) = name.strip_suffix(".p4info.txtpb") {
                let json = p.join(format!("{stem}.json"));
                if json.exists() {
                    out.push((
                        stem.to_string(),
                        std::fs::read_to_string(&json).unwrap(),
                        std::fs::read_to_string(&fp).unwrap(),
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn every_corpus_p4info_joins_its_json() {
    let pairs = corpus_pairs();
    assert!(pairs.len() >= 20, "corpus not found");
    for (name, json, txt) in pairs {
        let schema = Schema::from_json(&json).unwrap();
        let toks = tokens(&txt);
        let p4info = parse(&toks, &mut 0);
        let objs = objects(&p4info);
        let j = join(&schema, &objs).unwrap_or_else(|e| panic!("{name}: {e}"));
        for o in &objs {
            match o.kind {
                P4InfoKind::Table => {
                    let t = j.table(o.id).unwrap();
                    assert_eq!(j.table_p4info_id(t), Some(o.id));
                    for (pos, f) in o.fields.iter().enumerate() {
                        assert_eq!(j.key_field(t, f.id), Some(pos), "{name}: {}", o.name);
                    }
                }
                P4InfoKind::Action => assert!(!j.actions(o.id).is_empty()),
                _ => {}
            }
        }
    }
}

#[test]
fn p4rt_switch_objects() {
    let (_, json, txt) = corpus_pairs()
        .into_iter()
        .find(|(n, _, _)| n == "p4rt_switch")
        .unwrap();
    let schema = Schema::from_json(&json).unwrap();
    let objs = objects(&parse(&tokens(&txt), &mut 0));
    let j = join(&schema, &objs).unwrap();
    let id = |kind, name: &str| {
        objs.iter()
            .find(|o| o.kind == kind && o.name == name)
            .unwrap()
            .id
    };
    let dmac = j.table(id(P4InfoKind::Table, "IngressImpl.dmac")).unwrap();
    assert_eq!(schema.table(dmac).unwrap().name, "IngressImpl.dmac");
    // NoAction: two JSON actions, one P4Info action; each table gets its own copy
    let noaction = id(P4InfoKind::Action, "NoAction");
    assert_eq!(j.actions(noaction).len(), 2);
    let smac = j.table(id(P4InfoKind::Table, "IngressImpl.smac")).unwrap();
    let a = j.table_action(&schema, smac, noaction).unwrap();
    assert!(schema.table(smac).unwrap().actions.contains(&a));
    let route = schema.table_by_name("IngressImpl.route").unwrap();
    let sel = j
        .profile(id(P4InfoKind::ActionProfile, "IngressImpl.route_selector"))
        .unwrap();
    assert_eq!(schema.table(route).unwrap().kind.profile(), Some(sel));
    assert!(
        j.counter(id(P4InfoKind::DirectCounter, "IngressImpl.acl_counter"))
            .is_some()
    );
    assert!(j.digest(id(P4InfoKind::Digest, "learn_t")).is_some());
    assert!(
        j.value_set(id(P4InfoKind::ValueSet, "ParserImpl.punt_ports"))
            .is_some()
    );
    assert!(
        j.register(id(P4InfoKind::Register, "IngressImpl.port_packets"))
            .is_some()
    );
}

#[test]
fn a_mismatched_p4info_is_refused_with_every_problem_named() {
    let (_, json, txt) = corpus_pairs()
        .into_iter()
        .find(|(n, _, _)| n == "p4rt_switch")
        .unwrap();
    let schema = Schema::from_json(&json).unwrap();
    let mut objs = objects(&parse(&tokens(&txt), &mut 0));
    // a table the JSON does not have, and a wrong match field width
    objs.push(P4InfoObject::new(P4InfoKind::Table, 99, "IngressImpl.nope"));
    let dmac = objs
        .iter_mut()
        .find(|o| o.name == "IngressImpl.dmac")
        .unwrap();
    dmac.fields[0].bitwidth = 32;
    let e = join(&schema, &objs).unwrap_err();
    assert_eq!(e.kind, p4jet_runtime::ErrorKind::InvalidArgument);
    assert!(e.message.contains("IngressImpl.nope"), "{e}");
    assert!(
        e.message.contains("32 bits in the P4Info, 48 in the JSON"),
        "{e}"
    );
}

#[test]
fn prefixes_that_differ_still_join() {
    let (_, json, txt) = corpus_pairs()
        .into_iter()
        .find(|(n, _, _)| n == "p4rt_switch")
        .unwrap();
    let schema = Schema::from_json(&json).unwrap();
    let mut objs = objects(&parse(&tokens(&txt), &mut 0));
    for o in &mut objs {
        if let Some(rest) = o.name.strip_prefix("IngressImpl.") {
            o.name = format!("MyIngress.{rest}");
        }
    }
    let j = join(&schema, &objs).unwrap();
    let t = objs
        .iter()
        .find(|o| o.name == "MyIngress.dmac")
        .map(|o| j.table(o.id).unwrap())
        .unwrap();
    assert_eq!(schema.table(t).unwrap().name, "IngressImpl.dmac");
}
