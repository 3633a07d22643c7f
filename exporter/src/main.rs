use anyhow::Context;
use reveal_exporter::{cli, metrics_doc, runner::Runner, server, web};
use std::sync::Arc;

fn main() -> anyhow::Result<()> {
    let cli = match cli::parse_from(std::env::args_os()) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    if cli.flags.print_metrics {
        print!("{}", metrics_doc::markdown());
        return Ok(());
    }
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&cli.flags.log_level))
        .with_writer(std::io::stderr)
        .init();
    if let (Some(sel), Some(path)) = (&cli.settings.selection, &cli.flags.selection) {
        if let Some(warning) = sel.unknown_warning() {
            tracing::warn!(file = %path.display(), "{warning}");
        }
    }
    let runner = Arc::new(Runner::new(&cli.collectors, &cli.settings).map_err(anyhow::Error::msg)?);
    if cli.flags.once {
        print!(
            "{}",
            runner.render_as(reveal_exporter::runner::Format::Text)
        );
        return Ok(());
    }
    let addr =
        server::parse_listen_address(&cli.flags.listen_address).map_err(anyhow::Error::msg)?;
    // A web configuration that cannot be used is a reason not to start, never to serve with
    // less protection than it asks for.
    let web = match &cli.flags.web_config_file {
        Some(p) => Some(Arc::new(web::Web::load(p).map_err(anyhow::Error::msg)?)),
        None => None,
    };
    // One thread serves HTTP and renders a lone scrape inline (`Server::render`): a scrape
    // handed to another thread costs two cross-thread wake-ups, which on an idle VM were
    // about 15 % of a scrape's CPU at 100 ms scraping. Blocking threads render when many
    // scrapers are busy.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("listening on {addr}"))?;
        let bound = listener.local_addr()?;
        tracing::info!(collectors = ?runner.names(), "listening on {bound}");
        let srv = Arc::new(server::Server {
            runner,
            telemetry_path: cli.flags.telemetry_path.clone(),
            limit: Arc::new(tokio::sync::Semaphore::new(cli.flags.max_requests.max(1))),
            web: web.clone(),
            max_connections: cli.flags.max_connections,
            rendering: Default::default(),
            last_render: Default::default(),
        });
        if let Some(w) = web {
            tokio::spawn(reload_on_sighup(w));
        }
        tokio::select! {
            r = srv.serve(listener) => r.context("serving HTTP"),
            _ = shutdown() => { tracing::info!("shutting down"); Ok(()) }
        }
    })
}

/// Reads the web configuration again on each SIGHUP (it is also read again whenever a file
/// of it changes).
async fn reload_on_sighup(web: Arc<web::Web>) {
    let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
        tracing::warn!(
            "cannot listen for SIGHUP; the web configuration is still read again when it changes"
        );
        return;
    };
    while hup.recv().await.is_some() {
        if web.reload().is_ok() {
            tracing::info!("SIGHUP: web configuration read again");
        }
    }
}

async fn shutdown() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("the runtime enables signals (enable_all), so SIGTERM can be registered");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
