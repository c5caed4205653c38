//! Comparing the frames a switch sent with an STF test's expectations.
//!
//! Rules of p4c's bmv2 driver: per port, frames are compared in order and
//! their number must equal the number of `expect` lines for that port; a
//! frame matches when it is at least as long as the expectation and every
//! non-`*` nibble is equal (longer frames match unless the expectation ends
//! with `$`); a bare `expect PORT` accepts any number of frames on that
//! port. Frames on a port the test names (in a `packet` or `expect` line)
//! but does not expect fail; frames on ports the test never names are only
//! seen by the bmv2 driver if it opened them, which it does not: they fail
//! only with [`CompareOptions::strict_ports`] (what the corpus's strict
//! runner checks, for ports 0..7).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::{ExpectedFrame, StfKind, StfStatement};

/// What is expected on one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortExpectation {
    /// Exactly these frames, in order.
    Frames(Vec<ExpectedFrame>),
    /// Anything (`expect PORT` without data).
    Any,
}

/// The expectations of a test.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expectations {
    /// Per port.
    pub ports: BTreeMap<u32, PortExpectation>,
    /// Ports the test names in `packet` or `expect` lines.
    pub named_ports: BTreeSet<u32>,
    /// `expect_digest` samples in order: (learn list id, sample bytes).
    pub digests: Vec<(i64, Vec<u8>)>,
}

impl Expectations {
    /// Collects the `expect`, `packet` and `expect_digest` statements.
    pub fn from_statements(statements: &[StfStatement]) -> Expectations {
        let mut e = Expectations::default();
        for s in statements {
            match &s.kind {
                StfKind::Packet { port, .. } => {
                    e.named_ports.insert(*port);
                }
                StfKind::Expect { port, frame } => {
                    e.named_ports.insert(*port);
                    match frame {
                        // A bare expect wins over any frame expectations.
                        None => {
                            e.ports.insert(*port, PortExpectation::Any);
                        }
                        Some(f) => match e
                            .ports
                            .entry(*port)
                            .or_insert(PortExpectation::Frames(Vec::new()))
                        {
                            PortExpectation::Frames(v) => v.push(f.clone()),
                            PortExpectation::Any => {}
                        },
                    }
                }
                StfKind::ExpectDigest { list_id, data } => e.digests.push((*list_id, data.clone())),
                _ => {}
            }
        }
        e
    }
}

/// Comparison options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompareOptions {
    /// Also fail on frames sent to ports the test never names.
    pub strict_ports: bool,
}

/// How one frame differs from its expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameDiff {
    /// The frame is shorter than the expectation.
    TooShort {
        /// Frame length in bytes.
        got_len: usize,
        /// Expected length in nibbles.
        expected_nibbles: usize,
    },
    /// The expectation ends with `$` and the frame is longer.
    TooLong {
        /// Frame length in bytes.
        got_len: usize,
        /// Expected length in nibbles.
        expected_nibbles: usize,
    },
    /// Some bytes differ: (offset, expected byte with `*`, actual byte).
    Bytes(Vec<(usize, String, u8)>),
}

/// A failed check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// An expected frame was not sent.
    Missing {
        /// Port.
        port: u32,
        /// Index among the port's expected frames.
        index: usize,
        /// The expectation.
        expected: ExpectedFrame,
    },
    /// A frame was sent that is not expected.
    Extra {
        /// Port.
        port: u32,
        /// Index among the port's frames.
        index: usize,
        /// The frame.
        frame: Vec<u8>,
        /// The port is not named by the test (only with `strict_ports`).
        unnamed_port: bool,
    },
    /// A frame does not match its expectation.
    Differs {
        /// Port.
        port: u32,
        /// Index among the port's frames.
        index: usize,
        /// The expectation.
        expected: ExpectedFrame,
        /// The frame.
        actual: Vec<u8>,
        /// How it differs.
        diff: FrameDiff,
    },
}

/// A digest mismatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestProblem {
    /// Index in the sequence of samples.
    pub index: usize,
    /// Expected (list id, sample), if any.
    pub expected: Option<(i64, Vec<u8>)>,
    /// Received (list id, sample), if any.
    pub actual: Option<(i64, Vec<u8>)>,
}

/// Result of [`compare`]: passed when there is no problem; Display gives a
/// readable report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompareReport {
    /// Frame problems, by port then index.
    pub problems: Vec<Problem>,
    /// Digest problems.
    pub digest_problems: Vec<DigestProblem>,
}

impl CompareReport {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.problems.is_empty() && self.digest_problems.is_empty()
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

impl fmt::Display for FrameDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameDiff::TooShort {
                got_len,
                expected_nibbles,
            } => write!(
                f,
                "frame too short: {got_len} bytes, expected at least {} bytes",
                expected_nibbles.div_ceil(2)
            ),
            FrameDiff::TooLong {
                got_len,
                expected_nibbles,
            } => write!(
                f,
                "frame too long: {got_len} bytes, expected exactly {} bytes",
                expected_nibbles.div_ceil(2)
            ),
            FrameDiff::Bytes(bytes) => {
                write!(f, "{} byte(s) differ:", bytes.len())?;
                for (i, (off, exp, got)) in bytes.iter().enumerate() {
                    if i == 8 {
                        write!(f, " ...")?;
                        break;
                    }
                    write!(f, " [{off}] expected {exp} got {got:02X};")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Missing {
                port,
                index,
                expected,
            } => {
                write!(
                    f,
                    "port {port}: frame {index} missing\n  expected: {expected}"
                )
            }
            Problem::Extra {
                port,
                index,
                frame,
                unnamed_port,
            } => {
                let why = if *unnamed_port {
                    " (port not named by the test)"
                } else {
                    ""
                };
                write!(
                    f,
                    "port {port}: unexpected frame {index}{why}\n  received: {}",
                    hex(frame)
                )
            }
            Problem::Differs {
                port,
                index,
                expected,
                actual,
                diff,
            } => write!(
                f,
                "port {port}: frame {index} differs: {diff}\n  expected: {expected}\n  received: {}",
                hex(actual)
            ),
        }
    }
}

impl fmt::Display for CompareReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.passed() {
            return f.write_str("all frames as expected");
        }
        let mut first = true;
        for p in &self.problems {
            if !first {
                writeln!(f)?;
            }
            first = false;
            write!(f, "{p}")?;
        }
        for d in &self.digest_problems {
            if !first {
                writeln!(f)?;
            }
            first = false;
            let show = |x: &Option<(i64, Vec<u8>)>| match x {
                Some((id, data)) => format!("list {id} {}", hex(data)),
                None => "nothing".to_string(),
            };
            write!(
                f,
                "digest {}: expected {}, received {}",
                d.index,
                show(&d.expected),
                show(&d.actual)
            )?;
        }
        Ok(())
    }
}

/// How `frame` differs from `expected` (None when it matches).
pub(crate) fn frame_diff(expected: &ExpectedFrame, frame: &[u8]) -> Option<FrameDiff> {
    let n = expected.nibbles.len();
    if frame.len() * 2 < n {
        return Some(FrameDiff::TooShort {
            got_len: frame.len(),
            expected_nibbles: n,
        });
    }
    let mut bytes = Vec::new();
    for (off, chunk) in expected.nibbles.chunks(2).enumerate() {
        let got = frame[off];
        let hi_ok = chunk[0].is_none_or(|d| d == got >> 4);
        let lo_ok = chunk
            .get(1)
            .is_none_or(|n| n.is_none_or(|d| d == got & 0xf));
        if !(hi_ok && lo_ok) {
            let show = |n: Option<u8>| {
                n.map_or('*', |d| {
                    char::from_digit(u32::from(d), 16)
                        .unwrap_or('?')
                        .to_ascii_uppercase()
                })
            };
            let mut exp = String::new();
            exp.push(show(chunk[0]));
            if let Some(lo) = chunk.get(1) {
                exp.push(show(*lo));
            }
            bytes.push((off, exp, got));
        }
    }
    if !bytes.is_empty() {
        return Some(FrameDiff::Bytes(bytes));
    }
    if expected.exact_length && frame.len() * 2 > n {
        return Some(FrameDiff::TooLong {
            got_len: frame.len(),
            expected_nibbles: n,
        });
    }
    None
}

/// Compares the frames sent per port with the expectations.
pub fn compare(
    expected: &Expectations,
    actual: &BTreeMap<u32, Vec<Vec<u8>>>,
    options: CompareOptions,
) -> CompareReport {
    let mut report = CompareReport::default();
    let ports: BTreeSet<u32> = expected
        .ports
        .keys()
        .chain(actual.keys())
        .copied()
        .collect();
    let empty = Vec::new();
    for port in ports {
        let frames = actual.get(&port).unwrap_or(&empty);
        let wanted = match expected.ports.get(&port) {
            Some(PortExpectation::Any) => continue,
            Some(PortExpectation::Frames(v)) => v.as_slice(),
            None => {
                let named = expected.named_ports.contains(&port);
                if named || options.strict_ports {
                    for (index, frame) in frames.iter().enumerate() {
                        report.problems.push(Problem::Extra {
                            port,
                            index,
                            frame: frame.clone(),
                            unnamed_port: !named,
                        });
                    }
                }
                continue;
            }
        };
        for (index, exp) in wanted.iter().enumerate() {
            match frames.get(index) {
                None => report.problems.push(Problem::Missing {
                    port,
                    index,
                    expected: exp.clone(),
                }),
                Some(frame) => {
                    if let Some(diff) = frame_diff(exp, frame) {
                        report.problems.push(Problem::Differs {
                            port,
                            index,
                            expected: exp.clone(),
                            actual: frame.clone(),
                            diff,
                        });
                    }
                }
            }
        }
        for (index, frame) in frames.iter().enumerate().skip(wanted.len()) {
            report.problems.push(Problem::Extra {
                port,
                index,
                frame: frame.clone(),
                unnamed_port: false,
            });
        }
    }
    report
}

/// Compares the digest samples received, in order, with `expect_digest`
/// lines: same number, same list ids, same bytes.
pub fn compare_digests(
    expected: &[(i64, Vec<u8>)],
    actual: &[(i64, Vec<u8>)],
) -> Vec<DigestProblem> {
    (0..expected.len().max(actual.len()))
        .filter_map(|i| {
            let e = expected.get(i);
            let a = actual.get(i);
            (e != a).then(|| DigestProblem {
                index: i,
                expected: e.cloned(),
                actual: a.cloned(),
            })
        })
        .collect()
}
