//! Running a child process for a lens: own process group, capped output, group kill on timeout.
