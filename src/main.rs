fn main() -> std::process::ExitCode {
    reviewbot::cli::main()
}
