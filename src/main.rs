fn main() -> std::process::ExitCode {
    kafkascope::cli::main()
}
