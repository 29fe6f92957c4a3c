#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    kafkascope::cli::main()
}

/// In the browser there is no command line: the page's address says what to open.
#[cfg(target_arch = "wasm32")]
fn main() {
    kafkascope::web::main()
}
