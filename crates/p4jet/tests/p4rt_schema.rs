//! p4jet's P4Runtime schema (`crates/p4jet-p4rt/proto`, written from the
//! specification) against the generated code of the PyPI `p4runtime` package that
//! clients use: every message, field number, label, type, oneof, enum value and RPC
//! must be the same (`tests/p4rt/compare_schema.py`). The package's generated code
//! needs `PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python` with a recent protobuf.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::{p4rt_script, python_venv, run_with_input, skipped, tmpdir};

#[test]
fn schema_matches_the_official_generated_code() {
    let bin = match python_venv(
        "p4rt-schema-venv",
        &["p4runtime", "googleapis-common-protos"],
        "import os; os.environ['PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION']='python'; import p4.v1.p4runtime_pb2",
    ) {
        Ok(b) => b,
        Err(why) => {
            let msg = format!("SKIPPED: the PyPI p4runtime package is not available: {why}");
            assert!(std::env::var_os("P4JET_REQUIRE_P4RT").is_none(), "{msg}");
            return skipped(&msg);
        }
    };
    let dir = tmpdir("p4rt-schema");
    let fds = dir.join("p4jet.fds");
    std::fs::write(&fds, p4jet_p4rt::proto::FILE_DESCRIPTOR_SET).unwrap();
    let mut cmd = Command::new(bin.join("python3"));
    cmd.arg(p4rt_script("compare_schema.py"))
        .arg(&fds)
        .env("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python");
    let (out, err, st) = run_with_input(&mut cmd, "");
    eprintln!("{out}{err}");
    assert!(
        st.success(),
        "the schema differs from the official one:\n{out}{err}"
    );
    assert!(out.contains(" passed, 0 failed"));
}
