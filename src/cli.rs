//! The command line: `reviewbot review`, exit codes.

use std::process::ExitCode;

pub fn main() -> ExitCode {
    ExitCode::SUCCESS
}
