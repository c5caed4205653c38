//! A bounded slice of the differential fuzzer: every corpus program under the three
//! engines (reference, interp, jit) on random frames, mutations of its STF packets and
//! random table entries, compared frame by frame and in counters, registers and
//! digests. `p4jet fuzz --packets 10000000` is the long run.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

#[test]
fn the_three_engines_agree_on_random_traffic() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    for seed in ["1", "2"] {
        let out = Command::new(env!("CARGO_BIN_EXE_p4jet"))
            .args(["fuzz", "--packets", "40000", "--seed", seed, "--corpus"])
            .arg(&corpus)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "seed {seed}:\n{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("no difference"), "{stdout}");
        // every corpus program ran
        assert!(stdout.matches("\nok ").count() + 1 >= 22, "{stdout}");
    }
}
