//! The `harness` binary: everything lives in the library's `cli` module.

fn main() -> std::process::ExitCode {
    harness::cli::main()
}
