//! keel-server: `keel-server [/path/keel.conf] [--name value ...]`, the same
//! command line as redis-server.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-v" || a == "--version") {
        println!(
            "keel v={} (implements Redis {})",
            keel::KEEL_VERSION,
            keel::REDIS_VERSION
        );
        return ExitCode::SUCCESS;
    }
    if let Some(code) = keel::persistence::check::run(&args) {
        return ExitCode::from(code as u8);
    }
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("Usage: keel-server [/path/to/keel.conf] [--option value ...]\n       keel-server --port 7777 --threads 4\n       keel-server --check-aof <file.aof|file.manifest> [--fix]\n       keel-server --check-rdb <file.rdb>\n\nOptions are redis.conf directives; see docs/compatibility.md.");
        return ExitCode::SUCCESS;
    }
    let config = match keel::config::Config::from_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("\n*** FATAL CONFIG FILE ERROR ***\n{e}");
            return ExitCode::FAILURE;
        }
    };
    if config.settings().daemonize {
        // As Redis's daemonize(): into the background, standard streams
        // to /dev/null; before any thread is started, so forking is safe.
        // SAFETY: no other thread exists yet.
        if unsafe { libc::daemon(1, 0) } != 0 {
            eprintln!(
                "keel-server: can't daemonize: {}",
                std::io::Error::last_os_error()
            );
            return ExitCode::FAILURE;
        }
    }
    init_logging(&config);
    match keel::server::run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("keel-server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(config: &keel::config::Config) {
    use keel::config::LogLevel;
    let level = match config.settings().loglevel {
        LogLevel::Debug => "debug",
        LogLevel::Verbose | LogLevel::Notice => "info",
        LogLevel::Warning => "warn",
        LogLevel::Nothing => "off",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    if let Some(logfile) = &config.settings().logfile {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(logfile)
        {
            Ok(f) => builder
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(f))
                .init(),
            Err(e) => {
                eprintln!("Can't open the log file {}: {e}", logfile.display());
                builder.init();
            }
        }
    } else {
        builder.with_writer(std::io::stdout).init();
    }
}
