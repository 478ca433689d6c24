//! The `command` lens: any executable, request JSON on stdin, lens response on stdout.
