//! Where in the input an error is. `RewriteError` says it in words (a word offset, or the
//! instruction as `%12 = OpLoad`, `OpStore %7`, `opcode 4 %9`); this finds that instruction in
//! the input and reports its index, first word and opcode, only when exactly one matches. The C
//! API (`spvpf_result_error_location`) and the `spirv-polyfill` CLI both report errors this way.
use std::fmt;

use rspirv::grammar::{OperandKind, INSTRUCTION_TABLE};
use crate::module::{opcode_name, HEADER_WORDS};
use crate::RewriteError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// 0 = the first instruction after the header.
    pub instruction_index: u32,
    pub word_offset: u32,
    pub opcode: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "instruction {} at word {}, {}", self.instruction_index, self.word_offset, opcode_name(self.opcode))
    }
}

/// One instruction of the input: where it is, and its words (cut at the end of the module).
struct Found<'a> {
    at: Location,
    words: &'a [u32],
}

/// The instructions after the header, up to and including the first damaged one.
fn instructions(words: &[u32]) -> impl Iterator<Item = Found<'_>> {
    let mut at = HEADER_WORDS;
    let mut index = 0u32;
    std::iter::from_fn(move || {
        let first = *words.get(at)?;
        let count = (first >> 16) as usize;
        let found = Found {
            at: Location { instruction_index: index, word_offset: at as u32, opcode: first & 0xffff },
            words: &words[at..(at + count.max(1)).min(words.len())],
        };
        at = if count == 0 { words.len() } else { at + count };
        index += 1;
        Some(found)
    })
}

impl Found<'_> {
    /// (result id, first operand after the result type and id), from the grammar.
    fn ids(&self) -> (Option<u32>, Option<u32>) {
        let Some(grammar) = INSTRUCTION_TABLE.iter().find(|i| i.opcode as u32 == self.at.opcode) else { return (None, None) };
        let has = |k: OperandKind| grammar.operands.iter().any(|o| o.kind == k) as usize;
        let (ty, id) = (has(OperandKind::IdResultType), has(OperandKind::IdResult));
        let result = (id == 1).then(|| self.words.get(1 + ty).copied()).flatten();
        (result, self.words.get(1 + ty + id).copied())
    }
}

/// The instruction an `Unsupported` error names: `[%ID = ](OpName|opcode N)[ %FIRST]`.
struct Named {
    result: Option<u32>,
    opcode: String,
    first: Option<u32>,
}

fn parse(text: &str) -> Option<Named> {
    let (result, rest) = match text.strip_prefix('%').and_then(|t| t.split_once(" = ")) {
        Some((id, rest)) => (Some(id.parse().ok()?), rest),
        None => (None, text),
    };
    let (opcode, tail) = match rest.strip_prefix("opcode ") {
        Some(n) => {
            let (n, tail) = n.split_once(' ').unwrap_or((n, ""));
            (opcode_name(n.parse().ok()?), tail)
        }
        None => rest.split_once(' ').map(|(o, t)| (o.to_string(), t)).unwrap_or((rest.to_string(), "")),
    };
    let first = tail.strip_prefix('%').and_then(|f| f.parse().ok());
    Some(Named { result, opcode, first })
}

/// The instruction of `words` (the module `e` came from) that `e` is about, if exactly one
/// instruction matches.
pub fn locate(words: &[u32], e: &RewriteError) -> Option<Location> {
    let mut matches: Vec<Location> = match e {
        RewriteError::Malformed { word_offset, .. } => {
            instructions(words).filter(|f| f.at.word_offset as usize == *word_offset).map(|f| f.at).collect()
        }
        RewriteError::Unsupported { instruction, .. } => {
            let named = parse(instruction)?;
            if named.result.is_none() && named.first.is_none() {
                return None;
            }
            instructions(words)
                .filter(|f| opcode_name(f.at.opcode) == named.opcode)
                .filter(|f| {
                    let (result, first) = f.ids();
                    match named.result {
                        Some(id) => result == Some(id),
                        None => result.is_none() && first == named.first,
                    }
                })
                .map(|f| f.at)
                .take(2)
                .collect()
        }
    };
    (matches.len() == 1).then(|| matches.remove(0))
}

/// `e` as text, followed by its location in `words` where [`locate`] finds one:
/// `... (instruction 12 at word 345, OpLoad)`.
pub fn describe(words: &[u32], e: &RewriteError) -> (String, Option<Location>) {
    let location = locate(words, e);
    let text = match &location {
        Some(l) => format!("{e} ({l})"),
        None => e.to_string(),
    };
    (text, location)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(body: &[u32]) -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0000, 0, 100, 0];
        w.extend_from_slice(body);
        w
    }

    #[test]
    fn finds_the_named_instruction() {
        // OpCapability Shader; %5 = OpTypeInt 32 0; OpStore %7 %8
        let w = module(&[0x0002_0011, 1, 0x0004_0015, 5, 32, 0, 0x0003_003e, 7, 8]);
        let at = |text: &str| locate(&w, &RewriteError::unsupported(text, "why"));
        assert_eq!(at("%5 = OpTypeInt"), Some(Location { instruction_index: 1, word_offset: 7, opcode: 21 }));
        assert_eq!(at("%5 = opcode 21 %32"), at("%5 = OpTypeInt"));
        assert_eq!(at("OpStore %7"), Some(Location { instruction_index: 2, word_offset: 11, opcode: 62 }));
        assert_eq!(at("%6 = OpTypeInt"), None);
        assert_eq!(at("module"), None);
        assert_eq!(locate(&w, &RewriteError::malformed(7, "bad")), at("%5 = OpTypeInt"));
        assert_eq!(locate(&w, &RewriteError::malformed(0, "bad header")), None);
        let (text, at) = describe(&w, &RewriteError::unsupported("OpStore %7", "why"));
        assert!(text.ends_with(" (instruction 2 at word 11, OpStore)"), "{text}");
        assert_eq!(at.map(|l| l.opcode), Some(62));
    }
}
