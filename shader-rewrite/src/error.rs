//! Errors: every failure names where and why, so the layer can log a precise reason.
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewriteError {
    /// The input is not a well-formed SPIR-V module (truncated, bad header, bad word count...).
    Malformed { word_offset: usize, reason: String },
    /// The module is well-formed but uses something this rewriter cannot lower for the target.
    Unsupported { instruction: String, reason: String },
}

impl RewriteError {
    pub fn malformed(word_offset: usize, reason: impl Into<String>) -> Self {
        RewriteError::Malformed { word_offset, reason: reason.into() }
    }
    pub fn unsupported(instruction: impl Into<String>, reason: impl Into<String>) -> Self {
        RewriteError::Unsupported { instruction: instruction.into(), reason: reason.into() }
    }
}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteError::Malformed { word_offset, reason } => {
                write!(f, "malformed SPIR-V at word {word_offset}: {reason}")
            }
            RewriteError::Unsupported { instruction, reason } => {
                write!(f, "cannot lower `{instruction}`: {reason}")
            }
        }
    }
}

impl std::error::Error for RewriteError {}
